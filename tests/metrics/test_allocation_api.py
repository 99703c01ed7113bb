"""Allocation simulations over the API and as a worker job: POST starts the job (202), GET reads it,
validation is a 400 naming the field, a killed worker's job is queued again."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from core.models import BackgroundJob
from core.services import background_job_reap
from metrics.services.allocation import ALLOCATION_TASK, SEEDS_MAX, campaign_allocation_start

pytestmark = pytest.mark.django_db

URL = "/api/campaigns/sim/allocation/"


def test_post_starts_the_job_and_get_reads_its_result(sim_campaign, researcher, client_for,
                                                      django_capture_on_commit_callbacks) -> None:
    client = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"policy": "round_robin", "seeds": 3, "budget": 40}, format="json")
    assert response.status_code == 202, response.content
    started = response.json()
    assert started["status"] == "queued" and started["total"] == 3 * 3
    assert started["params"] == {"policies": ["uniform", "adaptive", "round_robin"], "seeds": 3, "budget": 40}
    job = BackgroundJob.objects.get(pk=started["job"])
    assert job.kind == "allocation" and job.subject == sim_campaign and job.owner == researcher
    assert job.status == "done" and job.done == job.total == 9  # the eager worker ran it on commit
    result = client.get(f"{URL}{job.pk}/").json()
    assert [row["policy"] for row in result["summary"]] == ["uniform", "adaptive", "round_robin"]
    assert all(row["full_ratings"] == 6 * 3 * 3 for row in result["summary"])
    assert result["svg"].startswith("<svg") and result["details"][0]["budget"] == 40
    download = client.get(f"{URL}{job.pk}/summary.json")
    assert download.status_code == 200 and json.loads(download.content) == result["summary"]
    assert "attachment" in download["Content-Disposition"]
    listing = client.get(URL).json()["jobs"]
    assert [j["job"] for j in listing] == [job.pk] and "svg" not in listing[0]


@pytest.mark.parametrize(("body", "field"), [
    ({"policy": "uniform,nope"}, "policy"),
    ({"seeds": 0}, "seeds"),
    ({"seeds": SEEDS_MAX + 1}, "seeds"),
    ({"seeds": 2**70}, "seeds"),
    ({"seeds": "many"}, "seeds"),
    ({"budget": 0}, "budget"),
    ({"budget": 6 * 3 * 3 + 1}, "budget"),
    ({"policy": "metric_guided"}, "policy"),
])
def test_bad_requests_are_400s_naming_the_field(sim_campaign, researcher, client_for, body, field) -> None:
    response = client_for(researcher).post(URL, body, format="json")
    assert response.status_code == 400
    data = response.json()
    assert data.get("field") == field or field in data, data
    assert not BackgroundJob.objects.exists()


def test_others_cannot_start_or_read_simulations(sim_campaign, researcher, make_user, client_for,
                                                 django_capture_on_commit_callbacks) -> None:
    job = campaign_allocation_start(sim_campaign, policies="uniform", seeds=1)
    other = make_user("res2", "researcher")
    assert client_for(other).post(URL, {}, format="json").status_code in (403, 404)
    assert client_for(other).get(f"{URL}{job.pk}/").status_code in (403, 404)
    assert client_for(researcher).get(f"{URL}{job.pk}/summary.json").status_code == 404  # not done yet
    assert client_for(researcher).get(f"{URL}{job.pk + 1}/").status_code == 404


@override_settings(JOB_MAX_ATTEMPTS=3)
def test_a_killed_workers_job_is_queued_again_and_finishes(sim_campaign, django_capture_on_commit_callbacks) -> None:
    job = campaign_allocation_start(sim_campaign, policies="uniform", seeds=2)  # on commit never comes: stays queued
    BackgroundJob.objects.filter(pk=job.pk).update(status="running", worker="w1", attempts=1, done=1,
                                                   task_name=ALLOCATION_TASK, task_args={"args": [job.pk]})
    with django_capture_on_commit_callbacks(execute=True):
        reaped = background_job_reap(dead_workers=["w1"])
    assert [row.pk for row in reaped] == [job.pk]
    job.refresh_from_db()
    assert job.status == "done" and job.done == job.total == 4 and job.error == ""


@override_settings(JOB_MAX_ATTEMPTS=1)
def test_a_job_past_its_starts_is_marked_failed(sim_campaign) -> None:
    job = campaign_allocation_start(sim_campaign, policies="uniform", seeds=2)
    BackgroundJob.objects.filter(pk=job.pk).update(status="running", worker="w1", attempts=1,
                                                   task_name=ALLOCATION_TASK, task_args={"args": [job.pk]})
    background_job_reap(dead_workers=["w1"])
    job.refresh_from_db()
    assert job.status == "failed" and "Interrupted" in job.error
