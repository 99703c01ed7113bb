"""System leaderboard with bootstrap intervals and WMT-style significance clusters.

Scores are averaged per output first and then per system, as WMT does, so an
output with more ratings does not weigh more.  Ranking and significance use the
per-output mean z-scores (raw ratings when the records carry no z-scores).

Clusters (WMT 2020 "Findings", §3): systems are sorted by mean score, best
first, and a cluster boundary is placed between positions ``k`` and ``k+1``
only when *every* system above the boundary significantly outperforms *every*
system below it, according to a one-sided Mann-Whitney U test (Wilcoxon
rank-sum) on per-output mean scores at ``p < 0.05``.  In particular a system
only starts a new cluster when every system above it significantly outperforms
it.  ``cluster_rule="above"`` applies just that weaker condition (each system is
compared with the systems above it only).  Clusters are numbered from 1 (best).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evaluation.stats.bootstrap import (
    FloatArray,
    clean_float,
    group_index,
    percentile_ci_columns,
    resample_weights,
)
from evaluation.stats.records import RatingRecord

SIGNIFICANCE = 0.05
ClusterRule = Literal["wmt", "above"]


@dataclass(frozen=True)
class OutputScore:
    """Mean rating of one output over its raters."""

    output: str
    source: str
    system: str
    n: int
    raw: float
    z: float | None


@dataclass(frozen=True)
class Leaderboard:
    """Systems sorted best first; ``ranked_by`` says which score ranks and clusters them."""

    rows: list[dict[str, Any]]
    ranked_by: Literal["z", "raw"]
    warnings: list[str] = field(default_factory=list)


def output_scores(records: Sequence[RatingRecord]) -> list[OutputScore]:
    """Per-output mean raw rating and mean z-score (over the ratings that have one)."""
    raw: dict[str, list[float]] = defaultdict(list)
    zs: dict[str, list[float]] = defaultdict(list)
    first: dict[str, RatingRecord] = {}
    for record in records:
        first.setdefault(record.output, record)
        raw[record.output].append(record.raw)
        if record.z is not None:
            zs[record.output].append(record.z)
    return [
        OutputScore(
            output=output,
            source=rec.source,
            system=rec.system,
            n=len(raw[output]),
            raw=float(np.mean(raw[output])),
            z=float(np.mean(zs[output])) if zs[output] else None,
        )
        for output, rec in first.items()
    ]


def _one_sided_p(better: FloatArray, worse: FloatArray) -> float:
    """p-value of "``better`` is stochastically greater than ``worse``"."""
    if better.size == 0 or worse.size == 0:
        return 1.0
    if np.ptp(np.concatenate([better, worse])) == 0:
        return 1.0
    return mann_whitney_greater_p(better, worse)


EXACT_MAX_SIZE = 8
"""scipy's ``mannwhitneyu(method="auto")`` takes the exact distribution when a sample has at most this many
values and there are no ties; otherwise the normal approximation."""


def mann_whitney_greater_p(x: FloatArray, y: FloatArray) -> float:
    """``scipy.stats.mannwhitneyu(x, y, alternative="greater").pvalue`` (method "auto", continuity correction).

    The normal approximation with tie correction is computed here with numpy (a leaderboard makes hundreds of
    these tests; scipy's per-call overhead and its ~1 s import dominated the report); the small tie-free
    samples scipy answers exactly are passed to scipy itself.
    """
    n1, n2 = int(x.size), int(y.size)
    both = np.concatenate([x, y])
    order = np.argsort(both, kind="mergesort")
    ordered = both[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(ordered)) + 1])
    ends = np.concatenate([starts[1:], [both.size]])
    counts = ends - starts
    if (n1 <= EXACT_MAX_SIZE or n2 <= EXACT_MAX_SIZE) and bool(np.all(counts == 1)):
        from scipy.stats import mannwhitneyu  # exact distribution: small samples only

        return float(mannwhitneyu(x, y, alternative="greater").pvalue)
    ranks = np.empty(both.size, dtype=np.float64)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, counts)  # average 1-based ranks of tied values
    u1 = float(np.sum(ranks[:n1])) - n1 * (n1 + 1) / 2
    n = n1 + n2
    tie_term = float(np.sum(counts.astype(np.float64) ** 3 - counts))
    spread = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    z = (u1 - n1 * n2 / 2 - 0.5) / spread
    return min(1.0, max(0.0, 0.5 * math.erfc(z / math.sqrt(2.0))))


def significance_clusters(
    samples: Sequence[FloatArray], *, alpha: float = SIGNIFICANCE, rule: ClusterRule = "wmt"
) -> list[int]:
    """Cluster numbers (1 = best) for systems already sorted best first.

    Args:
        samples: Per-output scores of each system, in ranking order.
        alpha: Significance level of the one-sided Mann-Whitney U tests.
        rule: ``"wmt"`` (all above beat all below) or ``"above"`` (all above beat this one).
    """
    k = len(samples)
    beats = np.zeros((k, k), dtype=bool)  # beats[i, j]: system i significantly better than j (i < j)
    for i in range(k):
        for j in range(i + 1, k):
            beats[i, j] = _one_sided_p(samples[i], samples[j]) < alpha
    clusters: list[int] = []
    current = 1
    for position in range(k):
        if position > 0:
            if rule == "wmt":
                boundary = bool(beats[:position, position:].all())
            else:
                boundary = bool(beats[:position, position].all())
            if boundary:
                current += 1
        clusters.append(current)
    return clusters


def system_leaderboard(
    records: Sequence[RatingRecord],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = SIGNIFICANCE,
    cluster_rule: ClusterRule = "wmt",
) -> Leaderboard:
    """Per system: ratings, outputs, mean raw, mean z, 95% bootstrap CI and significance cluster.

    The interval (``ci_low``/``ci_high``) is for ``z_mean`` (``raw_ci_low``/``raw_ci_high``
    for ``raw_mean``), from ``n_boot`` resamples of sources, the same resamples
    for every system.
    """
    scores = output_scores(records)
    if not scores:
        return Leaderboard(rows=[], ranked_by="z")
    systems, system_codes = group_index([s.system for s in scores])
    sources, source_codes = group_index([s.source for s in scores])
    ratings_per_system = Counter(r.system for r in records)
    n_ratings = [ratings_per_system[name] for name in systems]
    raw = np.array([s.raw for s in scores])
    z_present = np.array([s.z is not None for s in scores])
    z = np.array([s.z if s.z is not None else 0.0 for s in scores])
    with_z = {systems[c] for c, p in zip(system_codes.tolist(), z_present.tolist(), strict=True) if p}
    ranked_by: Literal["z", "raw"] = "z" if len(with_z) == len(systems) else "raw"
    warnings: list[str] = []
    if ranked_by == "raw" and with_z:
        missing = sorted(set(systems) - with_z)
        warnings.append(f"systems without z-scores ({', '.join(missing)}): ranked by raw ratings")

    cell = source_codes * len(systems) + system_codes
    size = len(sources) * len(systems)

    def grid(weights: FloatArray) -> FloatArray:
        counts = np.bincount(cell, weights=weights, minlength=size).astype(np.float64)
        return counts.reshape(len(sources), len(systems))

    raw_sum, raw_cnt = grid(raw), grid(np.ones_like(raw))
    z_sum, z_cnt = grid(np.where(z_present, z, 0.0)), grid(z_present.astype(np.float64))
    boot = resample_weights(len(sources), n_boot=n_boot, seed=seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw_mean = raw_sum.sum(axis=0) / raw_cnt.sum(axis=0)
        z_mean = z_sum.sum(axis=0) / z_cnt.sum(axis=0)
        raw_boot = (boot @ raw_sum) / (boot @ raw_cnt)
        z_boot = (boot @ z_sum) / (boot @ z_cnt)
    raw_ci = percentile_ci_columns(raw_boot)
    z_ci = percentile_ci_columns(z_boot)

    key = z_mean if ranked_by == "z" else raw_mean
    order = sorted(range(len(systems)), key=lambda s: (-key[s], -raw_mean[s], systems[s]))
    ranking_values = z if ranked_by == "z" else raw
    ranking_mask = z_present if ranked_by == "z" else np.ones_like(z_present)
    samples = [ranking_values[(system_codes == s) & ranking_mask] for s in order]
    clusters = significance_clusters(samples, alpha=alpha, rule=cluster_rule)

    rows: list[dict[str, Any]] = []
    for rank, (s, cluster) in enumerate(zip(order, clusters, strict=True), start=1):
        rows.append(
            {
                "system": systems[s],
                "rank": rank,
                "n": int(n_ratings[s]),
                "n_outputs": int(raw_cnt[:, s].sum()),
                "raw_mean": clean_float(raw_mean[s]),
                "z_mean": clean_float(z_mean[s]),
                "ci_low": z_ci[s][0],
                "ci_high": z_ci[s][1],
                "raw_ci_low": raw_ci[s][0],
                "raw_ci_high": raw_ci[s][1],
                "cluster": cluster,
            }
        )
    return Leaderboard(rows=rows, ranked_by=ranked_by, warnings=warnings)
