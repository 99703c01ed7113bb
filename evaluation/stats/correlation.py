"""Agreement between an automatic metric and human ratings.

The main statistic is the LENS paper's "Kendall tau-like" coefficient (§4.1),
the WMT relative-ranking variant computed from direct-assessment ratings:

* only pairs of outputs of the *same source* that share a *category*
  (split / deletion / paraphrase) are compared;
* every rater who rated both outputs votes the sign of their raw-rating
  difference, or 0 when ``|diff| <= threshold`` (``TAU_THRESHOLD``, 5 points on the 0-100 scale);
* a pair counts only when a strict majority of the raters of that pair votes the
  same non-zero sign (``unanimous=True`` requires every rater of the pair to vote
  that sign, the paper's literal wording);
* a counted pair is concordant when the metric orders it the same way, and
  discordant otherwise; metric ties count as discordant (as at WMT);
* ``tau = (C - D) / (C + D)`` per category and over all within-category pairs.

Pearson and Spearman correlations between the metric and the mean z-score per
output complement it; every figure has a 95% bootstrap interval over sources.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.rules import TAU_THRESHOLD
from evaluation.stats.bootstrap import (
    FloatArray,
    clean_float,
    group_index,
    percentile_ci,
    resample_weights,
)

CATEGORIES: tuple[str, ...] = ("deletion", "paraphrase", "split")
ALL = "all"
TAU_KEYS: tuple[str, ...] = (ALL, *CATEGORIES)
# TAU_THRESHOLD (annotation.rules, imported above): the tau-like's default rating gap.


@dataclass(frozen=True)
class TauItem:
    """One rated output with its automatic metric score."""

    source: str
    output: str
    category: str  # "split" | "deletion" | "paraphrase"
    metric: float  # automatic metric score
    ratings: Mapping[str, float]  # rater id -> raw 0-100 rating


@dataclass(frozen=True)
class TauCell:
    """Tau-like coefficient for one key (a category or ``"all"``)."""

    value: float | None  # None when no pair was counted
    concordant: int
    discordant: int

    @property
    def pairs(self) -> int:
        return self.concordant + self.discordant


@dataclass(frozen=True)
class TauResult:
    """Tau-like coefficients per key: ``"all"``, ``"deletion"``, ``"paraphrase"``, ``"split"``.

    ``result["split"].value`` and ``result.value["split"]`` are equivalent.
    Categories other than the three known ones, if any, get their own keys.
    """

    cells: Mapping[str, TauCell] = field(default_factory=dict)

    def __getitem__(self, key: str) -> TauCell:
        return self.cells[key]

    def keys(self) -> list[str]:
        return list(self.cells)

    @property
    def value(self) -> dict[str, float | None]:
        return {key: cell.value for key, cell in self.cells.items()}

    @property
    def concordant(self) -> dict[str, int]:
        return {key: cell.concordant for key, cell in self.cells.items()}

    @property
    def discordant(self) -> dict[str, int]:
        return {key: cell.discordant for key, cell in self.cells.items()}

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {
            key: {"value": cell.value, "concordant": cell.concordant, "discordant": cell.discordant}
            for key, cell in self.cells.items()
        }


def _tau(concordant: float, discordant: float) -> float | None:
    total = concordant + discordant
    return None if total == 0 else (concordant - discordant) / total


def _human_order(a: Mapping[str, float], b: Mapping[str, float], threshold: float, unanimous: bool) -> int:
    """+1 when the raters prefer ``a``, -1 when they prefer ``b``, 0 when they do not agree enough."""
    shared = [rater for rater in a if rater in b]
    if not shared:
        return 0
    up = down = 0
    for rater in shared:
        diff = a[rater] - b[rater]
        if diff > threshold:
            up += 1
        elif diff < -threshold:
            down += 1
    needed = len(shared) if unanimous else len(shared) // 2 + 1
    if up >= needed:
        return 1
    if down >= needed:
        return -1
    return 0


def _count_pairs(
    items: Sequence[TauItem], *, threshold: float, unanimous: bool
) -> tuple[list[str], list[str], FloatArray, FloatArray]:
    """Concordant and discordant counts per source and key.

    Returns:
        Source ids, keys, and two ``(n_sources, n_keys)`` count matrices.
    """
    by_source: dict[str, list[TauItem]] = defaultdict(list)
    for item in items:
        by_source[item.source].append(item)
    extra = sorted({item.category for item in items} - set(CATEGORIES))
    keys = [*TAU_KEYS, *extra]
    column = {key: j for j, key in enumerate(keys)}
    sources = list(by_source)
    conc = np.zeros((len(sources), len(keys)), dtype=np.float64)
    disc = np.zeros_like(conc)
    for s, source in enumerate(sources):
        group = by_source[source]
        for i, first in enumerate(group):
            for second in group[i + 1 :]:
                if first.category != second.category:
                    continue
                human = _human_order(first.ratings, second.ratings, threshold, unanimous)
                if human == 0:
                    continue
                metric_diff = first.metric - second.metric
                target = conc if metric_diff * human > 0 else disc
                target[s, column[first.category]] += 1
                target[s, column[ALL]] += 1
    return sources, keys, conc, disc


def kendall_tau_like(
    items: Sequence[TauItem], *, threshold: float = TAU_THRESHOLD, unanimous: bool = False
) -> TauResult:
    """LENS/WMT Kendall tau-like correlation between a metric and raw human ratings.

    Args:
        items: One entry per rated output.
        threshold: Rating differences of at most this many points are ties.
        unanimous: Require every rater of a pair (instead of a strict majority) to agree.

    Returns:
        Coefficient and pair counts per category and over all within-category pairs.
    """
    _, keys, conc, disc = _count_pairs(items, threshold=threshold, unanimous=unanimous)
    c_tot = conc.sum(axis=0)
    d_tot = disc.sum(axis=0)
    cells = {
        key: TauCell(
            value=_tau(float(c_tot[j]), float(d_tot[j])), concordant=int(c_tot[j]), discordant=int(d_tot[j])
        )
        for j, key in enumerate(keys)
    }
    return TauResult(cells=cells)


def kendall_tau_like_ci(
    items: Sequence[TauItem],
    *,
    threshold: float = TAU_THRESHOLD,
    n_boot: int = 1000,
    seed: int = 0,
    unanimous: bool = False,
) -> dict[str, dict[str, Any]]:
    """:func:`kendall_tau_like` with a 95% percentile bootstrap interval over sources.

    Returns:
        ``{key: {"value", "ci_low", "ci_high", "concordant", "discordant"}}``.
    """
    sources, keys, conc, disc = _count_pairs(items, threshold=threshold, unanimous=unanimous)
    weights = resample_weights(len(sources), n_boot=n_boot, seed=seed)
    boot_c = weights @ conc
    boot_d = weights @ disc
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_tau = (boot_c - boot_d) / (boot_c + boot_d)
    out: dict[str, dict[str, Any]] = {}
    for j, key in enumerate(keys):
        c, d = float(conc[:, j].sum()), float(disc[:, j].sum())
        low, high = percentile_ci(boot_tau[:, j])
        out[key] = {
            "value": _tau(c, d),
            "ci_low": low,
            "ci_high": high,
            "concordant": int(c),
            "discordant": int(d),
        }
    return out


def pearson(x: Sequence[float] | FloatArray, y: Sequence[float] | FloatArray) -> float | None:
    """Pearson's r of two equally long series, or ``None`` where it is undefined.

    Undefined: fewer than two pairs, a value that is not finite (NaN, infinity), or a series without spread.
    The result is clipped to [-1, 1] (rounding can push it a hair beyond). Callers that need more pairs to
    trust the figure (quality control asks for three shared outputs) check that first.

    Raises:
        ValueError: The two series differ in length.
    """
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"pearson of {a.size} against {b.size} values")
    if a.size < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    dx, dy = a - a.mean(), b - b.mean()
    denominator = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    if not denominator > 0 or not math.isfinite(denominator):
        return None
    return float(np.clip((dx * dy).sum() / denominator, -1.0, 1.0))


# --- Pearson / Spearman between metric and mean z-score per output -------------


def _weighted_pearson(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    """Pearson correlation for each row of the weight matrix ``w`` (shape ``(b, n)``).

    Integer weights make it the Pearson correlation of the sample in which item
    ``i`` is repeated ``w[b, i]`` times.
    """
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (w * x).sum(axis=1) / total
        my = (w * y).sum(axis=1) / total
        dx = x[None, :] - mx[:, None] if x.ndim == 1 else x - mx[:, None]
        dy = y[None, :] - my[:, None] if y.ndim == 1 else y - my[:, None]
        cov = (w * dx * dy).sum(axis=1)
        vx = (w * dx * dx).sum(axis=1)
        vy = (w * dy * dy).sum(axis=1)
        r: FloatArray = cov / np.sqrt(vx * vy)
    # Zero spread gives 0/0; rounding can push |r| a hair above 1.
    return np.clip(r, -1.0, 1.0)


def _weighted_ranks(x: FloatArray, w: FloatArray) -> FloatArray:
    """Average (mid) ranks of ``x`` in each weighted resample (rows of ``w``)."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    tie_group = np.cumsum(np.r_[True, sorted_x[1:] != sorted_x[:-1]]) - 1
    cum = np.cumsum(w[:, order], axis=1)
    ends = np.r_[starts[1:], sorted_x.size] - 1
    upto = cum[:, ends]  # weight of values <= each distinct value
    below = np.concatenate([np.zeros((w.shape[0], 1)), upto[:, :-1]], axis=1)
    tied = upto - below
    rank_per_group = below + (tied + 1.0) / 2.0
    ranks = np.empty_like(w)
    ranks[:, order] = rank_per_group[:, tie_group]
    return ranks


def metric_correlation_ci(
    sources: Sequence[str],
    metric: Sequence[float],
    human: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Pearson and Spearman correlation with 95% bootstrap intervals over sources.

    Args:
        sources: Source id of each output (the resampling unit).
        metric: Metric score of each output.
        human: Human score of each output (typically the mean z-score).

    Returns:
        ``{"n": int, "pearson": {"value", "ci_low", "ci_high"}, "spearman": {...}}``;
        values are ``None`` when undefined (fewer than two outputs, no spread).
    """
    if not len(sources) == len(metric) == len(human):
        raise ValueError("sources, metric and human must have the same length")
    x = np.asarray(metric, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    kept_sources = [s for s, k in zip(sources, keep, strict=True) if k]
    out: dict[str, Any] = {"n": int(x.size)}
    if x.size == 0:
        empty = {"value": None, "ci_low": None, "ci_high": None}
        return {**out, "pearson": dict(empty), "spearman": dict(empty)}
    _, codes = group_index(kept_sources)
    n_groups = int(codes.max()) + 1
    full = np.ones((1, x.size), dtype=np.float64)
    boot = resample_weights(n_groups, n_boot=n_boot, seed=seed)[:, codes]
    for name, stat in (("pearson", _pearson_rows), ("spearman", _spearman_rows)):
        value = clean_float(stat(x, y, full)[0])
        low, high = percentile_ci(stat(x, y, boot)) if n_boot > 0 else (None, None)
        out[name] = {"value": value, "ci_low": low, "ci_high": high}
    return out


def _pearson_rows(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    return _weighted_pearson(x, y, w)


def _spearman_rows(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    return _weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)
