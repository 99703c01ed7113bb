"""Budgets (issue 43, defect 1): one researcher cannot make unbounded work.

Every request of the issue is sent again: the testbed's million magnitudes and ``sample=10**12`` with every
metric, twenty testbed runs, thirty scorings of the same campaign, ``n_boot=5000``; each is refused before
any work is built, or answered with the job already queued, and the refusals name the field and the bound
(400) or what is queued (429 per user, 409 for the whole platform).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from core.models import BackgroundJob
from tests.frontend.test_testbed_page import FORM
from tests.probe.conftest import Probe


@pytest.fixture
def caps(settings: Any) -> Any:
    settings.JOB_MAX_QUEUED_PER_USER = 3
    settings.JOB_MAX_QUEUED_TOTAL = 5
    return settings


def _page(client: Any, data: dict[str, str]) -> str:
    response = client.post("/research/testbed/", data)
    assert response.status_code == 400, response.status_code  # a form error answers 400, the form shown again
    return str(response.content.decode())


def test_a_million_magnitudes_are_refused_before_any_list_is_built(
    probe: Probe, tiny_corpus: str, web_client_for: Any, tmp_path: Path
) -> None:
    client = web_client_for(probe.users["researcher"])
    started = time.perf_counter()
    page = _page(client, {**FORM, "magnitudes": "0,0.0001,...,100"})
    assert time.perf_counter() - started < 2.0
    assert "1000001 magnitudes; at most 21" in page
    for text in ("0,1,...,100", ",".join(str(i) for i in range(30)), "0,1e308,...,1e308", "0," * 300 + "1"):
        assert "magnitudes" in _page(client, {**FORM, "magnitudes": text})
    assert not BackgroundJob.objects.exists()
    assert not list(tmp_path.glob("testbed/*/params.json"))


def test_a_huge_sample_with_every_metric_is_refused(probe: Probe, tiny_corpus: str, web_client_for: Any) -> None:
    client = web_client_for(probe.users["researcher"])
    page = _page(client, {**FORM, "sample": str(10**12), "metrics": "all"})
    assert "Give a whole number from 1 to 2000 (got too large)" in page
    assert not BackgroundJob.objects.exists()


@pytest.mark.parametrize("seed", [-1, 2**32, 10**30])
def test_a_seed_no_generator_takes_is_refused_by_the_page(
    probe: Probe, tiny_corpus: str, web_client_for: Any, seed: int
) -> None:
    client = web_client_for(probe.users["researcher"])
    page = _page(client, {**FORM, "seed": str(seed)})
    assert "Give a whole number from 0 to 4294967295" in page
    assert not BackgroundJob.objects.exists()


def test_twenty_testbed_runs_stop_at_the_cap_and_the_refusal_says_what_is_queued(
    probe: Probe, tiny_corpus: str, web_client_for: Any, caps: Any
) -> None:
    client = web_client_for(probe.users["researcher"])
    answers = [client.post("/research/testbed/", {**FORM, "seed": str(seed)}) for seed in range(20)]
    assert [a.status_code for a in answers] == [302] * 3 + [429] * 17
    jobs = list(BackgroundJob.objects.filter(kind="testbed").order_by("pk"))
    assert len(jobs) == 3 and {job.owner_id for job in jobs} == {probe.users["researcher"].pk}
    refusal = answers[3].content.decode()
    assert "you have 3 jobs queued or running (at most 3)" in refusal
    assert all(f"testbed #{job.pk} (queued)" in refusal for job in jobs)


def test_the_same_testbed_request_again_gets_the_queued_job(
    probe: Probe, tiny_corpus: str, web_client_for: Any, caps: Any
) -> None:
    client = web_client_for(probe.users["researcher"])
    locations = {client.post("/research/testbed/", FORM)["Location"] for _ in range(10)}
    assert len(locations) == 1 and BackgroundJob.objects.filter(kind="testbed").count() == 1


def test_thirty_scorings_of_a_campaign_queue_each_job_once(probe: Probe, client_as: Any, caps: Any) -> None:
    client = client_as("researcher")
    url = f"/api/campaigns/{probe.campaign.slug}/metrics/score/"
    answers = [client.post(url, {"metric": "all"}, format="json") for _ in range(30)]
    assert {a.status_code for a in answers} == {202}
    assert len({tuple(a.json()["jobs"]) for a in answers}) == 1
    assert BackgroundJob.objects.filter(kind="metric_scores").count() == len(answers[0].json()["jobs"])


def test_a_researcher_over_the_cap_gets_429_naming_the_queued_jobs_and_the_platform_409(
    probe: Probe, client_as: Any, caps: Any
) -> None:
    url = f"/api/campaigns/{probe.campaign.slug}/metrics/score/"
    client = client_as("researcher")
    for name in ("fkgl", "bleu", "gleu"):
        assert client.post(url, {"metric": name}, format="json").status_code == 202
    refused = client.post(url, {"metric": "sari"}, format="json")
    assert refused.status_code == 429
    body = refused.json()
    queued = list(BackgroundJob.objects.order_by("pk").values_list("pk", flat=True))
    assert body["details"]["limit"] == 3
    assert [(j["kind"], j["id"]) for j in body["details"]["queued"]] == [("metric_scores", pk) for pk in queued]
    # Two more by another researcher fill the platform (5); the next one of anybody is a 409.
    other = client_as("other_researcher")
    other_url = f"/api/campaigns/{probe.other_campaign.slug}/metrics/score/"
    for name in ("fkgl", "bleu"):
        assert other.post(other_url, {"metric": name}, format="json").status_code == 202
    full = other.post(other_url, {"metric": "gleu"}, format="json")
    assert full.status_code == 409 and full.json()["details"]["limit"] == 5
    assert "the platform has 5 jobs queued or running" in full.json()["detail"]


def test_the_dashboard_shows_a_refused_scoring_as_a_message(
    probe: Probe, web_client_for: Any, caps: Any, settings: Any
) -> None:
    settings.JOB_MAX_QUEUED_PER_USER = 0
    client = web_client_for(probe.users["researcher"])
    response = client.post(f"/research/campaigns/{probe.campaign.slug}/metrics-score/")
    assert response.status_code == 429  # the dashboard, the refusal at the top of the scoring form
    errors = response.content.decode().split('id="metrics-score-errors"')[1].split("</div>")[0]
    assert "jobs queued or running (at most 0)" in errors
    assert not BackgroundJob.objects.exists()


@pytest.mark.parametrize("value", ["5000", "2001", "-1", "1e3", "9" * 40])
def test_n_boot_over_the_bound_is_a_400_naming_it(probe: Probe, client_as: Any, value: str) -> None:
    response = client_as("researcher").get(f"/api/campaigns/{probe.campaign.slug}/metrics/", {"n_boot": value})
    assert response.status_code == 400
    assert response.json()["field"] == "n_boot" and "from 0 to 2000" in response.json()["detail"]


def test_too_many_metric_names_are_a_400(probe: Probe, client_as: Any) -> None:
    url = f"/api/campaigns/{probe.campaign.slug}/metrics/score/"
    response = client_as("researcher").post(url, {"metric": ",".join(["fkgl"] * 1000)}, format="json")
    assert response.status_code == 400 and response.json()["field"] == "metric"
    assert not BackgroundJob.objects.exists()


def test_repeated_metrics_reads_are_computed_once_per_data_version(
    probe: Probe, client_as: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.core.cache import cache

    from metrics.models import MetricScore
    from metrics.services import meta_evaluation

    cache.clear()
    calls: list[int] = []
    real = meta_evaluation.campaign_meta_evaluate

    def counted(**kwargs: Any) -> Any:
        calls.append(kwargs["n_boot"])
        return real(**kwargs)

    monkeypatch.setattr(meta_evaluation, "campaign_meta_evaluate", counted)
    client = client_as("researcher")
    url = f"/api/campaigns/{probe.campaign.slug}/metrics/"
    first = [client.get(url, {"n_boot": "2000"}) for _ in range(4)]
    assert {r.status_code for r in first} == {200} and calls == [2000]
    assert len({r.content for r in first}) == 1
    output = probe.campaign.sources.filter(is_tutorial=False).first().outputs.first()
    MetricScore.objects.create(output=output, metric="fkgl", signature="fkgl|v1", value=3.0)
    again = client.get(url, {"n_boot": "2000"})
    assert again.status_code == 200 and calls == [2000, 2000] and "fkgl" in again.json()["metrics"]


@pytest.mark.parametrize("path", ["metrics/", "report/", "leaderboard.csv"])
def test_a_heavy_read_while_another_computes_is_a_429_at_once_not_a_wait(
    probe: Probe, client_as: Any, path: str
) -> None:
    from django.core.cache import cache

    from core.heavy import heavy_gate

    cache.clear()
    client = client_as("researcher")
    url = f"/api/campaigns/{probe.campaign.slug}/{path}"
    with heavy_gate():  # another request is computing
        started = time.perf_counter()
        busy = client.get(url)
        assert time.perf_counter() - started < 1.0
    assert busy.status_code == 429 and busy["Retry-After"] == "5"
    assert "another heavy computation" in busy.json()["detail"]
    assert client.get(url).status_code == 200
    with heavy_gate():  # computed already: the cache answers even while the gate is taken
        assert client.get(url).status_code == 200


def test_thirty_lens_rescores_queue_one_job(probe: Probe, client_as: Any, caps: Any) -> None:
    client = client_as("researcher")
    url = f"/api/lens/campaigns/{probe.campaign.slug}/rescore/?version={probe.version.pk}"
    answers = [client.post(url) for _ in range(30)]
    assert {a.status_code for a in answers} == {202}, answers[0].content
    assert len({a.json()["job"] for a in answers}) == 1
    assert BackgroundJob.objects.filter(kind="metric_scores").count() == 1
