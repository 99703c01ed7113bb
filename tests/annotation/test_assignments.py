from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Slot
from annotation.services.assignments import (
    assignment_claim_next,
    campaign_add_annotators,
    campaign_distribute,
    campaign_remove_annotator,
)
from tests.concurrency import at_once

pytestmark = pytest.mark.django_db


def live(campaign):
    return Assignment.objects.filter(campaign=campaign).exclude(status=Assignment.Status.RELEASED)


def test_distribution_fills_every_slot_balanced_and_never_twice(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators)
    rows = list(live(demo_campaign).values_list("annotator_id", "source_id"))
    # 4 sources x 2 wanted ratings, 3 annotators.
    assert len(rows) == 8
    assert len(set(rows)) == len(rows)  # nobody has a source twice
    per_source = Counter(s for _, s in rows)
    assert set(per_source.values()) == {2}
    load = Counter(a for a, _ in rows)
    assert max(load.values()) - min(load.values()) <= 1
    assert not Slot.objects.filter(source__campaign=demo_campaign, assignment__isnull=True).exists()


def test_too_few_annotators_leave_slots_free(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:1])
    assert live(demo_campaign).count() == 4  # one per source, never twice
    assert Slot.objects.filter(assignment__isnull=True).count() == 4


def test_removed_annotator_work_goes_back_to_pool(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    first = annotators[0]
    done = live(demo_campaign).filter(annotator=first).first()
    done.status = Assignment.Status.SUBMITTED
    done.save()
    released = campaign_remove_annotator(campaign=demo_campaign, annotator=first)
    assert released == 3
    assert live(demo_campaign).filter(annotator=first).count() == 1  # the finished one stays
    # The newcomer picks up the released sources.
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[2:])
    assert live(demo_campaign).filter(annotator=annotators[2]).count() == 3
    assert not Slot.objects.filter(assignment__isnull=True).exists()


def test_idle_assignments_are_released(demo_campaign, annotators):
    demo_campaign.idle_release_minutes = 30
    demo_campaign.save()
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    stale = live(demo_campaign).filter(annotator=annotators[0])
    stale.update(last_activity_at=timezone.now() - timedelta(hours=2), status=Assignment.Status.IN_PROGRESS)
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[2:])
    assert not live(demo_campaign).filter(annotator=annotators[0]).exists()
    assert live(demo_campaign).filter(annotator=annotators[2]).count() == 4


def test_claim_next_returns_current_then_pool(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:1])
    a = assignment_claim_next(campaign=demo_campaign, annotator=annotators[0])
    assert a is not None and a.status == Assignment.Status.ASSIGNED
    live(demo_campaign).filter(annotator=annotators[0]).update(status=Assignment.Status.SUBMITTED)
    # All of this annotator's sources are done; the free slots are of sources they already have.
    assert assignment_claim_next(campaign=demo_campaign, annotator=annotators[0]) is None


def test_claims_follow_source_order_whatever_order_the_slots_were_made_in(demo_campaign, annotators):
    """Slots carry their source's campaign and order; work is handed out by source order, then slot, even
    for slots added later (a raised ratings_per_output) to sources that come first."""
    from annotation.models import CampaignAnnotator
    from annotation.services.assignments import campaign_ensure_slots

    demo_campaign.ratings_per_output = 1
    demo_campaign.save()
    campaign_ensure_slots(campaign=demo_campaign)
    demo_campaign.ratings_per_output = 2
    demo_campaign.save()
    campaign_ensure_slots(campaign=demo_campaign)  # the second slot of each source: higher ids
    sources = list(demo_campaign.sources.filter(is_tutorial=False).order_by("order", "id"))
    for slot in Slot.objects.filter(source__campaign=demo_campaign).select_related("source"):
        assert (slot.campaign_id, slot.position) == (demo_campaign.pk, slot.source.order)
    claimed = []
    for user in annotators[:2]:
        CampaignAnnotator.objects.create(campaign=demo_campaign, annotator=user)
        for _ in sources:
            got = assignment_claim_next(campaign=demo_campaign, annotator=user)
            claimed.append((user.pk, got.source_id))
            got.status = Assignment.Status.SUBMITTED
            got.save()
    # Each annotator goes through the sources in order; the second takes each source's other slot.
    assert claimed == [(u.pk, s.pk) for u in annotators[:2] for s in sources]
    assert not Slot.objects.filter(source__campaign=demo_campaign, assignment__isnull=True).exists()


def _import_study(slug: str, sources: int) -> Any:
    """A study of ``sources`` sources (one output each) imported as a researcher would, two ratings each."""
    import io
    import json

    from annotation.models import Campaign
    from annotation.services.imports import campaign_import

    lines = [json.dumps({"id": f"s{i}", "source": f"Sentence {i} is long.", "outputs": [
        {"system": "sys", "text": f"Sentence {i}."}]}) for i in range(sources)]
    campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="study.jsonl",
                    campaign_slug=slug, analyse=False)
    return Campaign.objects.get(slug=slug)


def test_small_writes_ask_for_no_analyze(demo_campaign, django_capture_on_commit_callbacks):
    from annotation.services.assignments import campaign_ensure_slots

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        demo_campaign.ratings_per_output += 1
        demo_campaign.save()
        sources = demo_campaign.sources.filter(is_tutorial=False).count()
        assert campaign_ensure_slots(campaign=demo_campaign) == sources > 0  # one more slot per source
    assert callbacks == []


def test_a_claim_reads_only_the_rows_it_needs_right_after_a_large_import(
    annotators, django_capture_on_commit_callbacks,
):
    """Right after an import the planner knows nothing of the new campaign, and each claim's reads (the
    first free slot, the annotator's unfinished assignment, the idle ones to release, whether the campaign
    has tutorials) must not read the campaign's other slots, finished assignments or other sources. The
    import asks for ANALYZE of the sources and slots it wrote; the assignments, which pile up later, are
    read through an index that holds the status asked for."""
    from annotation.models import Slot
    from annotation.selectors import user_shape
    from annotation.services.assignments import _annotator_lock, _current_assignment, _free_slots, _idle

    if connection.vendor != "postgresql":
        pytest.skip("plans of PostgreSQL's (SQLite's planner takes the indexes without statistics)")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        campaign = _import_study("bulk", 1000)
    assert len(callbacks) == 2  # the sources' ANALYZE and the slots'
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [Slot._meta.db_table])
        assert cursor.fetchone()[0] >= 1000
    sources = list(campaign.sources.all())
    Assignment.objects.bulk_create(  # finished work the statistics have not seen
        Assignment(campaign=campaign, source=source, annotator=user, status=Assignment.Status.SUBMITTED)
        for source in sources[:600] for user in annotators[:2])
    user = annotators[0]
    plans = {
        "slot": _free_slots(campaign)[:1].explain(),
        "idle": _idle(campaign, timezone.now()).explain(),
        "current": _current_assignment(campaign_id=campaign.pk, annotator_id=user.pk).explain(),
        "tutorials": _annotator_lock(user_shape(user), user_id=user.pk, campaign_id=campaign.pk).explain(),
    }
    conditions = {name: [line for line in plan.splitlines() if "Index Cond" in line] for name, plan in plans.items()}
    assert "slot_free_in_order" in plans["slot"] and "Sort" not in plans["slot"], plans["slot"]
    assert any("status" in line for line in conditions["idle"]), plans["idle"]
    assert any("status" in line for line in conditions["current"]), plans["current"]
    assert any("is_tutorial" in line for line in conditions["tutorials"]), plans["tutorials"]


@pytest.mark.django_db(transaction=True)
def test_two_annotators_claiming_at_once_never_share_a_slot(demo_campaign, annotators):
    """Row locks (SELECT ... FOR UPDATE SKIP LOCKED) keep concurrent claims apart. PostgreSQL only."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks (SQLite serialises writers instead)")
    from annotation.models import CampaignAnnotator

    for user in annotators:
        CampaignAnnotator.objects.create(campaign=demo_campaign, annotator=user)
    from annotation.services.assignments import campaign_ensure_slots

    campaign_ensure_slots(campaign=demo_campaign)

    def claim_all(user):
        for _ in range(4):
            got = assignment_claim_next(campaign=demo_campaign, annotator=user)
            if got is None:
                break
            Assignment.objects.filter(pk=got.pk).update(status=Assignment.Status.SUBMITTED)

    errors = at_once(claim_all, annotators)
    assert not errors
    taken = list(Slot.objects.filter(assignment__isnull=False).values_list("assignment_id", flat=True))
    assert len(taken) == len(set(taken)) == 8
    pairs = list(live(demo_campaign).values_list("annotator_id", "source_id"))
    assert len(pairs) == len(set(pairs)) == 8


def test_distribute_is_idempotent(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators)
    assert campaign_distribute(campaign=demo_campaign) == []


@pytest.mark.django_db(transaction=True)
def test_one_annotator_asking_for_next_in_parallel_gets_one_assignment(demo_campaign, annotators):
    """Double-click, two tabs: every caller gets the same assignment, never two, never a 500. PostgreSQL only."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL concurrency (SQLite serialises writing transactions with BEGIN IMMEDIATE)")
    from annotation.models import CampaignAnnotator
    from annotation.services.assignments import campaign_ensure_slots

    user = annotators[0]
    CampaignAnnotator.objects.create(campaign=demo_campaign, annotator=user)
    campaign_ensure_slots(campaign=demo_campaign)

    def claim_at_once(callers: int) -> tuple[list[int | None], list[BaseException]]:
        got: list[int | None] = []

        def claim(_: int) -> None:
            assignment = assignment_claim_next(campaign=demo_campaign, annotator=user)
            got.append(assignment.pk if assignment else None)

        errors = at_once(claim, range(callers))
        return got, errors

    for _ in range(3):
        got, errors = claim_at_once(8)
        assert not errors, errors
        assert len(set(got)) == 1 and got[0] is not None, got
        unfinished = live(demo_campaign).filter(annotator=user).exclude(status=Assignment.Status.SUBMITTED)
        assert list(unfinished.values_list("pk", flat=True)) == [got[0]]
        unfinished.update(status=Assignment.Status.SUBMITTED)
