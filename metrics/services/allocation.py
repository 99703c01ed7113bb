"""The source priorities of adaptive campaigns, from their stored metric scores.

``annotation`` hands out an adaptive campaign's slots by these priorities (``annotation.services.allocation``)
but cannot read metric scores, which live here: this module is registered as its priority provider (see
``metrics.apps``) and asks it to recompute whenever a campaign's allocation metrics are scored.
"""

from __future__ import annotations

from collections.abc import Iterable

from annotation.models import Campaign
from metrics.models import MetricScore

ALLOCATION_METRICS = ("sari", "bleu", "fkgl")
"""The metrics the adaptive policy was chosen with on SimpEval_past (experiments/README.md, "Adaptive
allocation"); whichever of them are stored for a campaign are used."""


def campaign_source_priorities(campaign: Campaign) -> dict[int, float] | None:
    """``{source pk: priority}`` for every non-tutorial source of the campaign, by the one rule of the
    allocation core (``metric_variance_priority``, plus its floor) over the stored scores of
    :data:`ALLOCATION_METRICS` (attention items and repeated sources left out; a repeat gets its original's
    priority); None when none of them is stored."""
    import numpy as np  # the numeric core only when a campaign is adaptive and scored

    from evaluation.allocation.policies import PRIORITY_FLOOR, metric_variance_priority

    rows = list(
        MetricScore.objects.filter(
            output__source__campaign=campaign, output__source__is_tutorial=False, output__source__repeat_of=None,
            output__qc_kind="", metric__in=ALLOCATION_METRICS,
        ).values_list("metric", "output__source_id", "output__system_id", "value")
    )
    if not rows:
        return None
    every = list(campaign.sources.filter(is_tutorial=False).order_by("order", "id").values_list("pk", "repeat_of"))
    sources = [pk for pk, repeat_of in every if repeat_of is None]
    metrics = sorted({metric for metric, _, _, _ in rows})
    systems = sorted({system for _, _, system, _ in rows})
    m_at = {name: i for i, name in enumerate(metrics)}
    s_at = {pk: i for i, pk in enumerate(sources)}
    k_at = {pk: i for i, pk in enumerate(systems)}
    scores = np.full((len(metrics), len(sources), len(systems)), np.nan)
    for metric, source_id, system_id, value in rows:
        if source_id in s_at:
            scores[m_at[metric], s_at[source_id], k_at[system_id]] = value
    priority = metric_variance_priority(scores) + PRIORITY_FLOOR
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
