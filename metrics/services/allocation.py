"""Adaptive allocation's use of a campaign's stored metric scores.

``annotation`` hands out an adaptive campaign's slots by source priorities (``annotation.services.allocation``)
and the simulator replays a campaign as a study (``evaluation.services.allocation.campaign_study``), but
neither can read metric scores, which live here. :func:`campaign_allocation_scores` is the one reading of them
(the newest signature of each of :data:`ALLOCATION_METRICS`, oriented so that higher is better);
:func:`campaign_source_priorities` (registered as the priority provider in ``metrics.apps``) and
:func:`campaign_allocation_study` both use it.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotation.models import Campaign, Output
from evaluation.allocation import Study
from evaluation.services.allocation import campaign_study
from metrics.selectors import campaign_output_metric_scores

ALLOCATION_METRICS: tuple[str, ...] = ("sari", "bleu", "fkgl")
"""The metrics the adaptive policy was chosen with on SimpEval_past (experiments/README.md, "Adaptive
allocation"); whichever of them are stored for a campaign are used."""


def _higher_is_better(metric: str) -> bool:
    from metrics.suite import create_metric  # the registry, only when a campaign has scores to orient

    return bool(create_metric(metric).higher_is_better)


def campaign_allocation_scores(campaign: Campaign) -> dict[str, dict[int, float]]:
    """``{metric: {output pk: score}}`` for the stored :data:`ALLOCATION_METRICS` of the campaign (newest
    signature of each; FKGL, lower is simpler, negated); a metric with no stored score is left out."""
    scores: dict[str, dict[int, float]] = {}
    for metric in ALLOCATION_METRICS:
        values = campaign_output_metric_scores(campaign, metric)
        if values:
            sign = 1.0 if _higher_is_better(metric) else -1.0
            scores[metric] = {pk: sign * value for pk, value in values.items()}
    return scores


def campaign_allocation_study(campaign: Campaign) -> Study:
    """The campaign's counting ratings as a :class:`Study`, with its allocation metrics' scores where it has
    them (none stored: a study without metric scores)."""
    return campaign_study(campaign, metric_scores=campaign_allocation_scores(campaign) or None)


def campaign_source_priorities(campaign: Campaign) -> dict[int, float] | None:
    """``{source pk: priority}`` for every non-tutorial source of the campaign, by the one rule of the
    allocation core (``metric_variance_priority``, plus its floor) over :func:`campaign_allocation_scores`
    (attention items and repeated sources left out; a repeat gets its original's priority); None when none
    of the allocation metrics is stored."""
    import numpy as np  # the numeric core only when a campaign is adaptive and scored

    from evaluation.allocation.policies import PRIORITY_FLOOR, metric_variance_priority

    scores = campaign_allocation_scores(campaign)
    if not scores:
        return None
    where = {
        pk: (source_id, system_id)
        for pk, source_id, system_id in Output.objects.filter(
            source__campaign=campaign, source__is_tutorial=False, source__repeat_of=None, qc_kind="",
        ).values_list("pk", "source_id", "system_id")
    }
    every = list(campaign.sources.filter(is_tutorial=False).order_by("order", "id").values_list("pk", "repeat_of"))
    sources = [pk for pk, repeat_of in every if repeat_of is None]
    metrics = sorted(scores)
    systems = sorted({system for _, system in where.values()})
    s_at = {pk: i for i, pk in enumerate(sources)}
    k_at = {pk: i for i, pk in enumerate(systems)}
    grid = np.full((len(metrics), len(sources), len(systems)), np.nan)
    for m, metric in enumerate(metrics):
        for output_id, value in scores[metric].items():
            place = where.get(output_id)
            if place is not None and place[0] in s_at:
                grid[m, s_at[place[0]], k_at[place[1]]] = value
    priority = metric_variance_priority(grid) + PRIORITY_FLOOR
    out = {pk: float(priority[i]) for i, pk in enumerate(sources)}
    for pk, repeat_of in every:  # a repeated source (quality control) comes with its original
        if repeat_of is not None:
            out[pk] = out.get(repeat_of, PRIORITY_FLOOR)
    return out


def campaign_allocation_after_scoring(*, campaign: Campaign, metrics: Iterable[str]) -> None:
    """After ``metrics`` were scored for the campaign: an adaptive campaign's priorities are recomputed when
    one of them is an allocation metric (the free slots' order follows at once)."""
    from annotation.services.allocation import campaign_allocation_refresh

    fresh = Campaign.objects.filter(pk=campaign.pk).values_list("allocation", flat=True).first()
    if fresh != Campaign.Allocation.ADAPTIVE or not set(metrics) & set(ALLOCATION_METRICS):
        return
    campaign.allocation = fresh
    campaign_allocation_refresh(campaign=campaign)
