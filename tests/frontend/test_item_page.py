"""Issue 44, defect 2: the per-item page of an annotation with step-2 corrections."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, RatingUnit
from annotation.services.annotations import annotation_submit
from tests.factories import STEPS_REVIEWED, login, public_id

pytestmark = pytest.mark.django_db



def test_item_page_shows_step_2_corrections(staffed_campaign, researcher, annotators):
    assignment = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    assert assignment is not None
    source = assignment.source.text
    units = list(RatingUnit.objects.filter(source=assignment.source).order_by("id"))
    first_word = source.split()[0]
    items = []
    for i, unit in enumerate(units):
        item = {"unit": public_id(assignment, unit.pk), "category": "deletion", "rating": 40 + i, "rank": i + 1}
        if i == 0:  # the annotator corrected the first output's edits in step 2
            item["edits"] = [
                {"type": "deletion", "source_span": [0, len(first_word)], "anchor": 0},
                {"type": "split", "anchor": len(unit.text.split()[0])},
            ]
        items.append(item)
    annotation_submit(assignment=assignment, user=annotators[0], submit_key="k",
                      payload={"steps_reviewed": STEPS_REVIEWED, "units": items})
    response = login(researcher).get(f"/research/campaigns/{staffed_campaign.slug}/items/{assignment.pk}/")
    assert response.status_code == 200  # was a 500: VariableDoesNotExist [kind]
    body = response.content.decode()
    assert f"removed “{first_word}”" in body
    assert "sentence break" in body and "2 edits" in body
    assert body.count("not corrected") == len(units) - 1
