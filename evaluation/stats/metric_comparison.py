"""Comparing automatic metrics with humans and with each other (pure, numpy).

* :class:`TauPairs`: the pairs a Kendall tau-like counts and the humans' order of each, found once per
  set of ratings; then any number of metrics is scored against them with array operations (the same
  numbers as :func:`evaluation.stats.correlation.kendall_tau_like`, without re-reading the ratings).
* :func:`aspect_correlations`: Pearson and Spearman correlation of one metric with each human aspect
  (fluency, meaning, simplicity...), each with a 95% bootstrap interval over sources.
* :func:`paired_tau_test` and :func:`paired_pearson_test`: the paired bootstrap of Deutsch et al.
  (2021) for the difference between two metrics' correlations with the same humans: sources are
  resampled with replacement, *the same resample* is scored for both metrics, and the distribution
  of the difference gives its 95% interval and a two-sided p-value (twice the smaller share of
  resamples on either side of zero).  This is the resampling behind the LENS paper's Figure 3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from annotation.rules import TAU_THRESHOLD
from evaluation.stats.bootstrap import FloatArray, clean_float, group_index, percentile_ci, resample_weights
from evaluation.stats.correlation import (
    ALL,
    CATEGORIES,
    TauItem,
    _human_order,
    _tau,
    _weighted_pearson,
    metric_correlation_ci,
)


@dataclass(frozen=True)
class TauPairs:
    """The within-source, within-category pairs that the humans order, found once.

    Built by :meth:`from_items` with the rule of :func:`~evaluation.stats.correlation.kendall_tau_like`;
    ``first``/``second`` index the items, ``human`` is +1 when the raters prefer ``first``.
    """

    sources: list[str]
    keys: list[str]
    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    human: FloatArray
    source_code: npt.NDArray[np.int64]
    key_code: npt.NDArray[np.int64]
    n_items: int

    @classmethod
    def from_items(
        cls, items: Sequence[TauItem], *, threshold: float = TAU_THRESHOLD, unanimous: bool = False
    ) -> TauPairs:
        groups: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            groups.setdefault(item.source, []).append(index)
        extra = sorted({item.category for item in items} - set(CATEGORIES))
        keys = [ALL, *CATEGORIES, *extra]
        column = {key: j for j, key in enumerate(keys)}
        first: list[int] = []
        second: list[int] = []
        human: list[float] = []
        source_code: list[int] = []
        key_code: list[int] = []
        for s, members in enumerate(groups.values()):
            for a_pos, a in enumerate(members):
                for b in members[a_pos + 1 :]:
                    if items[a].category != items[b].category:
                        continue
                    order = _human_order(items[a].ratings, items[b].ratings, threshold, unanimous)
                    if order == 0:
                        continue
                    first.append(a)
                    second.append(b)
                    human.append(float(order))
                    source_code.append(s)
                    key_code.append(column[items[a].category])
        return cls(
            sources=list(groups),
            keys=keys,
            first=np.asarray(first, dtype=np.int64),
            second=np.asarray(second, dtype=np.int64),
            human=np.asarray(human, dtype=np.float64),
            source_code=np.asarray(source_code, dtype=np.int64),
            key_code=np.asarray(key_code, dtype=np.int64),
            n_items=len(items),
        )

    def counts(self, metric: Sequence[float]) -> tuple[FloatArray, FloatArray]:
        """Concordant and discordant counts, ``(n_sources, n_keys)`` each (``"all"`` in column 0)."""
        if len(metric) != self.n_items:
            raise ValueError(f"expected {self.n_items} metric scores, got {len(metric)}")
        values = np.asarray(metric, dtype=np.float64)
        concordant = (values[self.first] - values[self.second]) * self.human > 0  # metric ties: discordant
        shape = (len(self.sources), len(self.keys))
        conc = np.zeros(shape, dtype=np.float64)
        disc = np.zeros(shape, dtype=np.float64)
        for target, mask in ((conc, concordant), (disc, ~concordant)):
            np.add.at(target, (self.source_code[mask], self.key_code[mask]), 1.0)
            np.add.at(target, (self.source_code[mask], np.zeros(int(mask.sum()), dtype=np.int64)), 1.0)
        return conc, disc

    def tau(self, metric: Sequence[float], *, n_boot: int = 0, seed: int = 0) -> dict[str, dict[str, Any]]:
        """``{key: {"value", "concordant", "discordant"[, "ci_low", "ci_high"]}}`` for one metric."""
        conc, disc = self.counts(metric)
        boot = None
        if n_boot > 0:
            weights = resample_weights(len(self.sources), n_boot=n_boot, seed=seed)
            c_boot, d_boot = weights @ conc, weights @ disc
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = (c_boot - d_boot) / (c_boot + d_boot)
        out: dict[str, dict[str, Any]] = {}
        for j, key in enumerate(self.keys):
            c, d = float(conc[:, j].sum()), float(disc[:, j].sum())
            cell: dict[str, Any] = {"value": _tau(c, d), "concordant": int(c), "discordant": int(d)}
            if boot is not None:
                cell["ci_low"], cell["ci_high"] = percentile_ci(boot[:, j])
            out[key] = cell
        return out


def aspect_correlations(
    sources: Sequence[str],
    metric: Sequence[float],
    aspects: Mapping[str, Sequence[float]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Pearson and Spearman per aspect, each ``{"n", "pearson": {...}, "spearman": {...}}`` with CIs."""
    return {
        aspect: metric_correlation_ci(sources, metric, human, n_boot=n_boot, seed=seed)
        for aspect, human in aspects.items()
    }


@dataclass(frozen=True)
class PairedTest:
    """Difference ``a - b`` between two metrics' correlations, with its bootstrap interval and p-value."""

    a: float | None
    b: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_boot: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "difference": self.difference,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_value": self.p_value,
            "n_boot": self.n_boot,
        }


def _two_sided_p(diffs: FloatArray) -> float | None:
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0:
        return None
    below = float(np.mean(finite <= 0.0))
    above = float(np.mean(finite >= 0.0))
    return min(1.0, 2.0 * min(below, above))


def _test(a: float | None, b: float | None, boot_a: FloatArray, boot_b: FloatArray, n_boot: int) -> PairedTest:
    diffs = boot_a - boot_b
    low, high = percentile_ci(diffs) if n_boot > 0 else (None, None)
    difference = None if a is None or b is None else a - b
    return PairedTest(
        a=a,
        b=b,
        difference=difference,
        ci_low=low,
        ci_high=high,
        p_value=_two_sided_p(diffs) if n_boot > 0 else None,
        n_boot=n_boot,
    )


def paired_tau_test(
    items: Sequence[TauItem],
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    *,
    key: str = ALL,
    threshold: float = TAU_THRESHOLD,
    unanimous: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedTest:
    """Paired bootstrap of the difference between two metrics' Kendall tau-like (``key``: a category or all).

    Args:
        items: The rated outputs (their ``metric`` field is ignored).
        metric_a: Scores of the first metric, one per item.
        metric_b: Scores of the second metric, one per item.
    """
    if not len(items) == len(metric_a) == len(metric_b):
        raise ValueError("items, metric_a and metric_b must have the same length")
    pairs = TauPairs.from_items(items, threshold=threshold, unanimous=unanimous)
    return paired_tau_test_on(pairs, metric_a, metric_b, key=key, n_boot=n_boot, seed=seed)


def paired_tau_test_on(
    pairs: TauPairs,
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    *,
    key: str = ALL,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedTest:
    """:func:`paired_tau_test` on pairs found once (for comparing many metrics on one rating set)."""
    if key not in pairs.keys:
        raise ValueError(f"unknown key {key!r}; known: {pairs.keys}")
    column = pairs.keys.index(key)
    counts = []
    for scores in (metric_a, metric_b):
        conc, disc = pairs.counts(scores)
        counts.append((conc[:, column], disc[:, column]))
    n_sources = counts[0][0].shape[0]
    weights = resample_weights(n_sources, n_boot=n_boot, seed=seed)
    full = np.ones((1, n_sources), dtype=np.float64)

    def tau(w: FloatArray, conc: FloatArray, disc: FloatArray) -> FloatArray:
        c, d = w @ conc, w @ disc
        with np.errstate(invalid="ignore", divide="ignore"):
            out: FloatArray = (c - d) / (c + d)
        return out

    a = clean_float(tau(full, *counts[0])[0])
    b = clean_float(tau(full, *counts[1])[0])
    return _test(a, b, tau(weights, *counts[0]), tau(weights, *counts[1]), n_boot)


def paired_pearson_test(
    sources: Sequence[str],
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    human: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedTest:
    """Paired bootstrap (over sources) of the difference between two metrics' Pearson r with ``human``."""
    if not len(sources) == len(metric_a) == len(metric_b) == len(human):
        raise ValueError("sources, metric_a, metric_b and human must have the same length")
    xa = np.asarray(metric_a, dtype=np.float64)
    xb = np.asarray(metric_b, dtype=np.float64)
    y = np.asarray(human, dtype=np.float64)
    keep = np.isfinite(xa) & np.isfinite(xb) & np.isfinite(y)
    xa, xb, y = xa[keep], xb[keep], y[keep]
    kept = [s for s, k in zip(sources, keep, strict=True) if k]
    if not kept:
        return PairedTest(None, None, None, None, None, None, n_boot)
    _, codes = group_index(kept)
    weights = resample_weights(int(codes.max()) + 1, n_boot=n_boot, seed=seed)[:, codes]
    full = np.ones((1, y.size), dtype=np.float64)
    a = clean_float(_weighted_pearson(xa, y, full)[0])
    b = clean_float(_weighted_pearson(xb, y, full)[0])
    return _test(a, b, _weighted_pearson(xa, y, weights), _weighted_pearson(xb, y, weights), n_boot)
