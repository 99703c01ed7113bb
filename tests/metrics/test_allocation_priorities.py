"""An adaptive campaign's source priorities come from its stored SARI/BLEU/FKGL scores through the allocation
core's one rule, and are recomputed when the campaign's metric scores are computed."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.models import Campaign, Output, Slot
from annotation.services.assignments import campaign_allocation_set, campaign_ensure_slots
from evaluation.allocation.policies import PRIORITY_FLOOR, metric_variance_priority
from metrics.models import MetricScore
from metrics.services.allocation import campaign_source_priorities
from metrics.services.metric_registry import metrics_get
from metrics.services.metric_scores import campaign_metric_scores_compute
from tests.factories import campaign_with_outputs

pytestmark = pytest.mark.django_db


def _first_keys(campaign: Campaign) -> dict[int, float]:
    return dict(Slot.objects.filter(campaign=campaign, index=0).values_list("source_id", "allocation_key"))


def test_scoring_an_adaptive_campaign_reorders_its_free_slots_by_metric_variance() -> None:
    campaign = campaign_with_outputs(slug="scored", n_sources=4, ratings_per_output=2)
    for i, output in enumerate(Output.objects.filter(source__campaign=campaign).order_by("source__order", "pk")):
        output.text = " ".join(["word"] * (3 + (i % 3) * (1 + output.source.order)))  # spreads differ by source
        output.save()
    campaign_ensure_slots(campaign=campaign)
    assert campaign_source_priorities(campaign) is None  # no scores yet
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    assert set(_first_keys(campaign).values()) == {1.0}  # round-robin until scores come
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl"))
    keys = _first_keys(campaign)
    assert len(set(keys.values())) == 4  # now by the sources' spread
    sources = list(campaign.sources.order_by("order", "id").values_list("pk", flat=True))
    systems = sorted(set(Output.objects.filter(source__campaign=campaign).values_list("system_id", flat=True)))
    scores = np.full((1, len(sources), len(systems)), np.nan)
    for source_id, system_id, value in MetricScore.objects.filter(metric="fkgl").values_list(
            "output__source_id", "output__system_id", "value"):
        scores[0, sources.index(source_id), systems.index(system_id)] = value
    expected = metric_variance_priority(scores) + PRIORITY_FLOOR  # the simulator's rule
    assert [keys[pk] for pk in sources] == pytest.approx(list(expected))
    assert max(keys, key=keys.__getitem__) == sources[-1]  # the widest spread first


def test_a_uniform_campaign_keeps_source_order_when_scored() -> None:
    campaign = campaign_with_outputs(slug="plain", n_sources=3, ratings_per_output=2)
    campaign_ensure_slots(campaign=campaign)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl"))
    assert set(Slot.objects.filter(campaign=campaign).values_list("allocation_key", flat=True)) == {0.0}


def test_a_repeated_source_gets_its_originals_priority_and_counts_once() -> None:
    from tests.factories import SourceFactory

    campaign = campaign_with_outputs(slug="repeats", n_sources=3, ratings_per_output=1)
    outputs = list(Output.objects.filter(source__campaign=campaign).select_related("source"))
    for output in outputs:
        MetricScore.objects.create(output=output, metric="sari", signature="t",
                                   value=output.row_index * (1 + output.source.order))
    original = campaign.sources.get(order=2)
    repeat = SourceFactory.create(campaign=campaign, external_id="again", order=9, repeat_of=original)
    before = campaign_source_priorities(campaign)
    assert before is not None and before[repeat.pk] == before[original.pk]
    for output in outputs:  # the repeat's copies scored wildly differently change nothing
        if output.source_id == original.pk:
            copy = Output.objects.create(source=repeat, system=output.system, unit=output.unit, text=output.text)
            MetricScore.objects.create(output=copy, metric="sari", signature="t", value=1000.0 * output.row_index)
    assert campaign_source_priorities(campaign) == before
