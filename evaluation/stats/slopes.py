"""Dose-response slopes of metrics under perturbations (APPLS Table 7), with Holm-Bonferroni.

For each (metric, perturbation) the scores of the perturbed texts are regressed on the perturbation's
magnitude by ordinary least squares, as APPLS does; the slope is reported as the estimated change of the
score from 0% to 100% perturbation, with the two-sided p-value of the slope's t-test.  The p-values of the
whole table are adjusted together with Holm's step-down method.  (The observations of one text at several
magnitudes are not independent, so the p-values are, like the paper's, optimistic; the slope is not.)

``expected`` is how an ideal *quality* metric moves ("up", "down", or "none" for perturbations that
should leave it unchanged, such as synonym swaps); for metrics where lower is better (FKGL) the expected
sign of the score's slope is the opposite.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from evaluation.stats.multiple_testing import holm

Expected = Literal["up", "down", "none"]
ALPHA = 0.05


@dataclass(frozen=True)
class Observation:
    """One metric score of one perturbed text at one magnitude (percent)."""

    metric: str
    perturbation: str
    criterion: str
    expected: Expected
    magnitude: float
    score: float
    higher_is_better: bool = True


@dataclass(frozen=True)
class Slope:
    """Least-squares fit of score on magnitude: change at 100%, intercept, p-value, observations."""

    slope: float
    intercept: float
    p: float
    n: int


@dataclass(frozen=True)
class SlopeRow:
    metric: str
    perturbation: str
    criterion: str
    slope: float
    intercept: float
    p: float
    p_holm: float
    n: int
    expected_direction: Expected
    as_expected: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_slope(magnitudes: Sequence[float], scores: Sequence[float]) -> Slope:
    """OLS of ``scores`` on ``magnitudes / 100``; the slope is the change at 100%.

    Degenerate fits (fewer than three points, one magnitude only, constant scores) give slope 0 (or the
    exact slope when the scores are constant along a line) and p = 1.
    """
    x = np.asarray(magnitudes, dtype=float) / 100.0
    y = np.asarray(scores, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"{len(x)} magnitudes but {len(y)} scores")
    n = len(x)
    if n < 3 or float(np.ptp(x)) == 0.0:
        return Slope(0.0, float(y.mean()) if n else math.nan, 1.0, n)
    if float(np.ptp(y)) == 0.0:
        return Slope(0.0, float(y[0]), 1.0, n)
    from scipy import stats  # scipy (~1 s) only when a slope is fitted

    fit = stats.linregress(x, y)
    p = float(fit.pvalue) if math.isfinite(float(fit.pvalue)) else 0.0
    return Slope(float(fit.slope), float(fit.intercept), p, n)


def score_direction(expected: Expected, higher_is_better: bool) -> Expected:
    """The sign the score's slope should have for a quality direction ``expected``."""
    if expected == "none" or higher_is_better:
        return expected
    return "down" if expected == "up" else "up"


def as_expected(direction: Expected, slope: float, p_holm: float, alpha: float = ALPHA) -> bool:
    """Significant in the expected direction, or (for "none") not significant."""
    if direction == "none":
        return p_holm >= alpha
    return p_holm < alpha and (slope > 0 if direction == "up" else slope < 0)


def slope_table(observations: Iterable[Observation], *, alpha: float = ALPHA) -> list[SlopeRow]:
    """One row per (metric, perturbation), in first-seen order, p-values Holm-adjusted over the table."""
    groups: dict[tuple[str, str], list[Observation]] = defaultdict(list)
    for obs in observations:
        groups[(obs.metric, obs.perturbation)].append(obs)
    fits = {key: fit_slope([o.magnitude for o in rows], [o.score for o in rows]) for key, rows in groups.items()}
    keys = list(groups)
    adjusted = dict(zip(keys, holm([fits[k].p for k in keys]), strict=True))
    out = []
    for key in keys:
        first, fit = groups[key][0], fits[key]
        direction = score_direction(first.expected, first.higher_is_better)
        out.append(
            SlopeRow(
                metric=key[0],
                perturbation=key[1],
                criterion=first.criterion,
                slope=fit.slope,
                intercept=fit.intercept,
                p=fit.p,
                p_holm=adjusted[key],
                n=fit.n,
                expected_direction=direction,
                as_expected=as_expected(direction, fit.slope, adjusted[key], alpha),
            )
        )
    return out


SENSITIVITY_CRITERIA = ("informativeness", "coherence", "faithfulness", "simplification", "lens")
"""The order criteria are listed in a sensitivity summary ("lens": LENS Figure 2's Copy and Split)."""


def sensitivity_summary(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One metric's slope rows -> per criterion how many perturbations it responds to as expected.

    Args:
        rows: ``{"perturbation", "criterion", "as_expected", ...}`` per perturbation (one metric's).

    Returns:
        ``{"criteria": {criterion: {"as_expected": k, "total": n}}, "text": "informativeness 3/3, ..."}``,
        criteria in :data:`SENSITIVITY_CRITERIA` order (others after, alphabetically).
    """
    counts: dict[str, list[int]] = {}
    for row in rows:
        cell = counts.setdefault(str(row["criterion"]), [0, 0])
        cell[0] += int(bool(row["as_expected"]))
        cell[1] += 1
    known = [c for c in SENSITIVITY_CRITERIA if c in counts]
    order = known + sorted(c for c in counts if c not in SENSITIVITY_CRITERIA)
    criteria = {c: {"as_expected": counts[c][0], "total": counts[c][1]} for c in order}
    text = ", ".join(f"{c} {v['as_expected']}/{v['total']}" for c, v in criteria.items())
    return {"criteria": criteria, "text": text}
