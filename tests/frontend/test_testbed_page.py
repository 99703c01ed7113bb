"""The perturbation-testbed research page: start a run on the worker, its progress websocket, its results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.models import BackgroundJob
from tests.metrics.test_testbed import SOURCES

FORM = {"dataset": "tiny", "metrics": "fkgl,sari", "magnitudes": "0,50,100", "sample": "4", "seed": "1", "rows": ""}


def test_a_researcher_runs_the_testbed_and_reads_its_results(
    tiny_corpus: str, researcher: Any, web_client_for: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = web_client_for(researcher)
    page = client.get("/research/testbed/")
    assert page.status_code == 200 and b"ASSET" in page.content and b"tiny" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/research/testbed/", FORM)
    job = BackgroundJob.objects.get(kind="testbed")
    assert response.status_code == 302 and response["Location"].endswith(f"/research/testbed/{job.pk}/")
    assert job.status == "done" and job.done == job.total == 4 + 2
    detail = client.get(f"/research/testbed/{job.pk}/").content.decode()
    assert "<td>delete</td>" in detail and "LENS Figure 2" in detail and detail.count("<svg") == 3
    assert "data-ws-path=\"/ws/testbed/" in detail
    listing = client.get("/research/testbed/").content.decode()
    assert f"/research/testbed/{job.pk}/" in listing


def test_bad_requests_are_form_errors_and_annotators_are_kept_out(
    tiny_corpus: str, researcher: Any, annotators: list[Any], web_client_for: Any
) -> None:
    client = web_client_for(researcher)
    page = client.post("/research/testbed/", {**FORM, "metrics": "fkgl,nope"})
    assert page.status_code == 200 and "unknown metrics [&#x27;nope&#x27;]" in page.content.decode()
    page = client.post("/research/testbed/", {**FORM, "rows": "9:2"})
    assert "START" in page.content.decode()
    assert not BackgroundJob.objects.filter(kind="testbed").exists()
    assert client.get("/research/testbed/999/").status_code == 404
    assert web_client_for(annotators[0]).get("/research/testbed/").status_code == 403


@pytest.mark.django_db(transaction=True)
def test_progress_websocket_sends_the_state_then_events(make_user: Any) -> None:
    from asgiref.sync import async_to_sync, sync_to_async
    from channels.testing import WebsocketCommunicator

    from core.events import broadcast
    from core.services import background_job_create
    from metrics.consumers import TestbedProgressConsumer
    from metrics.services.testbed import testbed_group

    researcher = make_user("ws-res", "researcher")
    annotator = make_user("ws-ann2")
    job = background_job_create(kind="testbed", total=7, owner=researcher)

    async def session(user: Any, job_id: int) -> Any:
        communicator = WebsocketCommunicator(TestbedProgressConsumer.as_asgi(), f"/ws/testbed/{job_id}/")
        communicator.scope["user"] = user
        communicator.scope["url_route"] = {"kwargs": {"job_id": str(job_id)}}
        connected, _ = await communicator.connect()
        if not connected:
            return None
        first = await communicator.receive_json_from()
        await sync_to_async(broadcast)(testbed_group(job_id), {"event": "testbed.progress", "done": 3, "total": 7})
        second = await communicator.receive_json_from()
        await communicator.disconnect()
        return first, second

    assert async_to_sync(session)(annotator, job.pk) is None
    assert async_to_sync(session)(researcher, job.pk + 100) is None
    first, second = async_to_sync(session)(researcher, job.pk)
    assert first == {"event": "testbed.progress", "status": "queued", "done": 0, "total": 7, "error": ""}
    assert second == {"event": "testbed.progress", "done": 3, "total": 7}


def test_the_results_say_which_learned_metric_trained_on_the_sampled_sources(
    tiny_corpus: str, researcher: Any, web_client_for: Any, django_capture_on_commit_callbacks: Any,
    tiny_checkpoint: Path, lens_on_cpu: None,
) -> None:
    from tests.factories import CampaignFactory, SourceFactory, succeeded_version

    version = succeeded_version(tiny_checkpoint)
    version.campaigns.add(campaign := CampaignFactory.create())
    for order, text in enumerate(SOURCES[:2]):
        SourceFactory.create(campaign=campaign, external_id=str(order), order=order, text=text)
    client = web_client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/research/testbed/", {**FORM, "metrics": f"fkgl,lens:{version.pk}", "sample": "6"})
    job = BackgroundJob.objects.get(kind="testbed")
    detail = client.get(f"/research/testbed/{job.pk}/").content.decode()
    assert f"lens:{version.pk} trained on 2 of the 6 sampled sources" in detail
    assert 'data-seen-in-training="fkgl"' not in detail
