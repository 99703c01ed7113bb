"""Annotator quality indicators.

Per rater: number of ratings, median seconds spent per source, Pearson
correlation of the rater's raw ratings with the mean raw rating of the *other*
raters of the same outputs, Krippendorff's interval alpha with the rater left
out, and an outlier flag.

Outlier rule: a rater is flagged when their correlation with the others is
below ``MIN_CORRELATION`` (0.2), or when its robust z-score among all raters'
correlations, ``(r - median) / (1.4826 * MAD)``, is below ``-ROBUST_Z_LIMIT``
(-3.0).  The robust z-score needs at least three raters with a correlation and
a non-zero MAD.  Raters without a correlation (fewer than three shared outputs,
or no spread) are not flagged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluation.stats.agreement import alpha_leave_one_out, rating_matrix
from evaluation.stats.bootstrap import FloatArray, clean_float
from evaluation.stats.correlation import pearson
from evaluation.stats.records import RatingRecord

MIN_CORRELATION = 0.2
ROBUST_Z_LIMIT = 3.0
MIN_SHARED = 3


def _pearson(x: FloatArray, y: FloatArray) -> float | None:
    """Pearson's r over at least ``MIN_SHARED`` shared outputs, else ``None``."""
    return pearson(x, y) if x.size >= MIN_SHARED else None


def correlation_with_others(values: FloatArray) -> tuple[list[float | None], list[int]]:
    """Each rater's Pearson r with the mean of the other raters, on outputs they share.

    Args:
        values: Raters x outputs matrix, NaN = missing.

    Returns:
        Correlation (``None`` when undefined) and number of shared outputs, per rater.
    """
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    col_sum = filled.sum(axis=0)
    col_cnt = present.sum(axis=0)
    corrs: list[float | None] = []
    shared_counts: list[int] = []
    for i in range(values.shape[0]):
        shared = present[i] & (col_cnt > 1)
        others = (col_sum[shared] - filled[i, shared]) / (col_cnt[shared] - 1)
        corrs.append(_pearson(values[i, shared], others))
        shared_counts.append(int(shared.sum()))
    return corrs, shared_counts


def robust_z(values: Sequence[float | None]) -> list[float | None]:
    """``(v - median) / (1.4826 * MAD)`` over the defined values; ``None`` where undefined."""
    defined = np.array([v for v in values if v is not None], dtype=np.float64)
    if defined.size < 3:
        return [None] * len(values)
    median = float(np.median(defined))
    mad = 1.4826 * float(np.median(np.abs(defined - median)))
    if mad <= 0:
        return [None] * len(values)
    return [None if v is None else (v - median) / mad for v in values]


def median_seconds_per_source(records: Sequence[RatingRecord]) -> dict[str, float | None]:
    """Median over sources of the time each rater spent on a source.

    A rater's records of one source normally repeat the same time; the largest is used.
    """
    per_source: dict[str, dict[str, float]] = defaultdict(dict)
    for record in records:
        per_source[record.rater]  # every rater gets an entry
        if record.seconds is not None:
            seen = per_source[record.rater].get(record.source)
            if seen is None or record.seconds > seen:
                per_source[record.rater][record.source] = record.seconds
    return {
        rater: float(np.median(list(times.values()))) if times else None
        for rater, times in per_source.items()
    }


def annotator_quality(records: Sequence[RatingRecord]) -> list[dict[str, Any]]:
    """One row per rater (sorted by rater id); see the module docstring for the columns."""
    if not records:
        return []
    raw = rating_matrix(records, field="raw")
    z = rating_matrix(records, field="z")
    corrs, shared = correlation_with_others(raw.values)
    rz = robust_z(corrs)
    loo_raw = alpha_leave_one_out(raw)
    loo_z = alpha_leave_one_out(z)
    seconds = median_seconds_per_source(records)
    n_sources: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for record in records:
        counts[record.rater] += 1
        n_sources[record.rater].add(record.source)
    rows: list[dict[str, Any]] = []
    for i, rater in enumerate(raw.raters):
        corr = corrs[i]
        robust = rz[i]
        outlier = corr is not None and (
            corr < MIN_CORRELATION or (robust is not None and robust < -ROBUST_Z_LIMIT)
        )
        rows.append(
            {
                "rater": rater,
                "n": counts[rater],
                "n_outputs": int((~np.isnan(raw.values[i])).sum()),
                "n_sources": len(n_sources[rater]),
                "median_seconds": clean_float(seconds.get(rater)),
                "corr_with_others": clean_float(corr),
                "n_shared": shared[i],
                "corr_robust_z": clean_float(robust),
                "alpha_without_raw": loo_raw.get(rater),
                "alpha_without_z": loo_z.get(rater),
                "outlier": outlier,
            }
        )
    return sorted(rows, key=lambda row: row["rater"])
