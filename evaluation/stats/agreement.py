"""Krippendorff's alpha for inter-annotator agreement.

The reliability matrix has one row per rater and one column per unit (a rated
output), NaN marking a missing rating.  Only *pairable* units (two or more
ratings) take part, as in Krippendorff (2011).

The interval level has a closed form.  With ``m_u`` ratings in unit ``u``,
``n = sum_u m_u`` and sums ``S1``, ``S2`` of the values and their squares over
all pairable values:

    D_o = (1/n) * sum_u 2 * (m_u * s2_u - s1_u**2) / (m_u - 1)
    D_e = 2 * (n * S2 - S1**2) / (n * (n - 1))
    alpha = 1 - D_o / D_e

so alpha needs only per-unit counts and sums, which also makes the bootstrap
over sources a handful of matrix products.  The ordinal, nominal and ratio
levels go through the coincidence matrix.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from evaluation.stats.bootstrap import (
    FloatArray,
    IntArray,
    clean_float,
    group_index,
    percentile_ci,
    resample_weights,
)
from evaluation.stats.records import RatingRecord

Level = Literal["interval", "ordinal", "nominal", "ratio"]
Field = Literal["raw", "z"]


@dataclass(frozen=True)
class RatingMatrix:
    """Reliability data: ``values[i, j]`` is rater ``raters[i]``'s rating of unit ``units[j]``."""

    values: FloatArray  # (n_raters, n_units), NaN = missing
    raters: list[str]
    units: list[str]  # output ids
    unit_sources: list[str]  # source of each unit (the bootstrap resampling group)
    duplicates: int = 0  # (rater, unit) cells rated more than once (their mean is used)


def rating_matrix(records: Sequence[RatingRecord], *, field: Field = "raw") -> RatingMatrix:
    """Build the raters x outputs matrix of raw ratings or z-scores.

    Records whose z-score is ``None`` are missing cells of the z matrix.  A rater
    who rated an output twice contributes the mean of both ratings.
    """
    raters, rater_codes = group_index([r.rater for r in records])
    units, unit_codes = group_index([r.output for r in records])
    unit_sources = [""] * len(units)
    for record, code in zip(records, unit_codes, strict=True):
        unit_sources[code] = record.source
    chosen = [r.raw if field == "raw" else r.z for r in records]
    present = np.array([v is not None for v in chosen], dtype=bool)
    vals = np.array([v if v is not None else 0.0 for v in chosen], dtype=np.float64)
    shape = (len(raters), len(units))
    flat = rater_codes[present] * len(units) + unit_codes[present]
    size = shape[0] * shape[1]
    sums = np.bincount(flat, weights=vals[present], minlength=size)
    counts = np.bincount(flat, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = (sums / counts).reshape(shape)
    duplicates = int(np.count_nonzero(counts > 1))
    return RatingMatrix(
        values=values, raters=raters, units=units, unit_sources=unit_sources, duplicates=duplicates
    )


def _interval_unit_terms(values: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per-unit ``m``, ``s1``, ``s2`` and observed-disagreement numerator (zero for unpairable units)."""
    present = ~np.isnan(values)
    m = present.sum(axis=0).astype(np.float64)
    pairable = m >= 2
    filled = np.where(present & pairable[None, :], values, 0.0)
    total = m[pairable].sum()
    # Centring does not change alpha but keeps m*s2 - s1**2 free of cancellation.
    centre = filled.sum() / total if total > 0 else 0.0
    centred = np.where(present & pairable[None, :], filled - centre, 0.0)
    m = np.where(pairable, m, 0.0)
    s1 = centred.sum(axis=0)
    s2 = (centred * centred).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        do = np.where(pairable, 2.0 * (m * s2 - s1 * s1) / (m - 1.0), 0.0)
    return m, s1, s2, do


def _interval_from_sums(n: FloatArray, s1: FloatArray, s2: FloatArray, do: FloatArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = 2.0 * (n * s2 - s1 * s1)
        alpha: FloatArray = 1.0 - (n - 1.0) * do / expected
    # No pairable values, or no variation at all: alpha is undefined.
    return np.where((n >= 2) & (expected > 1e-12 * np.maximum(n * s2, 1.0)), alpha, np.nan)


def alpha_interval(values: FloatArray) -> float:
    """Interval Krippendorff's alpha (closed form); NaN when undefined."""
    m, s1, s2, do = _interval_unit_terms(np.asarray(values, dtype=np.float64))
    result = _interval_from_sums(
        np.array([m.sum()]), np.array([s1.sum()]), np.array([s2.sum()]), np.array([do.sum()])
    )
    return float(result[0])


def _coincidence(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Coincidence matrix over the distinct values of pairable units, and those values."""
    present = ~np.isnan(values)
    m = present.sum(axis=0)
    pairable = m >= 2
    data = values[:, pairable]
    m = m[pairable]
    domain = np.unique(data[~np.isnan(data)])
    if domain.size == 0:
        return np.zeros((0, 0)), domain
    n_raters = data.shape[0]
    codes = np.where(np.isnan(data), -1, np.searchsorted(domain, np.nan_to_num(data)))
    inv = 1.0 / (m - 1.0)
    k = domain.size
    flat = np.zeros(k * k, dtype=np.float64)
    for a in range(n_raters):
        for b in range(n_raters):
            if a == b:
                continue
            both = (codes[a] >= 0) & (codes[b] >= 0)
            flat += np.bincount(codes[a][both] * k + codes[b][both], weights=inv[both], minlength=k * k)
    return flat.reshape(k, k), domain


def _distance(level: Level, domain: FloatArray, marginals: FloatArray) -> FloatArray:
    if level == "nominal":
        return 1.0 - np.eye(domain.size)
    if level == "interval":
        return (domain[:, None] - domain[None, :]) ** 2
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = (domain[:, None] - domain[None, :]) / (domain[:, None] + domain[None, :])
        return np.nan_to_num(ratio) ** 2
    cum = np.cumsum(marginals)
    lo = np.minimum.outer(np.arange(domain.size), np.arange(domain.size))
    hi = np.maximum.outer(np.arange(domain.size), np.arange(domain.size))
    between = cum[hi] - cum[lo] + marginals[lo]
    return (between - (marginals[:, None] + marginals[None, :]) / 2.0) ** 2


def krippendorff_alpha(values: FloatArray, *, level: Level = "interval") -> float:
    """Krippendorff's alpha of a raters x units matrix (NaN = missing).

    Args:
        values: Reliability data, one row per rater, one column per unit.
        level: ``"interval"`` (closed form), ``"ordinal"``, ``"nominal"`` or ``"ratio"``.

    Returns:
        Alpha, or NaN when undefined (no pairable unit, or no variation).
    """
    data = np.asarray(values, dtype=np.float64)
    if level == "interval":
        return alpha_interval(data)
    coincidence, domain = _coincidence(data)
    if domain.size == 0:
        return float("nan")
    marginals = coincidence.sum(axis=1)
    n = marginals.sum()
    delta = _distance(level, domain, marginals)
    expected = float((np.outer(marginals, marginals) * delta).sum())
    if n < 2 or expected <= 0:
        return float("nan")
    return float(1.0 - (n - 1.0) * float((coincidence * delta).sum()) / expected)


def _group_codes(matrix: RatingMatrix) -> tuple[int, IntArray]:
    groups, codes = group_index(matrix.unit_sources)
    return len(groups), codes


def alpha_bootstrap(
    matrix: RatingMatrix, *, n_boot: int = 1000, seed: int = 0, level: Level = "interval"
) -> FloatArray:
    """Alpha in each of ``n_boot`` resamples of sources (units grouped by source)."""
    n_groups, codes = _group_codes(matrix)
    weights = resample_weights(n_groups, n_boot=n_boot, seed=seed)
    if level == "interval":
        terms = _interval_unit_terms(matrix.values)
        per_group = [np.bincount(codes, weights=t, minlength=n_groups) for t in terms]
        n, s1, s2, do = (weights @ g for g in per_group)
        return _interval_from_sums(n, s1, s2, do)
    members: dict[int, list[int]] = defaultdict(list)
    for unit, code in enumerate(codes.tolist()):
        members[code].append(unit)
    out = np.empty(weights.shape[0], dtype=np.float64)
    for b in range(weights.shape[0]):
        columns = [u for g in range(n_groups) for _ in range(int(weights[b, g])) for u in members[g]]
        out[b] = krippendorff_alpha(matrix.values[:, columns], level=level)
    return out


def alpha_with_ci(
    matrix: RatingMatrix, *, n_boot: int = 1000, seed: int = 0, level: Level = "interval"
) -> dict[str, float | None]:
    """Alpha with a 95% percentile bootstrap interval over sources.

    Returns:
        ``{"value", "ci_low", "ci_high"}``, ``None`` where undefined.
    """
    value = clean_float(krippendorff_alpha(matrix.values, level=level))
    if value is None or n_boot <= 0:
        return {"value": value, "ci_low": None, "ci_high": None}
    low, high = percentile_ci(alpha_bootstrap(matrix, n_boot=n_boot, seed=seed, level=level))
    return {"value": value, "ci_low": low, "ci_high": high}


def alpha_leave_one_out(matrix: RatingMatrix, *, level: Level = "interval") -> dict[str, float | None]:
    """Alpha of the matrix without each rater in turn (``None`` where undefined)."""
    out: dict[str, float | None] = {}
    for i, rater in enumerate(matrix.raters):
        rest = np.delete(matrix.values, i, axis=0)
        out[rater] = clean_float(krippendorff_alpha(rest, level=level)) if rest.shape[0] else None
    return out
