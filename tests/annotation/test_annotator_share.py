"""One rule for how much of a campaign is an annotator's (``annotation.selectors.annotator_share``): the page
after a submit, the home page, "sentence k of n" and the live event agree, and "m left" promises only work
that exists."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotation.models import Assignment
from annotation.selectors import (
    annotator_share,
    assignment_position,
    assignment_progress_after_submit,
    campaign_progress_for_annotator,
)
from annotation.services import events
from annotation.services.assignments import campaign_add_annotators, campaign_release_idle
from tests.factories import campaign_with_outputs, submit_assignment

pytestmark = pytest.mark.django_db


def _every_count(campaign: Any, annotator: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    held = list(Assignment.objects.filter(annotator=annotator).exclude(status="released").order_by("id"))
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(events, "broadcast", lambda group, payload: sent.append(payload))
    submitted = [a for a in held if a.status == "submitted"]
    events.annotation_submitted(annotation_id=submitted[-1].annotations.latest("id").pk)
    [home] = campaign_progress_for_annotator(annotator=annotator)
    return {"after_submit": assignment_progress_after_submit(assignment=submitted[-1])["total"],
            "home": home["total"], "position": assignment_position(assignment=held[0])[1],
            "event": sent[0]["annotator_total"]}


def test_a_batch_larger_than_the_work_promises_nothing_more(annotators: list[Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The review's case: batch 5, two sources there. The page after a submit said "1 of 5 done, 4 left"
    while the home page said 1 / 2."""
    campaign = campaign_with_outputs(n_sources=2, ratings_per_output=1, batch_size=5)
    ann = annotators[0]
    campaign_add_annotators(campaign=campaign, annotators=[ann])
    first = Assignment.objects.filter(annotator=ann).order_by("id").first()
    assert first is not None
    submit_assignment(first)
    assert _every_count(campaign, ann, monkeypatch) == {"after_submit": 2, "home": 2, "position": 2, "event": 2}
    assert annotator_share(campaign=campaign, annotator_id=ann.pk) == {"done": 1, "total": 2, "left": 1,
                                                                       "more": False}


@pytest.mark.parametrize("batch_size", [None, 2])
def test_free_work_counts_up_to_the_batch_and_an_open_pool_says_more_may_come(
        annotators: list[Any], monkeypatch: pytest.MonkeyPatch, batch_size: int | None) -> None:
    campaign = campaign_with_outputs(n_sources=2, ratings_per_output=1, batch_size=batch_size,
                                     idle_release_minutes=5)
    ann = annotators[0]
    campaign_add_annotators(campaign=campaign, annotators=[ann])
    first, second = Assignment.objects.filter(annotator=ann).order_by("id")
    submit_assignment(first)
    Assignment.objects.filter(pk=second.pk).update(assigned_at=timezone.now() - timedelta(minutes=10))
    assert campaign_release_idle(campaign=campaign) == 1  # its slot is free again, theirs to claim
    share = annotator_share(campaign=campaign, annotator_id=ann.pk)
    if batch_size is None:  # an open pool: nothing is promised, but they are told more may come
        assert share == {"done": 1, "total": 1, "left": 0, "more": True}
    else:
        assert share == {"done": 1, "total": 2, "left": 1, "more": False}
    counts = _every_count(campaign, ann, monkeypatch)
    assert set(counts.values()) == {share["total"]}
