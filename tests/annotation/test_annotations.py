from __future__ import annotations

import pytest

from annotation.models import Annotation, Assignment, OutputJudgement, RatingUnit
from annotation.services.annotations import annotation_reopen, annotation_save_draft, annotation_submit
from core.errors import Conflict, NotAllowed, ServiceError
from tests.factories import STEPS_REVIEWED, public_id

pytestmark = pytest.mark.django_db


def full_payload(assignment, **overrides):
    units = list(RatingUnit.objects.filter(source=assignment.source).order_by("id"))
    items = [
        {"unit": public_id(assignment, u.pk), "category": "paraphrase", "rating": 90 - 10 * i, "rank": i + 1,
         "edits": None}
        for i, u in enumerate(units)
    ]
    payload = {"steps_reviewed": STEPS_REVIEWED,
               "units": items, "step_seconds": {"categorise": 10.5, "edits": 20, "rate": 30}}
    payload.update(overrides)
    return payload


def test_draft_keeps_highest_revision_and_starts_assignment(assignment, annotators):
    annotation_save_draft(assignment=assignment, user=annotators[0], state={"step": "rate"}, revision=2)
    annotation_save_draft(assignment=assignment, user=annotators[0], state={"step": "edits"}, revision=1)
    annotation = Annotation.objects.get(assignment=assignment)
    assert (annotation.draft, annotation.draft_revision) == ({"step": "rate"}, 2)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS and assignment.started_at is not None


def test_submit_writes_one_judgement_per_output_and_is_idempotent(assignment, annotators):
    user = annotators[0]
    first = annotation_submit(assignment=assignment, user=user, payload=full_payload(assignment), submit_key="k1")
    again = annotation_submit(assignment=assignment, user=user, payload=full_payload(assignment), submit_key="k1")
    assert first.pk == again.pk
    # 9 outputs (two systems share the copy's text) for 8 units.
    assert OutputJudgement.objects.filter(annotation=first).count() == assignment.source.outputs.count() == 9
    assert first.step_seconds == {"categorise": 10.5, "edits": 20.0, "rate": 30.0}
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    with pytest.raises(Conflict, match="already submitted"):
        annotation_submit(assignment=assignment, user=user, payload=full_payload(assignment), submit_key="k2")
    with pytest.raises(Conflict):
        annotation_save_draft(assignment=assignment, user=user, state={}, revision=99)


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda p: p["units"].pop(), "units", "not rated yet"),
        (lambda p: p["units"][0].update(rating=101), "units[0].rating", "0 to 100"),
        (lambda p: p["units"][0].update(category="other"), "units[0].category", "category must be"),
        (lambda p: p["units"][0].update(unit=999999), "units[0].unit", "does not belong"),
        (lambda p: p["units"][1].update(rank=1), "units", "ranks must be 1..N"),
        (lambda p: p["units"][0].update(edits=[{"type": "deletion", "source_span": [0, 9999], "anchor": 0,
                                                 "output_span": None}]),
         "units[0].edits[0].source_span", "outside the text"),
        (lambda p: p["units"][0].update(edits=[{"type": "split", "source_span": None, "output_span": None,
                                                 "anchor": None}]), "units[0].edits[0]", "needs an anchor"),
        (lambda p: p.update(step_seconds={"lunch": 5}), "step_seconds", "unknown step"),
    ],
)
def test_submit_validation(assignment, annotators, mutate, field, message):
    payload = full_payload(assignment)
    mutate(payload)
    with pytest.raises(ServiceError) as info:
        annotation_submit(assignment=assignment, user=annotators[0], payload=payload, submit_key="k")
    assert info.value.field == field
    assert message in info.value.message
    assert not OutputJudgement.objects.exists()


def test_only_the_owner_may_write(assignment, annotators):
    with pytest.raises(NotAllowed):
        annotation_save_draft(assignment=assignment, user=annotators[1], state={}, revision=1)
    with pytest.raises(NotAllowed):
        annotation_submit(assignment=assignment, user=annotators[1], payload=full_payload(assignment),
                          submit_key="x")


def test_corrected_edits_are_stored_beside_automatic_ones(assignment, annotators):
    unit = RatingUnit.objects.filter(source=assignment.source).order_by("id").first()
    auto = [{"type": "paraphrase", "source_span": [0, 3], "output_span": [0, 3], "anchor": None}]
    unit.analysis = {"edits": auto}
    unit.auto_category = "deletion"
    unit.save()
    payload = full_payload(assignment)
    fixed = [{"type": "deletion", "source_span": [4, 7], "output_span": None, "anchor": 3}]
    payload["units"][0]["edits"] = fixed
    annotation = annotation_submit(assignment=assignment, user=annotators[0], payload=payload, submit_key="e")
    j = OutputJudgement.objects.filter(annotation=annotation, output__unit=unit).first()
    assert (j.edits, j.auto_edits, j.category, j.auto_category) == (fixed, auto, "paraphrase", "deletion")


def test_reopen_creates_a_new_version_and_keeps_the_submitted_one(assignment, annotators, researcher):
    user = annotators[0]
    v1 = annotation_submit(assignment=assignment, user=user, payload=full_payload(assignment), submit_key="a")
    v2 = annotation_reopen(annotation=v1, by=researcher)
    assert (v2.version, v2.previous_id, v2.status) == (2, v1.pk, "draft")
    v1.refresh_from_db()
    assert v1.status == "submitted"  # still counted until the new version is submitted
    payload = full_payload(assignment)
    payload["units"][0]["rating"] = 12
    done = annotation_submit(assignment=assignment, user=user, payload=payload, submit_key="b")
    assert done.pk == v2.pk and done.version == 2
    v1.refresh_from_db()
    assert v1.status == "superseded"
    # The first version's judgements are untouched.
    assert OutputJudgement.objects.filter(annotation=v1, rating=12).count() == 0
    assert OutputJudgement.objects.filter(annotation=v2, rating=12).exists()
