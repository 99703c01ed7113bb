"""Figures the experiments report the same way, computed by one function each."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from metrics.lens.types import Sample


def system_figures(rows: Sequence[tuple[Sample, str]], values: Sequence[float]) -> dict[str, Any]:
    """The systems' mean score against their mean z: pairwise accuracy over the system pairs and Pearson of the
    means (SimpEval_2022: six systems, 15 pairs), with each system's two means."""
    from evaluation.stats.correlation import pearson
    from evaluation.stats.system_level import pairwise_accuracy

    by_system: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for (sample, system), value in zip(rows, values, strict=True):
        by_system[system][0].append(float(value))
        by_system[system][1].append(sample.z)
    systems = sorted(by_system)
    metric_means = [statistics.fmean(by_system[s][0]) for s in systems]
    human_means = [statistics.fmean(by_system[s][1]) for s in systems]
    agree, pairs = pairwise_accuracy(human_means, metric_means)
    return {"pairwise_accuracy": agree / pairs if pairs else None, "agreeing_pairs": agree, "pairs": pairs,
            "pearson": pearson(metric_means, human_means),
            "means": {s: {"score": m, "z": h} for s, m, h in zip(systems, metric_means, human_means, strict=True)}}


BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the sources for τ_all's 95% interval (seed 0), as the blend, LENS and research experiments."""


def tau_all_ci(samples: Sequence[Sample], values: Sequence[float]) -> list[float | None]:
    """τ_all's 95% percentile bootstrap interval over sources, ``[low, high]``."""
    from annotation.rules import TAU_THRESHOLD, UNCATEGORISED
    from evaluation.stats.correlation import TauItem, kendall_tau_like_ci

    items = [TauItem(source=s.source_id, output=s.output_id, category=s.category or UNCATEGORISED, metric=float(v),
                     ratings=s.ratings) for s, v in zip(samples, values, strict=True)]
    ci = kendall_tau_like_ci(items, threshold=TAU_THRESHOLD, n_boot=BOOTSTRAP_RESAMPLES, seed=0)["all"]
    return [ci["ci_low"], ci["ci_high"]]
