"""A crowd round trip a study can run on (issue 44, defect 4): a full study says so before the worker starts
and tells the researcher; a returned or timed-out worker's place and work go back to the pool; the
platform's completion URL is one checked setting of the page, the API and the admin."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, Campaign, CrowdTurnedAway, CrowdWorker, Slot, User
from annotation.rules import completion_url_problem
from annotation.services.annotations import annotation_save_draft
from annotation.services.assignments import campaign_add_annotators
from annotation.services.campaigns import campaign_update
from annotation.services.operations import (
    CrowdRoom,
    StudyFull,
    crowd_close,
    crowd_enter,
    crowd_open,
    crowd_places_held,
    crowd_room,
    crowd_visit_from_query,
)
from core.errors import ServiceError
from tests.factories import campaign_with_outputs, submit_assignment

pytestmark = pytest.mark.django_db
PROLIFIC = "https://app.prolific.com/submissions/complete?cc={code}"


def _link(campaign: Campaign) -> str:
    return f"/crowd/{campaign.slug}/{campaign.crowd_token}/"


def _arrive(campaign: Campaign, pid: str) -> Any:
    return crowd_enter(slug=campaign.slug, token=campaign.crowd_token,
                       visit=crowd_visit_from_query({"PROLIFIC_PID": pid}))


def _research(researcher: Any) -> Client:
    page = Client()
    page.force_login(researcher)
    return page


def test_a_newcomer_is_given_the_free_work_not_a_waiting_member(researcher: Any, annotators: list[Any]) -> None:
    """The issue's dead end: the link let the worker in because a slot was free, and the slot then went to a
    member who had been waiting with nothing, so "Start annotating" said "Nothing left… Thank you!"."""
    campaign = campaign_with_outputs(owners=[researcher], n_sources=1, ratings_per_output=1,
                                     idle_release_minutes=5)
    campaign_add_annotators(campaign=campaign, annotators=annotators[:2])  # ann1 takes the source, ann2 waits
    Assignment.objects.update(assigned_at=timezone.now() - timedelta(minutes=30))  # ann1 walked away
    crowd_open(campaign=campaign)
    worker = Client()
    assert worker.get(_link(campaign), {"PROLIFIC_PID": "p1"}).status_code == 302
    start = worker.post(f"/campaigns/{campaign.slug}/continue/")
    assert start.status_code == 302 and "/annotate/" in start["Location"], start["Location"]
    user = CrowdWorker.objects.get(worker_id="p1").user
    assert Assignment.objects.filter(annotator=user, status="assigned").count() == 1
    assert not Assignment.objects.filter(annotator=annotators[1]).exists()


def test_a_full_study_says_so_before_the_worker_starts_and_tells_the_researcher(
    researcher: Any, annotators: list[Any]
) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=2, ratings_per_output=1)
    campaign_add_annotators(campaign=campaign, annotators=annotators[:1])  # every wanted rating assigned
    crowd_open(campaign=campaign)
    users_before = User.objects.count()
    worker = Client()
    page = worker.get(_link(campaign), {"PROLIFIC_PID": "late1", "STUDY_ID": "s", "SESSION_ID": "x"})
    body = page.content.decode()
    assert page.status_code == 409
    assert "no work left for you" in body and "return the study" in body and "Prolific" in body
    assert "0 / 0" not in body and "Thank you" not in body
    assert User.objects.count() == users_before and not CrowdWorker.objects.exists()
    assert worker.get(_link(campaign), {"PROLIFIC_PID": "late1"}).status_code == 409  # a reload
    turk = Client().get(_link(campaign), {"workerId": "T9"})
    assert turk.status_code == 409 and "return the HIT" in turk.content.decode()
    rows = CrowdTurnedAway.objects.filter(campaign=campaign).order_by("id")
    assert [(r.worker_id, r.visits, r.reason) for r in rows] == [("late1", 2, "no_work"), ("T9", 1, "no_work")]

    dashboard = _research(researcher).get(f"/research/campaigns/{campaign.slug}/").content.decode()
    assert re.search(r'id="crowd-room"[^>]*>A new worker gets <strong>no work</strong>', dashboard)
    assert "2 workers opened the link when nothing was left" in dashboard
    api = APIClient()
    api.force_authenticate(researcher)
    state = api.get(f"/api/campaigns/{campaign.slug}/crowd/").json()
    assert state["room"] == "no_work" and state["turned_away"]["workers"] == 2
    assert state["turned_away"]["last_at"] is not None and state["places_held"] == 0


def test_crowd_room_is_the_one_rule_of_the_link(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=2, ratings_per_output=1, batch_size=1,
                                     crowd_places=1)
    assert crowd_room(campaign=campaign) is CrowdRoom.CLOSED
    crowd_open(campaign=campaign)
    assert crowd_room(campaign=campaign) is CrowdRoom.OPEN
    _arrive(campaign, "a")
    assert crowd_room(campaign=campaign) is CrowdRoom.PLACES_FULL
    with pytest.raises(StudyFull) as full:
        _arrive(campaign, "b")
    assert full.value.status == 409 and full.value.field == "places_full"
    campaign_update(campaign=campaign, crowd_places=2)
    _arrive(campaign, "b")
    campaign_update(campaign=campaign, crowd_places=3)
    assert crowd_room(campaign=campaign) is CrowdRoom.NO_WORK
    crowd_close(campaign=campaign)
    assert crowd_room(campaign=campaign) is CrowdRoom.CLOSED


def _rows() -> tuple[list[Any], list[Any]]:
    return (list(Slot.objects.order_by("id").values_list("id", "assignment_id")),
            list(Assignment.objects.order_by("id").values_list("id", "status", "released_at")))


@pytest.mark.parametrize("full", ["no_free_slot", "places"])
def test_the_dashboard_and_api_gets_only_read_the_crowd_room(researcher: Any, full: str) -> None:
    """A GET (the dashboard, the crowd API) must not write: with no free slot, or every place held, by a
    worker gone idle, the room still reads ``open`` (their work and place are about to come back), and no
    slot is made and nothing is released until a worker actually enters through the link."""
    campaign = campaign_with_outputs(owners=[researcher], n_sources=1 if full == "no_free_slot" else 2,
                                     ratings_per_output=1, batch_size=1, crowd_places=1 if full == "places" else None,
                                     idle_release_minutes=30)
    crowd_open(campaign=campaign)
    gone = _arrive(campaign, "gone").user
    Assignment.objects.filter(annotator=gone).update(assigned_at=timezone.now() - timedelta(minutes=31))
    Campaign.objects.filter(pk=campaign.pk).update(ratings_per_output=2)  # slots still to make
    campaign.refresh_from_db()
    before = _rows()
    dashboard = _research(researcher).get(f"/research/campaigns/{campaign.slug}/")
    assert dashboard.status_code == 200
    api = APIClient()
    api.force_authenticate(researcher)
    assert api.get(f"/api/campaigns/{campaign.slug}/crowd/").json()["room"] == "open"
    assert crowd_room(campaign=campaign) is CrowdRoom.OPEN
    assert _rows() == before
    _arrive(campaign, "next")  # the link settles: the idle work goes back, the missing slots are made
    assert _rows() != before
    assert Assignment.objects.get(annotator=gone).status == "released"


def test_a_timed_out_workers_place_and_unsubmitted_work_go_back_to_the_pool(researcher: Any) -> None:
    """Prolific does not call back when a worker returns the study or times out: the time-out
    (``idle_release_minutes``) releases their unfinished work, drafts dropped, and their place."""
    campaign = campaign_with_outputs(owners=[researcher], n_sources=2, ratings_per_output=1, batch_size=2,
                                     crowd_places=1, idle_release_minutes=30)
    crowd_open(campaign=campaign)
    gone = _arrive(campaign, "returned").user
    held = list(Assignment.objects.filter(annotator=gone).order_by("id"))
    assert len(held) == 2
    annotation_save_draft(assignment=held[0], user=gone, state={}, revision=1)
    with pytest.raises(StudyFull):
        _arrive(campaign, "early")  # still working: the place is theirs
    Assignment.objects.filter(annotator=gone).update(last_activity_at=timezone.now() - timedelta(minutes=31),
                                                     assigned_at=timezone.now() - timedelta(minutes=31))
    assert crowd_room(campaign=campaign) is CrowdRoom.OPEN  # read only: the place counts as given back
    assert crowd_places_held(campaign=campaign) == 1 and crowd_places_held(campaign=campaign,
                                                                           once_idle_released=True) == 0
    assert crowd_room(campaign=campaign, settle=True) is CrowdRoom.OPEN
    assert crowd_places_held(campaign=campaign) == 0
    nxt = _arrive(campaign, "next").user
    assert sorted(a.source_id for a in Assignment.objects.filter(annotator=nxt)) == sorted(
        a.source_id for a in held)
    assert set(Assignment.objects.filter(annotator=gone).values_list("status", flat=True)) == {"released"}
    assert not Annotation.objects.filter(assignment__annotator=gone, status="draft").exists()
    # Coming back after all, they are told their time ran out, not "Nothing left... Thank you!".
    back = Client()
    back.force_login(gone)
    start = back.post(f"/campaigns/{campaign.slug}/continue/")
    assert start.status_code == 302 and start["Location"].endswith(f"/campaigns/{campaign.slug}/done/")
    page = back.get(start["Location"]).content.decode()
    assert "Your time on this study ran out" in page and "return the study" in page
    assert campaign.completion_code not in page


def test_a_worker_who_submitted_part_keeps_their_place(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=3, ratings_per_output=1, batch_size=2,
                                     crowd_places=1, idle_release_minutes=30)
    crowd_open(campaign=campaign)
    worker = _arrive(campaign, "half").user
    first, _second = Assignment.objects.filter(annotator=worker).order_by("id")
    submit_assignment(first)
    Assignment.objects.filter(annotator=worker, status="assigned").update(
        assigned_at=timezone.now() - timedelta(minutes=31))
    with pytest.raises(StudyFull):
        _arrive(campaign, "other")
    assert crowd_places_held(campaign=campaign) == 1


@pytest.mark.parametrize(("url", "problem"), [
    (PROLIFIC, None),
    ("https://example.org/done", None),
    ("http://app.prolific.com/submissions/complete?cc={code}", "https://"),
    ("javascript:alert(1)", "https://"),
    ("https://", "https://"),
    ("https://[::1/x", "https://"),
    ("https://a.example/ x", "spaces"),
    ("https://a.example/?cc={kode}", "placeholder"),
    ("https://a.example/" + "x" * 500, "500"),
])
def test_the_completion_url_rule(url: str, problem: str | None) -> None:
    found = completion_url_problem(url)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_the_completion_url_is_set_from_the_page_the_api_and_the_admin(researcher: Any, make_user: Any) -> None:
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher]))
    page = _research(researcher)
    crowd = f"/research/campaigns/{campaign.slug}/crowd/"
    page.post(crowd, {"action": "completion_url", "crowd_completion_url": f"  {PROLIFIC} "})
    campaign.refresh_from_db()
    assert campaign.crowd_completion_url == PROLIFIC
    refused = page.post(crowd, {"action": "completion_url", "crowd_completion_url": "http://x.example/"},
                        follow=True)
    assert "https://" in refused.content.decode()
    campaign.refresh_from_db()
    assert campaign.crowd_completion_url == PROLIFIC
    page.post(crowd, {"action": "timeout", "idle_release_minutes": "45"})
    campaign.refresh_from_db()
    assert campaign.idle_release_minutes == 45

    api = APIClient()
    api.force_authenticate(researcher)
    bad = api.patch(f"/api/campaigns/{campaign.slug}/", {"crowd_completion_url": "ftp://x"}, format="json")
    assert bad.status_code == 400 and "crowd_completion_url" in bad.content.decode()
    ok = api.post(f"/api/campaigns/{campaign.slug}/crowd/", {"completion_url": "https://t.example/c/{code}"},
                  format="json")
    assert ok.status_code == 200 and ok.json()["completion_url"] == "https://t.example/c/{code}"
    assert api.patch(f"/api/campaigns/{campaign.slug}/", {"crowd_completion_url": ""},
                     format="json").json()["crowd_completion_url"] == ""

    admin = make_user("boss", "admin")
    admin.is_staff = admin.is_superuser = True
    admin.save()
    edit = Client()
    edit.force_login(admin)
    assert 'name="crowd_completion_url"' in edit.get(f"/admin/annotation/campaign/{campaign.pk}/change/"
                                                     ).content.decode()
    campaign.crowd_completion_url = "http://plain.example/"  # the admin's form runs the model's validators
    with pytest.raises(ValidationError, match="https://"):
        campaign.full_clean()


def test_the_service_refuses_a_bad_completion_url(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher])
    with pytest.raises(ServiceError) as refused:
        campaign_update(campaign=campaign, crowd_completion_url="https://a.example/{x}")
    assert refused.value.field == "crowd_completion_url"
