"""System-level meta-evaluation of automatic metrics, pairwise accuracy with tie calibration, and metric clusters.

Pure numpy (scipy only, lazily, for the t distribution of Williams' test).

* :func:`pairwise_accuracy`: the share of pairs two score vectors order the same way, a tie agreeing only with a
  tie (the system-level pairwise accuracy of the WMT metrics task since 2022, Kocmi et al. 2021).
* :func:`tie_calibrated_accuracy`: pairwise accuracy with tie calibration, ``acc_eq`` (Deutsch et al., "Ties
  Matter", EMNLP 2023): human ties count as pairs; the metric's differences up to a threshold epsilon count as
  ties, and epsilon is the smallest value that maximises the mean accuracy over the groups (a group: one source's
  outputs at the output level, all systems at the system level).
* :func:`williams_test`: Williams' (1959) test for the difference between two dependent Pearson correlations
  that share the human variable (Graham & Baldwin, 2014).
* :func:`significance_clusters`: metrics ranked by a figure and grouped, from the top, into clusters whose members
  no earlier member of the same cluster beats significantly (the greedy rule of the WMT metrics task), from a
  paired one-sided bootstrap over sources with Holm's correction over all pairs of the family.
* :func:`system_level_figures`: for each metric and each human column, Pearson, Kendall tau-b, pairwise accuracy
  and ``acc_eq`` between the metric's system means and the humans' system means, each with two 95% percentile
  intervals (bootstrap over sources, and over systems), plus clusters and Williams' tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from evaluation.stats.bootstrap import FloatArray, clean_float, group_index, percentile_ci, resample_weights
from evaluation.stats.multiple_testing import holm

ALPHA = 0.05
TIE_TOLERANCE = 1e-12  # accuracies this close are the same maximum
CLUSTER_TEST = (
    "paired bootstrap over sources (the same resamples for every metric); one-sided p = share of resamples in "
    "which the lower-ranked metric's figure is at least the higher-ranked one's; Holm's correction over all "
    "pairs of metrics of the family"
)
Row = Sequence[float] | FloatArray  # one group's values
SYSTEM_FIGURES = ("pearson", "kendall", "accuracy", "acc_eq")
CLUSTER_FIGURES = ("accuracy", "pearson", "acc_eq")


def pairwise_accuracy(human: Sequence[float], metric: Sequence[float]) -> tuple[int, int]:
    """``(agreeing pairs, pairs)``: pairs whose two signs of difference are equal (a tie agrees with a tie only).

    Pairs with a non-finite human value are skipped.
    """
    h = np.asarray(human, dtype=np.float64)
    m = np.asarray(metric, dtype=np.float64)
    if h.shape != m.shape:
        raise ValueError(f"{h.size} human values but {m.size} metric values")
    keep = np.isfinite(h) & np.isfinite(m)
    h, m = h[keep], m[keep]
    first, second = np.triu_indices(h.size, k=1)
    agree = np.sign(h[first] - h[second]) == np.sign(m[first] - m[second])
    return int(agree.sum()), int(first.size)


def _group_pairs(
    human_rows: Sequence[Row], metric_rows: Sequence[Row]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64], list[int]]:
    """Every within-group pair: human difference, metric difference, the group's number among groups with pairs,
    and the original index of each such group."""
    hd: list[FloatArray] = []
    md: list[FloatArray] = []
    codes: list[npt.NDArray[np.int64]] = []
    kept: list[int] = []
    if len(human_rows) != len(metric_rows):
        raise ValueError(f"{len(human_rows)} human groups but {len(metric_rows)} metric groups")
    for index, (h_row, m_row) in enumerate(zip(human_rows, metric_rows, strict=True)):
        h = np.asarray(h_row, dtype=np.float64)
        m = np.asarray(m_row, dtype=np.float64)
        if h.shape != m.shape:
            raise ValueError(f"group {index}: {h.size} human values but {m.size} metric values")
        keep = np.isfinite(h) & np.isfinite(m)
        h, m = h[keep], m[keep]
        if h.size < 2:
            continue
        first, second = np.triu_indices(h.size, k=1)
        hd.append(h[first] - h[second])
        md.append(m[first] - m[second])
        codes.append(np.full(first.size, len(kept), dtype=np.int64))
        kept.append(index)
    if not kept:
        empty = np.zeros(0, dtype=np.float64)
        return empty, empty, np.zeros(0, dtype=np.int64), []
    return np.concatenate(hd), np.concatenate(md), np.concatenate(codes), kept


def _agree_at(hd: FloatArray, md: FloatArray, epsilon: float) -> npt.NDArray[np.bool_]:
    """Pair agreement when metric differences up to ``epsilon`` are ties (a human tie agrees with a metric tie)."""
    metric_tie = np.abs(md) <= epsilon
    human_tie = hd == 0.0
    return np.where(human_tie, metric_tie, ~metric_tie & (np.sign(hd) == np.sign(md)))


def tie_calibrated_accuracy(
    human_rows: Sequence[Row], metric_rows: Sequence[Row]
) -> dict[str, Any]:
    """``acc_eq``: pairwise accuracy with the metric's tie threshold chosen to maximise it (Deutsch et al., 2023).

    Each row is a group (one source's outputs, or all systems); accuracy is computed within each group and
    averaged over the groups that have a pair.  The candidate thresholds are 0 and every absolute metric
    difference of a pair; the smallest one reaching the maximum is kept.

    Returns:
        ``{"value", "epsilon", "groups": number of groups with a pair, "group_index": their positions in the
        input, "group_accuracy": array of each one's accuracy at ``epsilon``}`` (``value``/``epsilon`` None
        without any pair).
    """
    hd, md, codes, kept = _group_pairs(human_rows, metric_rows)
    if not kept:
        return {"value": None, "epsilon": None, "groups": 0, "group_index": [], "group_accuracy": np.zeros(0)}
    n_groups = len(kept)
    sizes = np.bincount(codes, minlength=n_groups).astype(np.float64)
    weight = 1.0 / sizes[codes]
    base = _agree_at(hd, md, 0.0)
    as_tie = hd == 0.0
    gain = (as_tie.astype(np.float64) - base.astype(np.float64)) * weight
    order = np.argsort(np.abs(md), kind="stable")
    diffs = np.abs(md)[order]
    running = float(np.sum(base * weight)) + np.cumsum(gain[order])
    last = np.r_[diffs[1:] != diffs[:-1], True]  # the last pair of each run of equal differences
    thresholds = diffs[last]
    values = running[last] / n_groups
    if thresholds[0] != 0.0:
        thresholds = np.r_[0.0, thresholds]
        values = np.r_[float(np.sum(base * weight)) / n_groups, values]
    # The smallest threshold reaching the maximum, rounding aside: thresholds whose accuracies are equal as
    # fractions can differ in the last bits of a running sum.
    best = int(np.flatnonzero(values >= values.max() - TIE_TOLERANCE)[0])
    epsilon = float(thresholds[best])
    agree = _agree_at(hd, md, epsilon).astype(np.float64)
    group_accuracy = np.bincount(codes, weights=agree, minlength=n_groups) / sizes
    return {
        "value": float(group_accuracy.mean()),
        "epsilon": epsilon,
        "groups": n_groups,
        "group_index": kept,
        "group_accuracy": group_accuracy,
    }


def williams_test(r_a: float, r_b: float, r_ab: float, n: int) -> float | None:
    """One-sided p-value of Williams' test that the larger of two dependent correlations with a shared variable is
    larger (``r_a``, ``r_b``: each metric with the humans; ``r_ab``: the metrics with each other; ``n`` items).

    ``t = (r_a - r_b) sqrt((n-1)(1+r_ab)) / sqrt(2K(n-1)/(n-3) + ((r_a+r_b)/2)^2 (1-r_ab)^3)``,
    ``K = 1 - r_a^2 - r_b^2 - r_ab^2 + 2 r_a r_b r_ab``, with ``n - 3`` degrees of freedom.  None when
    ``n <= 3`` or a correlation is undefined.
    """
    values = (r_a, r_b, r_ab)
    if n <= 3 or any(v is None or not math.isfinite(v) for v in values):
        return None
    k = 1.0 - r_a**2 - r_b**2 - r_ab**2 + 2.0 * r_a * r_b * r_ab
    denominator = 2.0 * k * (n - 1) / (n - 3) + ((r_a + r_b) / 2.0) ** 2 * (1.0 - r_ab) ** 3
    if denominator <= 0.0:
        return None if r_a == r_b else 0.0
    t = (r_a - r_b) * math.sqrt((n - 1) * (1.0 + r_ab)) / math.sqrt(denominator)
    from scipy.special import stdtr  # scipy (~1 s) only when a test is run

    return float(stdtr(n - 3, -abs(t)))


def significance_clusters(
    values: Mapping[str, float | None], boot: Mapping[str, FloatArray], *, alpha: float = ALPHA, figure: str = ""
) -> dict[str, Any]:
    """Metrics ranked by ``values`` (best first) and grouped into significance clusters.

    ``boot[name]`` holds the metric's figure on each resample, the resamples being the same for every metric.
    For every pair (better, worse) in rank order, the one-sided p is the share of finite resamples where
    ``worse >= better``; p-values are Holm-adjusted over all pairs; walking down the ranking, a metric opens a new
    cluster when a metric of the current cluster beats it at ``alpha`` (adjusted).  Metrics without a value come
    last, each in a cluster of its own.
    """
    defined = sorted((n for n in values if values[n] is not None), key=lambda n: -float(values[n] or 0.0))
    undefined = [n for n in values if values[n] is None]
    pairs: list[dict[str, Any]] = []
    raw: list[float] = []
    for better, worse in combinations(defined, 2):
        diff = boot[better] - boot[worse]
        finite = diff[np.isfinite(diff)]
        p = float(np.mean(finite <= 0.0)) if finite.size else 1.0
        pairs.append({"better": better, "worse": worse, "p_value": p})
        raw.append(p)
    for pair, adjusted in zip(pairs, holm(raw), strict=True):
        pair["p_adjusted"] = adjusted
        pair["significant"] = adjusted <= alpha
    beaten = {(p["better"], p["worse"]) for p in pairs if p["significant"]}
    rank: dict[str, int] = {}
    current, start = 1, 0
    for i, name in enumerate(defined):
        if any((earlier, name) in beaten for earlier in defined[start:i]):
            current += 1
            start = i
        rank[name] = current
    for name in undefined:
        current += 1
        rank[name] = current
    return {
        "figure": figure,
        "test": CLUSTER_TEST,
        "correction": "holm",
        "alpha": alpha,
        "order": [*defined, *undefined],
        "rank": rank,
        "value": {name: values[name] for name in [*defined, *undefined]},
        "pairs": pairs,
    }


# --- Figures on rows of system means (one row per resample) --------------------------------------------------


def _row_pearson(x: FloatArray, y: FloatArray, w: FloatArray) -> FloatArray:
    """Weighted Pearson per row; rows with a missing value or no variance are NaN."""
    with np.errstate(invalid="ignore", divide="ignore"):
        total = w.sum(axis=1, keepdims=True)
        mx = (w * x).sum(axis=1, keepdims=True) / total
        my = (w * y).sum(axis=1, keepdims=True) / total
        dx, dy = x - mx, y - my
        cov = (w * dx * dy).sum(axis=1)
        out: FloatArray = cov / np.sqrt((w * dx * dx).sum(axis=1) * (w * dy * dy).sum(axis=1))
    return out


def _pair_figures(
    human: FloatArray, metric: FloatArray, pair_weight: FloatArray, epsilon: float | None
) -> dict[str, FloatArray]:
    """Kendall tau-b, pairwise accuracy and accuracy at a fixed tie threshold, per row, over weighted pairs."""
    first, second = np.triu_indices(human.shape[1], k=1)
    hd = human[:, first] - human[:, second]
    md = metric[:, first] - metric[:, second]
    sh, sm = np.sign(hd), np.sign(md)
    with np.errstate(invalid="ignore", divide="ignore"):
        kendall = (pair_weight * sh * sm).sum(axis=1) / np.sqrt(
            (pair_weight * np.abs(sh)).sum(axis=1) * (pair_weight * np.abs(sm)).sum(axis=1)
        )
        total = pair_weight.sum(axis=1)
        accuracy = (pair_weight * (sh == sm)).sum(axis=1) / total
        acc_eq = (
            (pair_weight * _agree_at(hd, md, epsilon)).sum(axis=1) / total
            if epsilon is not None
            else np.full(human.shape[0], np.nan)
        )
    bad = ~(np.isfinite(hd).all(axis=1) & np.isfinite(md).all(axis=1))
    for array in (kendall, accuracy, acc_eq):
        array[bad] = np.nan
    return {"kendall": kendall, "accuracy": accuracy, "acc_eq": acc_eq}


def _figures(human: FloatArray, metric: FloatArray, weights: FloatArray | None, epsilon: float | None
             ) -> dict[str, FloatArray]:
    """Every system-level figure per row of system means; ``weights`` (rows x systems) for the system bootstrap."""
    n_sys = human.shape[1]
    first, second = np.triu_indices(n_sys, k=1)
    if weights is None:
        w = np.ones_like(human)
        pair_weight = np.ones((human.shape[0], first.size))
    else:
        w = weights
        pair_weight = weights[:, first] * weights[:, second]
    out = _pair_figures(human, metric, pair_weight, epsilon)
    out["pearson"] = _row_pearson(metric, human, w)
    return out


def _one_value_per_output(
    sources: Sequence[str],
    humans: Mapping[str, Sequence[float]],
    metrics: Mapping[str, Sequence[float]],
    *,
    systems: Sequence[str] | None = None,
) -> None:
    """A ValueError unless every column given (``systems`` too, when given) has one value per source entry."""
    n = len(sources)
    columns = [*humans.values(), *metrics.values(), *([systems] if systems is not None else [])]
    if any(len(v) != n for v in columns):
        named = "sources, systems," if systems is not None else "sources,"
        raise ValueError(f"{named} every human column and every metric need one value per output")


def system_level_figures(
    sources: Sequence[str],
    systems: Sequence[str],
    humans: Mapping[str, Sequence[float]],
    metrics: Mapping[str, Sequence[float]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """How each metric's system means agree with the humans' system means.

    Args:
        sources: The source of each output (the bootstrap's unit).
        systems: The system of each output.
        humans: Human column ("z", or an aspect) -> one value per output (NaN where not rated).
        metrics: Metric name -> one score per output.

    For each human column only the outputs with a human value count, for the humans and every metric alike; a
    system's mean is the plain mean of those outputs.  ``ci_sources``: percentile interval of the figure over
    ``n_boot`` resamples of the sources; ``ci_systems``: over resamples of the systems (a pair of copies of one
    system is not a pair).  ``acc_eq``'s threshold is calibrated on the full data and kept in the resamples.
    Clusters (:func:`significance_clusters`) use the source resamples, so every metric is judged on the same ones.

    Returns:
        ``{"systems", "humans", "human_means", "metrics": {name: {"means", column:
        {figure: cell}}}, "clusters": {column: {figure: clusters}}, "williams": {column: [...]}}``.
    """
    _one_value_per_output(sources, humans, metrics, systems=systems)
    source_names, source_code = group_index(list(sources))
    system_names, system_code = group_index(list(systems))
    n_src, n_sys = len(source_names), len(system_names)
    w_src = resample_weights(n_src, n_boot=n_boot, seed=seed)
    w_sys = resample_weights(n_sys, n_boot=n_boot, seed=seed + 1)
    result: dict[str, Any] = {
        "systems": list(system_names),
        "humans": list(humans),
        "human_means": {},
        "metrics": {name: {"means": {}} for name in metrics},
        "clusters": {},
        "williams": {},
        "n_boot": n_boot,
    }
    for column, human_values in humans.items():
        h = np.asarray(human_values, dtype=np.float64)
        keep = np.isfinite(h)
        cell_count = np.zeros((n_src, n_sys))
        np.add.at(cell_count, (source_code[keep], system_code[keep]), 1.0)

        def cell_sums(values: FloatArray, keep: npt.NDArray[np.bool_] = keep) -> FloatArray:
            sums = np.zeros((n_src, n_sys))
            np.add.at(sums, (source_code[keep], system_code[keep]), values[keep])
            return sums

        def means(sums: FloatArray, weights: FloatArray, counts: FloatArray = cell_count) -> FloatArray:
            with np.errstate(invalid="ignore", divide="ignore"):
                out: FloatArray = (weights @ sums) / (weights @ counts)
            return out

        present = cell_count.sum(axis=0) > 0
        full = np.ones((1, n_src))
        h_sums = cell_sums(h)
        h_full = means(h_sums, full)[:, present]
        h_boot = means(h_sums, w_src)[:, present]
        names_present = [s for s, p in zip(system_names, present, strict=True) if p]
        result["human_means"][column] = {s: clean_float(v) for s, v in zip(names_present, h_full[0], strict=True)}
        boots: dict[str, dict[str, FloatArray]] = {}
        values: dict[str, dict[str, float | None]] = {}
        metric_full: dict[str, FloatArray] = {}
        for name, scores in metrics.items():
            m_sums = cell_sums(np.asarray(scores, dtype=np.float64))
            m_full = means(m_sums, full)[:, present]
            metric_full[name] = m_full[0]
            m_boot = means(m_sums, w_src)[:, present]
            calibration = tie_calibrated_accuracy([h_full[0]], [m_full[0]])
            epsilon = calibration["epsilon"]
            point = _figures(h_full, m_full, None, epsilon)
            by_sources = _figures(h_boot, m_boot, None, epsilon)
            by_systems = _figures(np.broadcast_to(h_full, (n_boot, h_full.shape[1])),
                                  np.broadcast_to(m_full, (n_boot, m_full.shape[1])),
                                  w_sys[:, present], epsilon)
            cells: dict[str, Any] = {}
            for figure in SYSTEM_FIGURES:
                value = clean_float(point[figure][0]) if n_sys else None
                cells[figure] = {
                    "value": value,
                    "ci_sources": list(percentile_ci(by_sources[figure])),
                    "ci_systems": list(percentile_ci(by_systems[figure])),
                }
            agree, pairs = pairwise_accuracy(h_full[0], m_full[0])
            cells["accuracy"].update(agree=agree, pairs=pairs)
            cells["acc_eq"]["epsilon"] = epsilon
            cells["acc_eq"]["value"] = calibration["value"]
            result["metrics"][name][column] = cells
            result["metrics"][name]["means"][column] = {
                s: clean_float(v) for s, v in zip(names_present, m_full[0], strict=True)
            }
            boots[name] = by_sources
            values[name] = {figure: cells[figure]["value"] for figure in SYSTEM_FIGURES}
        result["clusters"][column] = {
            figure: significance_clusters(
                {name: values[name][figure] for name in metrics},
                {name: boots[name][figure] for name in metrics}, alpha=alpha, figure=f"system {figure}",
            )
            for figure in CLUSTER_FIGURES
        }
        result["williams"][column] = _williams_pairs(h_full[0], metric_full)
    return result


def _pearson(x: FloatArray, y: FloatArray) -> float | None:
    return clean_float(_row_pearson(x[None, :], y[None, :], np.ones((1, x.size)))[0]) if x.size > 1 else None


def _williams_pairs(human: FloatArray, metric_means: Mapping[str, FloatArray]) -> list[dict[str, Any]]:
    """Williams' test for every pair of metrics' system-level Pearson correlations with the humans."""
    out = []
    for a, b in combinations(metric_means, 2):
        r_a, r_b = _pearson(metric_means[a], human), _pearson(metric_means[b], human)
        r_ab = _pearson(metric_means[a], metric_means[b])
        p = williams_test(r_a, r_b, r_ab, int(human.size)) if None not in (r_a, r_b, r_ab) else None  # type: ignore[arg-type]
        out.append({"metric_a": a, "metric_b": b, "r_a": r_a, "r_b": r_b, "r_ab": r_ab, "n": int(human.size),
                    "p_value": p})
    return out


def grouped_acc_eq(
    sources: Sequence[str],
    humans: Mapping[str, Sequence[float]],
    metrics: Mapping[str, Sequence[float]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Output-level ``acc_eq`` per metric and human column, pairs within a source, averaged over sources (the
    WMT's "group by item"), with a 95% bootstrap interval over sources at the calibrated threshold, and the
    metrics' clusters on it.

    Returns:
        ``{"metrics": {name: {column: {"value", "epsilon", "ci", "groups"}}}, "clusters": {column: clusters}}``.
    """
    _one_value_per_output(sources, humans, metrics)
    names, codes = group_index(list(sources))
    members: list[list[int]] = [[] for _ in names]
    for i, code in enumerate(codes):
        members[int(code)].append(i)
    weights = resample_weights(len(names), n_boot=n_boot, seed=seed)
    out: dict[str, Any] = {"metrics": {name: {} for name in metrics}, "clusters": {}}
    for column, human_values in humans.items():
        h = np.asarray(human_values, dtype=np.float64)
        h_rows = [h[idx] for idx in members]
        boots: dict[str, FloatArray] = {}
        values: dict[str, float | None] = {}
        for name, scores in metrics.items():
            m = np.asarray(scores, dtype=np.float64)
            calibration = tie_calibrated_accuracy(h_rows, [m[idx] for idx in members])
            w = weights[:, calibration["group_index"]]
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = (w @ calibration["group_accuracy"]) / w.sum(axis=1)
            boots[name] = boot
            values[name] = calibration["value"]
            out["metrics"][name][column] = {
                "value": calibration["value"],
                "epsilon": calibration["epsilon"],
                "ci": list(percentile_ci(boot)) if n_boot > 0 else [None, None],
                "groups": calibration["groups"],
            }
        out["clusters"][column] = significance_clusters(values, boots, alpha=alpha, figure="output acc_eq")
    return out
