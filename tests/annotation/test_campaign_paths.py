"""Paths of the campaign and assignment API that only the browser used to reach: editing a campaign
(a new threshold re-runs the analysis), `next`, `reopen` and removing an annotator. Through HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.models import Assignment, Campaign

pytestmark = pytest.mark.django_db


def analysis_jobs(campaign: Campaign) -> int:
    return campaign.jobs.filter(kind="analysis").count()


def test_changing_the_threshold_schedules_the_analysis_again(
    demo_campaign: Campaign, researcher: Any, client_for: Any, django_capture_on_commit_callbacks: Any,
) -> None:
    client = client_for(researcher)
    before = analysis_jobs(demo_campaign)
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.patch("/api/campaigns/demo/", {"compression_threshold": 0.3}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["compression_threshold"] == 0.3
    assert analysis_jobs(demo_campaign) == before + 1
    assert len(callbacks) == 1  # the worker is asked once the edit is committed
    # The same threshold again, or another field, does not queue anything.
    with django_capture_on_commit_callbacks() as callbacks:
        assert client.patch("/api/campaigns/demo/", {"compression_threshold": 0.3}, format="json").status_code == 200
        assert client.patch("/api/campaigns/demo/", {"name": "Renamed"}, format="json").status_code == 200
    assert analysis_jobs(demo_campaign) == before + 1 and callbacks == []


def test_a_threshold_out_of_range_is_refused_and_names_the_field(
    demo_campaign: Campaign, researcher: Any, client_for: Any,
) -> None:
    response = client_for(researcher).patch("/api/campaigns/demo/", {"compression_threshold": 1.5}, format="json")
    assert response.status_code == 400
    assert "compression_threshold" in response.content.decode()
    assert analysis_jobs(demo_campaign) == 0


def test_next_gives_my_unfinished_sources_in_order_then_nothing(
    staffed_campaign: Campaign, annotators: list[Any], client_for: Any,
) -> None:
    from tests.factories import submit_assignment

    client = client_for(annotators[0])
    mine = list(Assignment.objects.filter(annotator=annotators[0]).order_by("id"))
    seen = []
    for _ in mine:
        response = client.post("/api/campaigns/demo/next/")
        assert response.status_code == 200
        assignment = Assignment.objects.get(pk=response.json()["assignment"])
        assert assignment.annotator == annotators[0] and assignment.pk not in seen
        seen.append(assignment.pk)
        submit_assignment(assignment)
    assert sorted(seen) == [a.pk for a in mine]
    assert client.post("/api/campaigns/demo/next/").json() == {"assignment": None}


def test_next_is_refused_outside_my_campaigns(staffed_campaign: Campaign, annotators: list[Any], client_for: Any,
                                              api_client: Any) -> None:
    assert client_for(annotators[2]).post("/api/campaigns/demo/next/").status_code == 404
    assert client_for(annotators[0]).post("/api/campaigns/nope/next/").status_code == 404
    assert api_client.post("/api/campaigns/demo/next/").status_code in (401, 403)


def test_reopen_through_the_api(
    submitted_annotation: Any, annotators: list[Any], researcher: Any, client_for: Any,
) -> None:
    url = f"/api/annotations/{submitted_annotation.pk}/reopen/"
    assert client_for(annotators[0]).post(url).status_code in (403, 404)  # annotators cannot reopen
    response = client_for(researcher).post(url)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"] != submitted_annotation.pk and body["version"] == 2 and body["status"] == "draft"
    assignment = Assignment.objects.get(pk=submitted_annotation.assignment_id)
    assert assignment.status == Assignment.Status.IN_PROGRESS and assignment.submitted_at is None
    submitted_annotation.refresh_from_db()
    assert submitted_annotation.status == "submitted"  # the submitted version is kept
    again = client_for(researcher).post(url)
    assert again.status_code == 409 and "already reopened" in again.json()["detail"]


def test_removing_an_annotator_returns_their_unfinished_sources_to_the_pool(
    staffed_campaign: Campaign, annotators: list[Any], researcher: Any, client_for: Any,
) -> None:
    from tests.factories import submit_assignment

    first, _, third = annotators
    theirs = list(Assignment.objects.filter(annotator=first).order_by("id"))
    done = submit_assignment(theirs[0])
    client = client_for(researcher)
    response = client.delete(f"/api/campaigns/demo/annotators/{first.username}/")
    assert response.status_code == 200, response.content
    assert response.json() == {"released": len(theirs) - 1}
    statuses = dict(Assignment.objects.filter(annotator=first).values_list("id", "status"))
    assert statuses[theirs[0].pk] == Assignment.Status.SUBMITTED and done.status == "submitted"
    assert {statuses[a.pk] for a in theirs[1:]} == {Assignment.Status.RELEASED}
    assert client_for(first).post("/api/campaigns/demo/next/").status_code == 404
    # The freed sources go to the next annotator who joins.
    response = client.post("/api/campaigns/demo/annotators/", {"usernames": [third.username]}, format="json")
    assert response.status_code in (200, 201), response.content
    taken = set(Assignment.objects.filter(annotator=third).values_list("source_id", flat=True))
    assert taken == {a.source_id for a in theirs[1:]}
    # Removing them again is a clear 4xx.
    again = client.delete(f"/api/campaigns/demo/annotators/{first.username}/")
    assert again.status_code == 400 and "not an active annotator" in again.json()["detail"]


def test_annotators_joining_a_built_campaign_share_its_slots_without_a_source_twice(
    campaign_with_outputs: Campaign, researcher: Any, annotators: list[Any], client_for: Any,
) -> None:
    campaign = campaign_with_outputs
    campaign.ratings_per_output = 2
    campaign.save()
    client = client_for(researcher)
    response = client.post(f"/api/campaigns/{campaign.slug}/annotators/",
                           {"usernames": [a.username for a in annotators]}, format="json")
    assert response.status_code in (200, 201), response.content
    sources = campaign.sources.count()
    live = Assignment.objects.filter(campaign=campaign).exclude(status=Assignment.Status.RELEASED)
    assert live.count() == sources * 2  # every slot taken, none more
    for annotator in annotators:
        taken = list(live.filter(annotator=annotator).values_list("source_id", flat=True))
        assert len(taken) == len(set(taken))  # nobody gets a source twice
    # The campaign's owner sees it; another researcher does not.
    assert client.get(f"/api/campaigns/{campaign.slug}/").status_code == 200
    from tests.factories import ResearcherFactory

    stranger = client_for(ResearcherFactory.create())
    assert stranger.get(f"/api/campaigns/{campaign.slug}/").status_code == 404
