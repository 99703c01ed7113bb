"""A campaign's allocation setting: adaptive campaigns hand out sources by the recommended policy
(``priority / (1 + screens handed out)``, round-robin without metric scores), uniform ones in source order,
and ``next`` keeps exactly-once, redundancy caps and blinding under concurrent annotators."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Campaign, CampaignAnnotator, Output, RatingUnit, Slot, System
from annotation.services.allocation import campaign_allocation_refresh
from annotation.services.assignments import (
    assignment_claim_next,
    campaign_allocation_set,
    campaign_ensure_slots,
    campaign_release_idle,
)
from metrics.models import MetricScore
from tests.concurrency import at_once
from tests.factories import campaign_with_outputs, public_id

pytestmark = pytest.mark.django_db

# Per source: how far apart the metrics score its three systems. Variances within a factor of two of each
# other, so the policy's order is: every source's first screen (widest spread first), then every second.
SPREADS = {"s0": 1.0, "s1": 1.3, "s2": 1.1, "s3": 1.2}
BY_SPREAD = ["s1", "s3", "s2", "s0"]


def _campaign(slug: str = "adapt", *, scored: bool = True, ratings: int = 2, **fields: Any) -> Campaign:
    campaign = campaign_with_outputs(slug=slug, n_sources=len(SPREADS), ratings_per_output=ratings, **fields)
    if scored:
        for output in Output.objects.filter(source__campaign=campaign).select_related("source"):
            spread = SPREADS[output.source.external_id] * output.row_index
            MetricScore.objects.create(output=output, metric="sari", signature="t", value=40 + 10 * spread)
            MetricScore.objects.create(output=output, metric="fkgl", signature="t", value=8 - spread)
            MetricScore.objects.create(output=output, metric="bertscore", signature="t",  # not an allocation metric
                                       value=0.9 if output.source.external_id == "s0" else 0.1 * output.row_index)
    campaign_ensure_slots(campaign=campaign)
    return campaign


def _claim_in_turn(campaign: Campaign, users: list[Any], rounds: int) -> list[str]:
    """Each user in turn claims and finishes one source, ``rounds`` times; the sources handed out."""
    for user in users:
        CampaignAnnotator.objects.get_or_create(campaign=campaign, annotator=user)
    handed: list[str] = []
    for _ in range(rounds):
        for user in users:
            got = assignment_claim_next(campaign=campaign, annotator=user)
            if got is None:
                continue
            handed.append(got.source.external_id)
            Assignment.objects.filter(pk=got.pk).update(status=Assignment.Status.SUBMITTED)
    return handed


def test_uniform_hands_out_in_source_order_and_a_source_twice_before_the_next(annotators: list[Any]) -> None:
    campaign = _campaign("uni")
    assert campaign.allocation == Campaign.Allocation.UNIFORM
    assert set(Slot.objects.filter(campaign=campaign).values_list("allocation_key", flat=True)) == {0.0}
    assert _claim_in_turn(campaign, annotators[:2], 4) == ["s0", "s0", "s1", "s1", "s2", "s2", "s3", "s3"]


def test_adaptive_without_metric_scores_is_round_robin(annotators: list[Any]) -> None:
    campaign = _campaign("rr", scored=False)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    # every source once before any twice (ties in source order), where uniform gives s0 to both first
    handed = _claim_in_turn(campaign, annotators[:2], 4)
    assert handed[:4] == ["s0", "s1", "s2", "s3"] and sorted(handed[4:]) == handed[:4]


def test_adaptive_hands_out_the_sources_the_metrics_spread_most_first(annotators: list[Any]) -> None:
    campaign = _campaign()
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    handed = _claim_in_turn(campaign, annotators[:2], 4)
    assert handed[:4] == BY_SPREAD  # widest first; each source's second screen after every first
    assert sorted(handed[4:]) == sorted(BY_SPREAD)
    assert not Slot.objects.filter(campaign=campaign, assignment__isnull=True).exists()  # the cap: 2 each


def test_keys_follow_priority_over_one_plus_screens_handed_out(annotators: list[Any]) -> None:
    """A source with more than twice another's priority gets its second screen before the other's first."""
    campaign = _campaign(ratings=3)
    campaign_allocation_refresh(campaign=campaign)  # uniform: nothing to do
    campaign.allocation = Campaign.Allocation.ADAPTIVE
    sources = {s.external_id: s.pk for s in campaign.sources.all()}
    campaign_allocation_refresh(campaign=campaign, priorities={sources["s0"]: 1.0, sources["s1"]: 3.0,
                                                               sources["s2"]: 0.0, sources["s3"]: 0.0})
    keys = {(slot.source.external_id, slot.index): slot.allocation_key
            for slot in Slot.objects.filter(campaign=campaign).select_related("source")}
    assert keys[("s1", 0)] == 3.0 and keys[("s1", 1)] == 1.5 and keys[("s1", 2)] == 1.0
    assert keys[("s0", 0)] == 1.0 and keys[("s0", 1)] == 0.5
    assert _claim_in_turn(campaign, annotators, 1) == ["s1", "s1", "s0"]  # key ties: source order


def test_a_slot_put_back_is_its_sources_next_screen(annotators: list[Any]) -> None:
    """Freed, a slot's key is priority / (1 + the source's screens still handed out), not the key it was taken
    with, and the source's other free slots keep theirs."""
    campaign = _campaign(scored=False, ratings=3)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    first, second, third = annotators
    assert _claim_in_turn(campaign, [first, second], 3) == ["s0", "s1", "s2", "s3", "s1", "s0"]
    held = Assignment.objects.get(annotator=second, source__external_id="s1")  # s1's slot 0, taken at key 1
    Assignment.objects.filter(pk=held.pk).update(  # left idle: it goes back to the pool
        status=Assignment.Status.ASSIGNED, last_activity_at=timezone.now() - timedelta(hours=1))
    campaign.idle_release_minutes = 5
    campaign.save()
    assert campaign_release_idle(campaign=campaign) == 1
    free = {(slot.index, slot.allocation_key)
            for slot in Slot.objects.filter(source__external_id="s1", campaign=campaign, assignment__isnull=True)}
    assert free == {(0, 1 / 2), (2, 1 / 3)}  # s1 still has one screen out (first's)
    assert _claim_in_turn(campaign, [third], 1) == ["s1"]  # ties at 1/2 with s2, s3: source order


def test_switching_back_to_uniform_restores_source_order(annotators: list[Any]) -> None:
    campaign = _campaign()
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    assert Slot.objects.filter(campaign=campaign, allocation_key__gt=0).count() == 8
    campaign_allocation_set(campaign=campaign, allocation="uniform")
    assert set(Slot.objects.filter(campaign=campaign).values_list("allocation_key", flat=True)) == {0.0}
    assert _claim_in_turn(campaign, annotators[:2], 1) == ["s0", "s0"]


def test_annotators_added_to_an_adaptive_campaign_get_nothing_dealt_and_next_follows_the_policy(
    annotators: list[Any],
) -> None:
    """Added from the dashboard or the API (``campaign_add_annotators``), members of an adaptive campaign hold
    no sources in advance: dealt out, each would hold every source and work through them in source order."""
    from annotation.services.assignments import campaign_add_annotators

    campaign = _campaign()
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    assert campaign_add_annotators(campaign=campaign, annotators=annotators[:2]) == []
    assert not Assignment.objects.filter(campaign=campaign).exists()
    handed = _claim_in_turn(campaign, annotators[:2], 4)
    assert handed[:4] == BY_SPREAD and sorted(handed[4:]) == sorted(BY_SPREAD)
    uniform = _campaign("dealt")
    assert len(campaign_add_annotators(campaign=uniform, annotators=annotators[:2])) == 8  # uniform: dealt


def test_switching_a_staffed_campaign_puts_unopened_work_back_and_back_deals_it(annotators: list[Any]) -> None:
    """Uniform to adaptive: the sources dealt but never opened go back into the pool (an opened one stays);
    adaptive to uniform: the free slots are dealt to the members again."""
    from annotation.services.assignments import campaign_add_annotators

    campaign = _campaign()
    campaign_add_annotators(campaign=campaign, annotators=annotators[:2])
    opened = Assignment.objects.filter(campaign=campaign, annotator=annotators[0]).order_by("pk").first()
    assert opened is not None
    Assignment.objects.filter(pk=opened.pk).update(status=Assignment.Status.IN_PROGRESS, started_at=timezone.now())
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    assert list(Assignment.objects.filter(campaign=campaign).values_list("pk", flat=True)) == [opened.pk]
    assert Slot.objects.filter(campaign=campaign, assignment__isnull=True).count() == 7
    # the opened one keeps its slot, with the key it would have if it came back (its place in the queue)
    assert Slot.objects.get(assignment=opened).allocation_key > 0.0
    assert _claim_in_turn(campaign, [annotators[1]], 1) == [BY_SPREAD[0]]
    campaign_allocation_set(campaign=campaign, allocation="uniform")
    assert not Slot.objects.filter(campaign=campaign, assignment__isnull=True).exists()


def test_slots_added_later_to_an_adaptive_campaign_get_their_keys(annotators: list[Any]) -> None:
    campaign = _campaign(ratings=1)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    campaign.ratings_per_output = 2
    campaign.save()
    campaign_ensure_slots(campaign=campaign)
    assert not Slot.objects.filter(campaign=campaign, allocation_key=0).exists()
    handed = _claim_in_turn(campaign, annotators[:2], 4)
    assert handed[:4] == BY_SPREAD and sorted(handed[4:]) == sorted(BY_SPREAD)


def test_an_unknown_allocation_is_refused_naming_the_field() -> None:
    from core.errors import ServiceError

    campaign = _campaign(scored=False)
    with pytest.raises(ServiceError) as refused:
        campaign_allocation_set(campaign=campaign, allocation="greedy")
    assert refused.value.field == "allocation" and "uniform or adaptive" in refused.value.message
    campaign.refresh_from_db()
    assert campaign.allocation == Campaign.Allocation.UNIFORM


# --- the three interfaces -----------------------------------------------------------------------------------


def test_the_dashboard_sets_the_allocation_and_shows_an_error_next_to_the_field(researcher: Any) -> None:
    from tests.factories import login

    campaign = _campaign(owners=[researcher])
    client = login(researcher)
    url = f"/research/campaigns/{campaign.slug}/allocation-setting/"
    page = client.get(f"/research/campaigns/{campaign.slug}/")
    assert page.status_code == 200 and f'action="{url}"' in page.content.decode()
    response = client.post(url, {"allocation": "adaptive"})
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert campaign.allocation == "adaptive"
    assert Slot.objects.filter(campaign=campaign, allocation_key__gt=0).count() == 8
    bad = client.post(url, {"allocation": "greedy"})
    assert bad.status_code == 400
    body = bad.content.decode()
    assert 'id="allocation_error"' in body and "allocation must be uniform or adaptive" in body


def test_the_api_sets_and_shows_the_allocation_and_refuses_a_bad_one(researcher: Any, client_for: Any) -> None:
    campaign = _campaign(owners=[researcher])
    client = client_for(researcher)
    url = f"/api/campaigns/{campaign.slug}/"
    assert client.get(url).json()["allocation"] == "uniform"
    response = client.patch(url, {"allocation": "adaptive"}, format="json")
    assert response.status_code == 200 and response.json()["allocation"] == "adaptive"
    assert Slot.objects.filter(campaign=campaign, allocation_key__gt=0).count() == 8
    bad = client.patch(url, {"allocation": "greedy"}, format="json")
    assert bad.status_code == 400 and "allocation" in json.dumps(bad.json())
    created = client.post("/api/campaigns/", {"name": "New", "allocation": "adaptive"}, format="json")
    assert created.status_code == 201 and created.json()["allocation"] == "adaptive"


def test_the_admin_changes_the_allocation_through_the_service(admin_user: Any) -> None:
    from django.contrib.admin.sites import site

    campaign = _campaign()
    model_admin = site._registry[Campaign]
    request = type("Request", (), {"user": admin_user})()
    form_class = model_admin.get_form(request, campaign, change=True)
    data = {field: getattr(campaign, field) for field in form_class.base_fields
            if field not in ("owners",) and getattr(campaign, field, None) is not None}
    data.update(allocation="adaptive", owners=[])
    form = form_class(data=data, instance=campaign)
    assert form.is_valid(), form.errors
    obj = form.save(commit=False)
    model_admin.save_model(request, obj, form, change=True)
    campaign.refresh_from_db()
    assert campaign.allocation == "adaptive"
    assert Slot.objects.filter(campaign=campaign, allocation_key__gt=0).count() == 8  # keys set by the service


# --- concurrency (PostgreSQL) --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_adaptive_next_keeps_exactly_once_and_blinding_under_concurrent_annotators(make_user: Any) -> None:
    """Annotators claiming and submitting at once from an adaptive campaign: no slot is handed out twice, nobody
    gets a source twice, every source gets exactly its wanted ratings, each submit counts once, and what an
    annotator sees carries only their assignment's opaque ids, never system names."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks (SQLite serialises writers instead)")
    from annotation.models import Annotation
    from annotation.selectors import assignment_detail
    from tests.factories import submit_assignment

    campaign = _campaign("race", ratings=3)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    users = [make_user(f"racer{i}") for i in range(5)]
    for user in users:
        CampaignAnnotator.objects.create(campaign=campaign, annotator=user)
    seen: dict[int, dict[str, Any]] = {}

    def work(user: Any) -> None:
        while True:
            got = assignment_claim_next(campaign=campaign, annotator=user)
            if got is None:
                break
            seen[got.pk] = assignment_detail(assignment=Assignment.objects.get(pk=got.pk))
            submit_assignment(got, submit_key=f"k{got.pk}")
            submit_assignment(got, submit_key=f"k{got.pk}")  # a retried submit counts once

    errors = at_once(work, users)
    assert not errors, errors
    taken = list(Slot.objects.filter(campaign=campaign, assignment__isnull=False)
                 .values_list("assignment_id", flat=True))
    assert len(taken) == len(set(taken)) == len(SPREADS) * 3  # every slot, each once
    pairs = list(Assignment.objects.filter(campaign=campaign).values_list("annotator_id", "source_id"))
    assert len(pairs) == len(set(pairs)) == len(SPREADS) * 3  # nobody twice on a source, 3 per source
    submitted = Annotation.objects.filter(assignment__campaign=campaign, status="submitted")
    assert submitted.count() == len(SPREADS) * 3
    assert sorted(submitted.values_list("assignment_id", flat=True)) == sorted(taken)
    names = list(System.objects.filter(campaign=campaign).values_list("name", flat=True))
    for pk, detail in seen.items():
        assignment = Assignment.objects.get(pk=pk)
        units = RatingUnit.objects.filter(source=assignment.source).values_list("pk", flat=True)
        assert {u["id"] for u in detail["units"]} == {public_id(assignment, unit) for unit in units}
        dumped = json.dumps(detail)
        assert not any(f'"{name}"' in dumped for name in names)


def _adaptive_with_an_idle_claim(annotator: Any) -> Campaign:
    """An adaptive campaign (not scored) whose first screen, s0, ``annotator`` holds but left an hour ago; idle
    claims go back to the pool after 5 minutes."""
    campaign = _campaign(scored=False, ratings=2)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    assert _claim_in_turn(campaign, [annotator], 1) == ["s0"]
    Assignment.objects.filter(annotator=annotator).update(status=Assignment.Status.ASSIGNED,
                                                          last_activity_at=timezone.now() - timedelta(hours=1))
    campaign.idle_release_minutes = 5
    campaign.save()
    return campaign


def test_a_slot_freed_while_the_keys_are_recomputed_keeps_its_place(annotators: list[Any], monkeypatch: Any) -> None:
    """A refresh (after a scoring job) reads the slots, then writes their keys; a slot put back in between
    (an idle release) must not be written a taken slot's stale key and sink below every other source."""
    import annotation.services.allocation as allocation

    campaign = _adaptive_with_an_idle_claim(annotators[0])
    real = allocation._priority
    released: list[int] = []

    def priority_then_release(priorities: Any, source_id: int) -> float:
        if not released:  # after the read, before the write: the idle assignment goes back to the pool
            released.append(campaign_release_idle(campaign=campaign))
        return real(priorities, source_id)

    monkeypatch.setattr(allocation, "_priority", priority_then_release)
    campaign_allocation_refresh(campaign=campaign)
    assert released == [1]
    slot = Slot.objects.get(assignment__isnull=True, source__external_id="s0", index=0)
    assert slot.allocation_key == 1.0  # s0 has no screen out again: priority / (1 + 0), as before the claim
    assert _claim_in_turn(campaign, annotators[1:2], 1) == ["s0"]  # its first screen again, not after all others


def test_a_slot_put_back_while_the_campaign_switches_to_uniform_gets_no_adaptive_key(
    annotators: list[Any], monkeypatch: Any,
) -> None:
    """A release that read "adaptive" just before a switch to uniform was committed must not write an adaptive
    key after the switch reset them all: in a uniform campaign that slot would be handed out before every
    other. The release decides on the setting in the statement that writes the key."""
    campaign = _adaptive_with_an_idle_claim(annotators[0])
    real_filter = Slot.objects.filter
    switched: list[bool] = []

    def filter_then_switch(*args: Any, **kwargs: Any) -> Any:
        if "assignment" in kwargs and not switched:  # the release is about to write: the switch lands first
            switched.append(True)
            campaign_allocation_set(campaign=Campaign.objects.get(pk=campaign.pk), allocation="uniform")
        return real_filter(*args, **kwargs)

    monkeypatch.setattr(Slot.objects, "filter", filter_then_switch)
    assert campaign_release_idle(campaign=campaign) == 1
    monkeypatch.undo()
    assert switched == [True]
    assert set(Slot.objects.filter(campaign=campaign).values_list("allocation_key", flat=True)) == {0.0}
    assert _claim_in_turn(campaign, annotators[1:2], 1) == ["s0"]


def _waiting_on_a_slot_lock() -> bool:
    """Whether another connection is waiting for a row lock in a statement on the slots."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock' AND query ILIKE %s AND pid <> pg_backend_pid()",
                       ["%annotation_slot%"])
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_release_waiting_on_the_slot_while_a_switch_to_uniform_commits_writes_no_adaptive_key(
    annotators: list[Any],
) -> None:
    """Two connections: a switch to uniform holds the slot's row lock (its key reset) while a release of that
    slot waits for it; the switch commits, then the release goes on. The release must read the setting as
    committed, not as it was when its statement began: an adaptive key in a uniform campaign would hand the
    slot out before every other source, for good. The release is ``slots_free`` itself, as an idle release
    in a claim calls it: with no other lock held first (removing an annotator locks the campaign's row on
    the way, through the assignments' default ordering, and so waits before it reaches the slot)."""
    import threading

    from django.db import transaction

    from annotation.services.allocation import slots_free

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL row locks (SQLite serialises writers instead)")
    campaign = _campaign("lockrace", scored=False)
    campaign_allocation_set(campaign=campaign, allocation="adaptive")
    holder, other = annotators[:2]
    CampaignAnnotator.objects.create(campaign=campaign, annotator=holder)
    claimed = assignment_claim_next(campaign=campaign, annotator=holder)
    assert claimed is not None and claimed.source.external_id == "s0"
    slot = Slot.objects.get(assignment=claimed)
    assert slot.allocation_key > 0
    switched, commit, released = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def switch() -> None:
        try:
            with transaction.atomic():
                campaign_allocation_set(campaign=Campaign.objects.get(pk=campaign.pk), allocation="uniform")
                switched.set()  # the slot's key reset is written, its row locked until the commit
                assert commit.wait(20)
        except BaseException as exc:
            errors.append(exc)
            switched.set()
        finally:
            connection.close()

    def release() -> None:
        try:
            with transaction.atomic():
                slots_free([Assignment.objects.get(pk=claimed.pk)])
        except BaseException as exc:
            errors.append(exc)
        finally:
            released.set()
            connection.close()

    threads = [threading.Thread(target=switch), threading.Thread(target=release)]
    threads[0].start()
    assert switched.wait(20)
    threads[1].start()
    for _ in range(200):  # the release's statement has begun, before the switch commits, and waits for it
        if _waiting_on_a_slot_lock() or released.is_set():
            break
        threading.Event().wait(0.05)
    assert not released.is_set(), "the release did not wait for the switch's lock"
    commit.set()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    campaign.refresh_from_db()
    slot.refresh_from_db()
    assert campaign.allocation == Campaign.Allocation.UNIFORM
    assert slot.assignment_id is None and slot.allocation_key == 0.0
    assert set(Slot.objects.filter(campaign=campaign).values_list("allocation_key", flat=True)) == {0.0}
    CampaignAnnotator.objects.create(campaign=campaign, annotator=other)
    assert assignment_claim_next(campaign=campaign, annotator=other).source.external_id == "s0"  # source order
