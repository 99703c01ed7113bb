"""Allocation simulations of a live campaign: its ratings and stored metric scores as a simulator study.

:func:`campaign_allocation_study` is :func:`evaluation.services.allocation.campaign_study` with the
campaign's stored automatic metric scores (``MetricScore``: SARI, BLEU, FKGL, newest signature of each) that
metric-guided policies read; this app owns those scores, so the adapter that reads them lives here.
"""

from __future__ import annotations

from annotation.models import Campaign
from evaluation.allocation import Study
from evaluation.services.allocation import campaign_study
from metrics.selectors import campaign_output_metric_scores

ALLOCATION_METRICS: tuple[str, ...] = ("sari", "bleu", "fkgl")
"""The stored metrics a metric-guided policy reads, as the research experiment does (higher is better after
orienting: FKGL, lower is simpler, is negated)."""


def _higher_is_better(metric: str) -> bool:
    from metrics.suite import create_metric  # the registry, only when a campaign has scores to orient

    return bool(create_metric(metric).higher_is_better)


def campaign_allocation_study(campaign: Campaign) -> Study:
    """The campaign's counting ratings as a :class:`Study`, with the stored scores of ``ALLOCATION_METRICS``
    where the campaign has them (a metric with no stored score is left out; none: no metric scores)."""
    scores: dict[str, dict[int, float]] = {}
    for metric in ALLOCATION_METRICS:
        values = campaign_output_metric_scores(campaign, metric)
        if values:
            sign = 1.0 if _higher_is_better(metric) else -1.0
            scores[metric] = {pk: sign * value for pk, value in values.items()}
    return campaign_study(campaign, metric_scores=scores or None)
