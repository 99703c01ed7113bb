"""Comparing automatic metrics with humans and with each other (pure, numpy).

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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from evaluation.stats.bootstrap import FloatArray, clean_float, group_index, percentile_ci, resample_weights
from evaluation.stats.correlation import ALL, TauItem, _count_pairs, _weighted_pearson, metric_correlation_ci


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
    threshold: float = 5.0,
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
    counts = []
    for scores in (metric_a, metric_b):
        scored = [replace(item, metric=float(value)) for item, value in zip(items, scores, strict=True)]
        _, keys, conc, disc = _count_pairs(scored, threshold=threshold, unanimous=unanimous)
        if key not in keys:
            raise ValueError(f"unknown key {key!r}; known: {keys}")
        column = keys.index(key)
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
