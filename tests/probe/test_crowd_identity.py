"""Issue 43, defects 5-7 tried as a hostile user would: crowd links, exclusion, blind quality control.

5. Knowing a worker's platform id is not enough to act as them (the account is bound to the browser of the
   first visit, or reached through the worker's personal link); crowd usernames cannot be registered through
   an invite; a flood of crowd-link visits never takes more places than the study has.
6. An excluded annotator can no longer take, save or submit work, and what they held goes back to the pool;
   what an excluded crowd worker sees at the end is the researcher's choice.
7. Annotators never see that a source is a repeat.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Assignment, CrowdWorker, Slot, User
from annotation.services.assignments import campaign_add_annotators
from annotation.services.operations import crowd_open, invite_create
from evaluation.services.quality import campaign_quality_setup
from tests.factories import STEPS_REVIEWED, campaign_with_outputs, public_id, submit_assignment

pytestmark = pytest.mark.django_db


def _crowd_campaign(researcher: Any, *, n_sources: int = 6, batch: int | None = 2, places: int | None = None,
                    ratings: int = 1) -> Any:
    campaign = campaign_with_outputs(slug="crowd", owners=[researcher], n_sources=n_sources,
                                     ratings_per_output=ratings, batch_size=batch, crowd_places=places)
    return crowd_open(campaign=campaign)


def _link(campaign: Any) -> str:
    return f"/crowd/{campaign.slug}/{campaign.crowd_token}/"


# --- 5. Crowd links ------------------------------------------------------------------------------------


def test_a_known_worker_id_alone_does_not_sign_in_as_that_worker(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher)
    worker = Client()
    assert worker.get(_link(campaign), {"PROLIFIC_PID": "VICTIM9"}).status_code == 302
    attacker = Client()
    response = attacker.get(_link(campaign), {"PROLIFIC_PID": "VICTIM9", "SESSION_ID": "s2"})
    assert response.status_code == 403
    body = response.content.decode()
    assert "another browser" in body and "personal link" in body
    assert "_auth_user_id" not in attacker.session
    assert attacker.get("/api/assignments/").status_code in (401, 403)
    # The worker's own browser comes back without its session (its crowd cookie binds it).
    del worker.cookies[settings.SESSION_COOKIE_NAME]
    assert worker.get(_link(campaign), {"PROLIFIC_PID": "VICTIM9"}).status_code == 302
    assert worker.get(f"/campaigns/{campaign.slug}/instructions/").status_code == 200
    # A forged cookie (not signed by the server) binds nothing.
    record = CrowdWorker.objects.get(worker_id="VICTIM9")
    forger = Client()
    forger.cookies[f"rr_crowd_{campaign.slug}"] = record.key
    assert forger.get(_link(campaign), {"PROLIFIC_PID": "VICTIM9"}).status_code == 403


def test_the_personal_link_brings_a_worker_back_from_another_browser(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher)
    worker = Client()
    worker.get(_link(campaign), {"PROLIFIC_PID": "w1"})
    record = CrowdWorker.objects.get(worker_id="w1")
    page = worker.get(f"/campaigns/{campaign.slug}/instructions/").content.decode()
    personal = f"/crowd/{campaign.slug}/return/{record.key}/"
    assert personal in page  # shown to the worker, to bookmark
    elsewhere = Client()
    response = elsewhere.get(personal)
    assert response.status_code == 302 and response["Location"].endswith(f"/campaigns/{campaign.slug}/instructions/")
    assert int(elsewhere.session["_auth_user_id"]) == record.user_id
    # ... and binds that browser: the crowd link works there now.
    del elsewhere.cookies[settings.SESSION_COOKIE_NAME]
    assert elsewhere.get(_link(campaign), {"PROLIFIC_PID": "w1"}).status_code == 302
    assert Client().get(f"/crowd/{campaign.slug}/return/{'x' * 32}/").status_code == 404


def test_crowd_usernames_cannot_be_registered_and_a_taken_one_does_not_break_the_link(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher)
    invite = invite_create(campaign=campaign, by=researcher)
    name = f"prolific-{campaign.pk}-VICTIM9"
    response = Client().post(f"/invite/{invite.token}/", {"username": name, "password": "Long-enough-pw-17"})
    assert response.status_code == 400 and "kept for crowd workers" in response.content.decode()
    assert not User.objects.filter(username__iexact=name).exists()
    for spelling in ("MTurk-1-x", "PROLIFIC-anything"):
        answer = Client().post(f"/invite/{invite.token}/", {"username": spelling, "password": "Long-enough-pw-17"})
        assert answer.status_code == 400
    # An account of that name made before the namespace was kept: the worker still gets their own account.
    squatter = User.objects.create(username=name, role=User.Role.ANNOTATOR)
    worker = Client()
    assert worker.get(_link(campaign), {"PROLIFIC_PID": "VICTIM9"}).status_code == 302
    record = CrowdWorker.objects.get(worker_id="VICTIM9")
    assert record.user_id != squatter.pk
    assert int(worker.session["_auth_user_id"]) == record.user_id
    assert not Assignment.objects.filter(annotator=squatter).exists()


def test_a_flood_of_crowd_visits_takes_no_more_places_than_the_study_has(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher, n_sources=20, batch=2, places=3)
    # from thirty addresses, so that the per-address limit on arrivals (test_throttles) does not stop it first
    answers = [Client(REMOTE_ADDR=f"10.0.0.{i}").get(_link(campaign), {"PROLIFIC_PID": f"FLOOD{i}"}).status_code
               for i in range(30)]
    assert answers.count(302) == 3 and answers.count(409) == 27
    assert CrowdWorker.objects.filter(campaign=campaign).count() == 3
    assert User.objects.filter(username__startswith="prolific-").count() == 3
    assert Assignment.objects.filter(campaign=campaign).count() == 6
    assert Slot.objects.filter(campaign=campaign, assignment__isnull=True).count() == 14
    full = Client(REMOTE_ADDR="10.0.1.1").get(_link(campaign), {"PROLIFIC_PID": "late"})
    assert full.status_code == 409 and "This study is full" in full.content.decode()


def test_no_crowd_account_is_made_without_free_work(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher, n_sources=4, batch=2)  # room for two workers
    answers = [Client().get(_link(campaign), {"PROLIFIC_PID": f"P{i}"}).status_code for i in range(5)]
    assert answers == [302, 302, 409, 409, 409]
    assert CrowdWorker.objects.filter(campaign=campaign).count() == 2
    assert not Slot.objects.filter(campaign=campaign, assignment__isnull=True).exists()


# --- 6. Exclusion ----------------------------------------------------------------------------------------


def _submit_body(assignment: Any) -> dict[str, Any]:
    units = assignment.source.units.order_by("id")
    return {"submit_key": "x1", "steps_reviewed": STEPS_REVIEWED, "units": [
        {"unit": public_id(assignment, u.pk), "category": "paraphrase", "rating": 50, "rank": i + 1}
        for i, u in enumerate(units)]}


def test_an_excluded_annotator_can_no_longer_claim_draft_or_submit(researcher: Any, make_user: Any) -> None:
    campaign = campaign_with_outputs(slug="ex", owners=[researcher], n_sources=6, ratings_per_output=1)
    careless, other = make_user("careless"), make_user("other")
    campaign_add_annotators(campaign=campaign, annotators=[careless])
    held = list(Assignment.objects.filter(annotator=careless).order_by("id"))
    assert len(held) == 6
    submit_assignment(held[0])
    api = APIClient()
    api.force_authenticate(careless)
    researcher_api = APIClient()
    researcher_api.force_authenticate(researcher)
    response = researcher_api.post(f"/api/campaigns/{campaign.slug}/quality/exclusions/",
                                   {"annotator": careless.pseudonym}, format="json")
    assert response.status_code == 201
    # What they held went back to the pool at once; their submitted work stays (for the record).
    rest = Assignment.objects.filter(annotator=careless).exclude(pk=held[0].pk)
    statuses = set(rest.values_list("status", flat=True))
    assert statuses == {"released"}
    assert Slot.objects.filter(campaign=campaign, assignment__isnull=True).count() == 5
    claim = api.post(f"/api/campaigns/{campaign.slug}/next/")
    assert claim.status_code == 403 and "excluded" in claim.json()["detail"]
    assert claim.json()["field"] == "exclusion"
    draft = api.put(f"/api/assignments/{held[1].pk}/draft/", {"state": {}, "revision": 1}, format="json")
    assert draft.status_code == 403 and "excluded" in draft.json()["detail"]
    submit = api.post(f"/api/assignments/{held[2].pk}/submit/", _submit_body(held[2]), format="json")
    assert submit.status_code == 403 and "excluded" in submit.json()["detail"]
    assert Assignment.objects.filter(annotator=careless, status="submitted").count() == 1
    # The freed sources go to the others, never back to the excluded annotator.
    campaign_add_annotators(campaign=campaign, annotators=[other])
    assert Assignment.objects.filter(annotator=other).exclude(status="released").count() == 5
    assert not Assignment.objects.filter(annotator=careless, status__in=("assigned", "in_progress")).exists()


@pytest.mark.parametrize(("choice", "sees_code"), [("excluded", False), ("code", True), ("", False)])
def test_what_an_excluded_crowd_worker_sees_is_the_researchers_choice(researcher: Any, choice: str,
                                                                      sees_code: bool) -> None:
    campaign = _crowd_campaign(researcher, n_sources=4, batch=2)
    worker = Client()
    worker.get(_link(campaign), {"PROLIFIC_PID": "bad1"})
    user = CrowdWorker.objects.get(worker_id="bad1").user
    first = Assignment.objects.filter(annotator=user).order_by("id").first()
    assert first is not None
    submit_assignment(first)
    page = Client()
    page.force_login(researcher)
    response = page.post(f"/research/campaigns/{campaign.slug}/quality/",
                         {"action": "exclude", "pseudonym": user.pseudonym, "crowd_end": choice, "confirm": "1"})
    assert response.status_code == 302
    assert not Assignment.objects.filter(annotator=user, status__in=("assigned", "in_progress")).exists()
    nxt = worker.post(f"/campaigns/{campaign.slug}/continue/")
    assert nxt.status_code == 302 and nxt["Location"].endswith(f"/campaigns/{campaign.slug}/done/")
    done = worker.get(nxt["Location"]).content.decode()
    assert (campaign.completion_code in done) is sees_code
    assert ("Your submission was excluded" in done) is not sees_code


def test_the_exclusion_form_states_the_choice_and_refuses_an_unknown_one(researcher: Any) -> None:
    campaign = _crowd_campaign(researcher, n_sources=4, batch=2)
    Client().get(_link(campaign), {"PROLIFIC_PID": "w2"})
    user = CrowdWorker.objects.get(worker_id="w2").user
    page = Client()
    page.force_login(researcher)
    body = page.get(f"/research/campaigns/{campaign.slug}/").content.decode()
    assert 'name="crowd_end"' in body and "no completion code" in body
    api = APIClient()
    api.force_authenticate(researcher)
    bad = api.post(f"/api/campaigns/{campaign.slug}/quality/exclusions/",
                   {"annotator": user.pseudonym, "crowd_end": "pay-double"}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "crowd_end"
    good = api.post(f"/api/campaigns/{campaign.slug}/quality/exclusions/",
                    {"annotator": user.pseudonym, "crowd_end": "code"}, format="json")
    assert good.status_code == 201
    assert [r["crowd_end"] for r in good.json() if r["annotator"] == user.pseudonym] == ["code"]


# --- 7. Blind quality control -------------------------------------------------------------------------


def test_annotators_cannot_tell_a_repeat(researcher: Any, make_user: Any) -> None:
    campaign = campaign_with_outputs(slug="qc", owners=[researcher], n_sources=4, ratings_per_output=1)
    annotator = make_user("blind")
    campaign_add_annotators(campaign=campaign, annotators=[annotator])
    done = campaign_quality_setup(campaign=campaign, attention_rate=0, repeat_share=0.5, analyse=False)
    assert done.repeats == 2
    repeats = list(Assignment.objects.filter(annotator=annotator, source__repeat_of__isnull=False))
    assert len(repeats) == 2
    api = APIClient()
    api.force_authenticate(annotator)
    listed = api.get("/api/assignments/").json()
    assert not any("#repeat" in row["source"] for row in listed)
    for repeat in repeats:
        original = repeat.source.repeat_of.external_id
        detail = api.get(f"/api/assignments/{repeat.pk}/").json()
        assert detail["source"]["id"] == original
        assert "#repeat" not in str(detail)
    page = Client()
    page.force_login(annotator)
    assert "#repeat" not in page.get("/").content.decode()
    assert "#repeat" not in page.get(f"/annotate/{repeats[0].pk}/").content.decode()
    # The researchers still see which is the repeat.
    owner = Client()
    owner.force_login(researcher)
    item = owner.get(f"/research/campaigns/{campaign.slug}/items/{repeats[0].pk}/").content.decode()
    assert "#repeat" in item
