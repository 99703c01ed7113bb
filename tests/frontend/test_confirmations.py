"""Issue 44, defect 12: remove and exclude ask for confirmation first (a server-side step: no script needed)."""

from __future__ import annotations

import pytest

from annotation.models import Assignment
from tests.factories import login, submit_assignment

pytestmark = pytest.mark.django_db



def test_remove_asks_for_confirmation_saying_how_many_sources_go_back(staffed_campaign, researcher, annotators):
    client = login(researcher)
    url = f"/research/campaigns/{staffed_campaign.slug}/people/"
    mine = Assignment.objects.filter(annotator=annotators[1], status__in=("assigned", "in_progress")).count()
    first = Assignment.objects.filter(annotator=annotators[1]).order_by("id").first()
    assert first is not None
    submit_assignment(first)  # submitted work is not released
    response = client.post(url, {"action": "remove", "username": "ann2"})
    assert response.status_code == 200
    body = response.content.decode()
    assert f"{mine - 1} unfinished source(s)" in body and 'name="confirm" value="1"' in body
    assert 'name="username" value="ann2"' in body
    assert staffed_campaign.memberships.get(annotator=annotators[1]).active  # nothing happened yet
    response = client.post(url, {"action": "remove", "username": "ann2", "confirm": "1"})
    assert response.status_code == 302
    assert not staffed_campaign.memberships.get(annotator=annotators[1]).active


def test_exclude_asks_for_confirmation(staffed_campaign, researcher, annotators):
    client = login(researcher)
    url = f"/research/campaigns/{staffed_campaign.slug}/quality/"
    fields = {"action": "exclude", "pseudonym": annotators[0].pseudonym, "crowd_end": "code", "reason": "fast"}
    body = client.post(url, fields).content.decode()
    assert f"Exclude {annotators[0].pseudonym}" in body and "the completion code" in body
    assert not annotators[0].exclusions.exists()
    assert client.post(url, {**fields, "confirm": "1"}).status_code == 302
    assert annotators[0].exclusions.get().crowd_end == "code"
