"""Exclusion ends an annotator's work on the campaign (issue 43, defect 6): the service's side."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.models import AnnotatorExclusion, Assignment, Slot
from annotation.services.assignments import assignment_claim_next, campaign_add_annotators
from core.errors import ServiceError
from evaluation.services.quality import (
    annotator_exclude,
    annotator_reinclude,
    campaign_quality,
    crowd_end_choice,
    quality_rows,
)
from tests.factories import campaign_with_outputs, submit_assignment

pytestmark = pytest.mark.django_db


def test_excluding_releases_what_the_annotator_held_to_the_others(researcher: Any, make_user: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=4, ratings_per_output=1, batch_size=2)
    first, second = make_user("first"), make_user("second")
    campaign_add_annotators(campaign=campaign, annotators=[first, second])
    mine = list(Assignment.objects.filter(annotator=first).order_by("id"))
    assert len(mine) == 2
    submit_assignment(mine[0])
    done = annotator_exclude(campaign=campaign, annotator=first, by=researcher, reason="careless")
    assert done.released == 1 and done.exclusion.crowd_end == AnnotatorExclusion.CrowdEnd.EXCLUDED
    mine[1].refresh_from_db()
    assert mine[1].status == "released"
    assert Assignment.objects.get(pk=mine[0].pk).status == "submitted"  # kept, for the record
    # The released source is free for anyone but the excluded annotator (the other one's batch is full).
    assert Slot.objects.filter(campaign=campaign, assignment__isnull=True).count() == 1
    third = make_user("third")
    campaign_add_annotators(campaign=campaign, annotators=[third])
    assert Assignment.objects.filter(annotator=third, source=mine[1].source).exists()
    # Included again: they may take work again.
    annotator_reinclude(campaign=campaign, annotator=first, by=researcher)
    assignment_claim_next(campaign=campaign, annotator=first)


def test_the_crowd_end_is_one_of_the_choices(researcher: Any, make_user: Any) -> None:
    assert crowd_end_choice(None) == crowd_end_choice("") == "excluded"
    assert crowd_end_choice("code") == "code"
    for bad in ("pay", 1, ["code"]):
        with pytest.raises(ServiceError) as refused:
            crowd_end_choice(bad)
        assert refused.value.field == "crowd_end"
    campaign = campaign_with_outputs(owners=[researcher], ratings_per_output=1)
    annotator = make_user("someone")
    campaign_add_annotators(campaign=campaign, annotators=[annotator])
    annotator_exclude(campaign=campaign, annotator=annotator, by=researcher, crowd_end="code")
    (row,) = quality_rows(campaign_quality(campaign=campaign))
    assert row["excluded"] and row["crowd_end"] == "code"
