"""Crowd accounts (issue 43, defect 5) and the exclusion rule of the claim and the autosave (defect 6), at the
service level; the hostile requests themselves are in tests/probe/test_crowd_identity.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import AnnotatorExclusion, Assignment, CrowdWorker, User
from annotation.rules import CROWD_PLATFORMS, REPEAT_SUFFIX, annotator_source_id, is_crowd_username
from annotation.services.annotations import annotation_save_draft
from annotation.services.assignments import assignment_claim_next, campaign_add_annotators, campaign_distribute
from annotation.services.operations import (
    CrowdEnd,
    StudyFull,
    crowd_end,
    crowd_enter,
    crowd_open,
    crowd_resume,
    crowd_visit_from_query,
    invite_accept,
    invite_create,
)
from core.errors import NotAllowed, NotFound, ServiceError
from tests.concurrency import at_once
from tests.factories import campaign_with_outputs
from tests.migrating import migrate_to

pytestmark = pytest.mark.django_db


def test_the_crowd_namespace_is_every_platforms_prefix_in_any_case() -> None:
    assert set(CROWD_PLATFORMS) == set(CrowdWorker.Platform.values)
    for name in ("prolific-8-VICTIM9", "Prolific-x", "MTURK-1-a", "mturk-"):
        assert is_crowd_username(name), name
    for name in ("prolific", "prolific_8", "alice", "my-prolific-8", "mturk1"):
        assert not is_crowd_username(name), name


def test_annotators_see_a_repeat_under_its_originals_id() -> None:
    assert annotator_source_id("s1" + REPEAT_SUFFIX, is_repeat=True) == "s1"
    assert annotator_source_id("s1" + REPEAT_SUFFIX, is_repeat=False) == "s1" + REPEAT_SUFFIX  # an imported id
    assert annotator_source_id("s1", is_repeat=False) == "s1"


def test_forms_refuse_a_crowd_username_except_for_a_crowd_account(researcher: Any) -> None:
    with pytest.raises(ValidationError, match="crowd workers"):
        User(username="prolific-3-abc", role="annotator").full_clean()
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], ratings_per_output=1))
    entry = crowd_enter(slug=campaign.slug, token=campaign.crowd_token,
                        visit=crowd_visit_from_query({"PROLIFIC_PID": "abc"}))
    entry.user.set_password("Long-enough-pw-17")
    entry.user.full_clean()  # the crowd account itself may keep its name (the admin edits it)
    invite = invite_create(campaign=campaign, by=researcher)
    with pytest.raises(ServiceError, match="crowd workers") as refused:
        invite_accept(token=invite.token, username="mturk-1-x", password="Long-enough-pw-17")
    assert refused.value.field == "username"


def test_a_crowd_account_resumes_only_with_its_key_or_its_session(researcher: Any) -> None:
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], ratings_per_output=1))
    visit = crowd_visit_from_query({"workerId": "W1", "assignmentId": "A1"})
    first = crowd_enter(slug=campaign.slug, token=campaign.crowd_token, visit=visit)
    assert first.created and first.key == CrowdWorker.objects.get(user=first.user).key
    with pytest.raises(NotAllowed) as refused:
        crowd_enter(slug=campaign.slug, token=campaign.crowd_token, visit=visit)
    assert "another browser" in refused.value.message
    with pytest.raises(NotAllowed):
        crowd_enter(slug=campaign.slug, token=campaign.crowd_token, visit=visit, key="guess")
    again = crowd_enter(slug=campaign.slug, token=campaign.crowd_token, visit=visit, key=first.key)
    assert again.user == first.user and not again.created
    by_session = crowd_enter(slug=campaign.slug, token=campaign.crowd_token, visit=visit, signed_in=first.user)
    assert by_session.user == first.user
    assert crowd_resume(slug=campaign.slug, key=first.key).user == first.user
    for wrong in ("", "x" * 65, "nope"):
        with pytest.raises(NotFound):
            crowd_resume(slug=campaign.slug, key=wrong)
    with pytest.raises(NotFound):
        crowd_resume(slug="other", key=first.key)


def test_places_count_active_not_excluded_workers(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=6, ratings_per_output=1, batch_size=1,
                                     crowd_places=2)
    crowd_open(campaign=campaign)

    def arrive(pid: str) -> Any:
        return crowd_enter(slug=campaign.slug, token=campaign.crowd_token,
                           visit=crowd_visit_from_query({"PROLIFIC_PID": pid}))

    one, _two = arrive("p1"), arrive("p2")
    with pytest.raises(StudyFull) as full:
        arrive("p3")
    assert full.value.status == 409 and not CrowdWorker.objects.filter(worker_id="p3").exists()
    # An excluded worker gives their place back (as a rejected submission does on the platform).
    AnnotatorExclusion.objects.create(campaign=campaign, annotator=one.user)
    assert arrive("p3").created


def test_crowd_end_follows_the_work_and_the_exclusion(researcher: Any, make_user: Any) -> None:
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], ratings_per_output=1, batch_size=1))
    worker = crowd_enter(slug=campaign.slug, token=campaign.crowd_token,
                         visit=crowd_visit_from_query({"PROLIFIC_PID": "e1"})).user
    staff = make_user("staff1")
    campaign_add_annotators(campaign=campaign, annotators=[staff])
    assert crowd_end(campaign=campaign, annotator=staff) is CrowdEnd.NOT_CROWD
    assert crowd_end(campaign=campaign, annotator=worker) is CrowdEnd.UNFINISHED
    exclusion = AnnotatorExclusion.objects.create(campaign=campaign, annotator=worker)
    assert crowd_end(campaign=campaign, annotator=worker) is CrowdEnd.EXCLUDED
    exclusion.crowd_end = AnnotatorExclusion.CrowdEnd.CODE
    exclusion.save()
    assert crowd_end(campaign=campaign, annotator=worker) is CrowdEnd.CODE


def test_an_excluded_annotator_is_given_no_work_and_cannot_claim_or_save(researcher: Any, make_user: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=3, ratings_per_output=1)
    out, kept = make_user("out"), make_user("kept")
    campaign_add_annotators(campaign=campaign, annotators=[out])
    held = Assignment.objects.filter(annotator=out).first()
    assert held is not None
    AnnotatorExclusion.objects.create(campaign=campaign, annotator=out)
    with pytest.raises(NotAllowed) as refused:
        assignment_claim_next(campaign=campaign, annotator=out)
    assert refused.value.field == "exclusion" and "excluded" in refused.value.message
    with pytest.raises(NotAllowed):
        annotation_save_draft(assignment=held, user=out, state={}, revision=1)
    Assignment.objects.filter(annotator=out).update(status="released")
    from annotation.models import Slot

    Slot.objects.filter(campaign=campaign).update(assignment=None)
    campaign_add_annotators(campaign=campaign, annotators=[kept])
    assert campaign_distribute(campaign=campaign) == []
    assert Assignment.objects.filter(annotator=kept).count() == 3
    assert not Assignment.objects.filter(annotator=out).exclude(status="released").exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_workers_stored_before_the_migration_each_get_their_own_key() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    before = [("annotation", "0009_campaign_status_indexes")]
    old = migrate_to(before).loader.project_state(before).apps
    campaign = old.get_model("annotation", "Campaign").objects.create(name="Old", slug="old")
    old_user = old.get_model("annotation", "User")
    old_worker = old.get_model("annotation", "CrowdWorker")
    for pid in ("a", "b", "c"):
        user = old_user.objects.create(username=f"prolific-{campaign.pk}-{pid}", pseudonym=f"A-{pid}")
        old_worker.objects.create(platform="prolific", worker_id=pid, user=user, campaign=campaign)
    exclusion = old.get_model("annotation", "AnnotatorExclusion").objects.create(campaign=campaign, annotator=user)
    new = migrate_to(latest).loader.project_state(latest).apps
    keys = list(new.get_model("annotation", "CrowdWorker").objects.values_list("key", flat=True))
    assert len(keys) == 3 and len(set(keys)) == 3 and all(len(k) >= 32 for k in keys)
    # An exclusion made before the choice existed keeps showing the code, as it did then.
    assert new.get_model("annotation", "AnnotatorExclusion").objects.get(pk=exclusion.pk).crowd_end == "code"


@pytest.mark.django_db(transaction=True)
def test_concurrent_arrivals_never_take_more_places_than_the_study_has(researcher: Any) -> None:
    """Ten new workers and the same worker twice, all at once: exactly the study's places, no error. PostgreSQL
    only (SQLite serialises writing transactions with BEGIN IMMEDIATE)."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL concurrency")
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], n_sources=10, ratings_per_output=1,
                                                         batch_size=1, crowd_places=3))
    pids = [f"C{i}" for i in range(10)] + ["twice", "twice"]
    outcomes: list[str] = []

    def arrive(pid: str) -> None:
        try:
            crowd_enter(slug=campaign.slug, token=campaign.crowd_token,
                        visit=crowd_visit_from_query({"PROLIFIC_PID": pid}))
            outcomes.append("in")
        except (StudyFull, NotAllowed) as refused:
            outcomes.append(type(refused).__name__)

    errors = at_once(arrive, pids)
    assert not errors, errors
    assert set(outcomes) <= {"NotAllowed", "StudyFull", "in"}, outcomes
    assert outcomes.count("in") == 3
    assert CrowdWorker.objects.filter(campaign=campaign).count() == 3
    assert Assignment.objects.filter(campaign=campaign).count() == 3
