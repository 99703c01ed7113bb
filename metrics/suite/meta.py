"""Meta-evaluation of suite metrics on rated outputs: the numbers of the LENS paper's Table 2.

* Rank & Rate-style ratings (several raters' raw 0-100 scores per output, a category per output):
  the Kendall tau-like coefficient per category and over all within-category pairs, with the LENS
  authors' pair rule (:func:`evaluation.stats.correlation.kendall_tau_like`: same source and
  category, a strict majority of raters differing by more than 5 points in the same direction, metric
  ties discordant).
* Multi-aspect ratings (WIKI-DA): Pearson (and Spearman) per aspect against the z-scores.
* A paired bootstrap test between two metrics (Deutsch et al., 2021).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.rules import TAU_THRESHOLD, UNCATEGORISED
from evaluation.stats.correlation import TauItem
from evaluation.stats.metric_comparison import (
    PairedTest,
    TauPairs,
    aspect_correlations,
    paired_pearson_test,
    paired_tau_test_on,
)
from metrics.suite.datasets import RatedOutput


def tau_items(outputs: Sequence[RatedOutput], scores: Sequence[float]) -> list[TauItem]:
    """Rated outputs and one metric's scores as :class:`TauItem` objects."""
    if len(outputs) != len(scores):
        raise ValueError(f"{len(outputs)} outputs but {len(scores)} scores")
    return [
        TauItem(
            source=out.source,
            output=f"{out.source}:{out.system}",
            category=out.category or UNCATEGORISED,
            metric=float(score),
            ratings=out.ratings,
        )
        for out, score in zip(outputs, scores, strict=True)
    ]


def tau_pairs(outputs: Sequence[RatedOutput], *, threshold: float = TAU_THRESHOLD) -> TauPairs:
    """The pairs the humans order (found once, then reused for every metric); ``threshold``: rating gap."""
    return TauPairs.from_items(tau_items(outputs, [0.0] * len(outputs)), threshold=threshold)


def tau_like(
    outputs: Sequence[RatedOutput],
    scores: Sequence[float],
    *,
    n_boot: int = 0,
    seed: int = 0,
    pairs: TauPairs | None = None,
) -> dict[str, dict[str, Any]]:
    """Kendall tau-like per category and ``"all"``: ``{key: {"value", "concordant", "discordant", ...}}``.

    With ``n_boot > 0`` every key also gets ``ci_low`` / ``ci_high`` (bootstrap over sources).  Pass
    ``pairs`` (from :func:`tau_pairs`) to skip finding the rated pairs again.
    """
    if len(outputs) != len(scores):
        raise ValueError(f"{len(outputs)} outputs but {len(scores)} scores")
    return (pairs or tau_pairs(outputs)).tau(scores, n_boot=n_boot, seed=seed)


def aspect_pearson(
    outputs: Sequence[RatedOutput], scores: Sequence[float], *, n_boot: int = 0, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Pearson and Spearman per aspect (z-scores), with bootstrap CIs when ``n_boot > 0``."""
    aspects = sorted({aspect for out in outputs for aspect in out.aspects})
    columns = {a: [out.aspects.get(a, float("nan")) for out in outputs] for a in aspects}
    return aspect_correlations(
        [out.source for out in outputs], [float(s) for s in scores], columns, n_boot=n_boot, seed=seed
    )


def compare_tau(
    outputs: Sequence[RatedOutput],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    *,
    key: str = "all",
    n_boot: int = 1000,
    seed: int = 0,
    pairs: TauPairs | None = None,
) -> PairedTest:
    """Is metric A's tau-like (for ``key``) different from metric B's?  Paired bootstrap over sources."""
    return paired_tau_test_on(pairs or tau_pairs(outputs), scores_a, scores_b, key=key, n_boot=n_boot, seed=seed)


def compare_pearson(
    outputs: Sequence[RatedOutput],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    *,
    aspect: str,
    n_boot: int = 1000,
    seed: int = 0,
) -> PairedTest:
    """Is metric A's Pearson r with ``aspect`` different from metric B's?  Paired bootstrap over sources."""
    human = [out.aspects.get(aspect, float("nan")) for out in outputs]
    return paired_pearson_test([out.source for out in outputs], scores_a, scores_b, human, n_boot=n_boot, seed=seed)
