"""How well a LENS version agrees with a campaign's human ratings (the LENS paper's §4.1 set-up).

Kendall tau-like (``evaluation.stats.correlation``) on the RAW ratings per rater (pairs of outputs of the
same source and category; a 5-point threshold; a strict majority of the shared raters), with the campaign's
final categories; Pearson and Spearman against the mean z-score per output. Every figure has a 95%
percentile bootstrap interval over sources.

The metric's scores are the stored ``LensScore`` rows of the version; missing ones are computed and stored
first (so the research dashboard's LENS leaderboard can reuse them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from annotation.models import Campaign
from evaluation.stats.correlation import CATEGORIES, TAU_KEYS, TauItem, kendall_tau_like_ci, metric_correlation_ci
from metrics.models import LensModelVersion, LensScore
from metrics.selectors import campaign_rated_outputs
from metrics.services.scoring import campaign_lens_score_outputs


def _interval(low: Any, high: Any) -> list[float | None]:
    return [None if low is None else float(low), None if high is None else float(high)]


def lens_meta_evaluate(
    *,
    campaign: Campaign,
    version: LensModelVersion,
    exclude_systems: Iterable[str] = (),
    threshold: float = 5.0,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Correlations of a LENS version with a campaign's ratings.

    Args:
        campaign: Campaign with submitted ratings and references.
        version: A succeeded LENS version.
        exclude_systems: Systems left out (e.g. the system whose outputs serve as the reference).
        threshold: Rating gap (0-100) below which raters count as tied.
        n_boot: Bootstrap resamples of sources.
        seed: Bootstrap seed.

    Returns:
        ``{"metric", "version", "campaign", "outputs", "kendall": {"all", "deletion", "paraphrase", "split"},
        "kendall_ci": {key: [low, high]}, "pairs": {key: {"concordant", "discordant"}}, "pearson",
        "pearson_ci", "spearman", "spearman_ci", "ci": {"kendall": {key: [low, high]}, "pearson": [low, high],
        "spearman": [low, high]}, ...}``; a value is None when undefined.
    """
    excluded = set(exclude_systems)
    rated = [r for r in campaign_rated_outputs(campaign) if r.system not in excluded]
    stored = dict(
        LensScore.objects.filter(version=version, output_id__in=[r.output_pk for r in rated]).values_list(
            "output_id", "z"
        )
    )
    missing = [r.output_pk for r in rated if r.output_pk not in stored]
    if missing:
        campaign_lens_score_outputs(campaign=campaign, version=version, output_ids=missing)
        stored.update(
            LensScore.objects.filter(version=version, output_id__in=missing).values_list("output_id", "z")
        )
    scored = [r for r in rated if r.output_pk in stored]
    items = [
        TauItem(source=r.source, output=str(r.output_pk), category=r.category, metric=stored[r.output_pk],
                ratings=r.ratings)
        for r in scored
    ]
    tau = kendall_tau_like_ci(items, threshold=threshold, n_boot=n_boot, seed=seed)
    with_z = [(r, z) for r in scored if (z := r.mean_z) is not None]
    corr = metric_correlation_ci(
        [r.source for r, _ in with_z], [stored[r.output_pk] for r, _ in with_z], [z for _, z in with_z],
        n_boot=n_boot, seed=seed,
    )
    keys = [*TAU_KEYS, *sorted(k for k in tau if k not in TAU_KEYS)]
    empty = {"value": None, "ci_low": None, "ci_high": None, "concordant": 0, "discordant": 0}
    cells = {key: tau.get(key, empty) for key in keys}
    kendall_ci = {key: _interval(cell["ci_low"], cell["ci_high"]) for key, cell in cells.items()}
    pearson_ci = _interval(corr["pearson"]["ci_low"], corr["pearson"]["ci_high"])
    spearman_ci = _interval(corr["spearman"]["ci_low"], corr["spearman"]["ci_high"])
    return {
        "metric": "lens",
        "version": version.pk,
        "campaign": campaign.slug,
        "outputs": len(scored),
        "outputs_not_scored": len(rated) - len(scored),
        "excluded_systems": sorted(excluded),
        "threshold": threshold,
        "n_boot": n_boot,
        "kendall": {key: cell["value"] for key, cell in cells.items()},
        "kendall_ci": kendall_ci,
        "pairs": {key: {"concordant": cell["concordant"], "discordant": cell["discordant"]}
                  for key, cell in cells.items()},
        "pearson": corr["pearson"]["value"],
        "pearson_ci": pearson_ci,
        "spearman": corr["spearman"]["value"],
        "spearman_ci": spearman_ci,
        "correlation_outputs": corr["n"],
        # The same intervals grouped as the JSON names them: one sibling key for every figure's CI.
        "ci": {"kendall": kendall_ci, "pearson": pearson_ci, "spearman": spearman_ci},
        "categories": list(CATEGORIES),
    }
