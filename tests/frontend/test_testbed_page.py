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
    assert page.status_code == 400 and "No metric is called nope." in page.content.decode()
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


def test_every_form_error_at_once_next_to_its_field_in_page_words(
    tiny_corpus: str, researcher: Any, web_client_for: Any
) -> None:
    """Issue 44 (13): errors came one at a time, at the top, in command-line words (``--magnitudes 'abc'``)."""
    client = web_client_for(researcher)
    response = client.post("/research/testbed/", {**FORM, "metrics": "fkgl,nope", "magnitudes": "abc",
                                                  "sample": "0", "seed": "-1", "rows": "9:2"})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert set(errors) == {"metrics", "magnitudes", "sample", "seed", "rows"}
    assert errors["magnitudes"] == ["Give percentages like 0,10,...,100 or 0,25,50 (got 'abc')."]
    assert errors["metrics"][0].startswith("No metric is called nope.")
    assert errors["sample"] == ["Give a whole number from 1 to 2000 (got 0)."]
    assert "END at most 6" in errors["rows"][0]
    page = response.content.decode()
    assert "--magnitudes" not in page and "--rows" not in page and page.count('class="field-error"') == 5
    assert not BackgroundJob.objects.filter(kind="testbed").exists()


def test_the_command_keeps_its_own_wording_from_the_same_check(tiny_corpus: str, tmp_path: Path) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=r"--magnitudes 'abc': give percentages"):
        call_command("perturbation_testbed", "--metrics", "fkgl", "--dataset", "tiny", "--magnitudes", "abc",
                     "--out", str(tmp_path / "out"))


def test_a_corpus_is_imported_from_the_testbed_page(researcher: Any, web_client_for: Any, settings: Any) -> None:
    """Issue 44 (6): the empty testbed said to run ``manage.py import_corpus``; the page imports one itself."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.models import Corpus

    client = web_client_for(researcher)
    page = client.get("/research/testbed/").content.decode()
    assert "manage.py import_corpus" not in page and 'href="#corpus-title"' in page
    assert 'action="/research/testbed/corpora/"' in page and 'enctype="multipart/form-data"' in page

    def post(name: str, source: bytes, *refs: bytes) -> Any:
        return client.post("/research/testbed/corpora/", {
            "name": name, "source": SimpleUploadedFile("c.orig", source),
            "references": [SimpleUploadedFile(f"c.simp.{k}", r) for k, r in enumerate(refs)]})

    bad = post("tiny web", b"One long sentence.\nAnother one.\n", b"One.\n")
    assert bad.status_code == 400
    assert "letters, digits" in bad.context["corpus_form"].errors["name"][0]
    bad = post("tiny-web", b"One long sentence.\nAnother one.\n", b"One.\n")
    assert "c.simp.0: 1 line, but c.orig has 2 lines" in bad.context["corpus_form"].errors["references"][0]
    settings.IMPORT_MAX_TEXT_CHARS = 12
    bad = post("tiny-web", b"One long sentence.\nAnother one.\n", b"One.\nAnother.\n", b"Uno.\nOtro.\n")
    assert "c.orig line 1: a text may have at most 12 characters" in bad.context["corpus_form"].errors["source"][0]
    settings.IMPORT_MAX_TEXT_CHARS = 20000
    assert not Corpus.objects.exists()
    good = post("tiny-web", b"One long sentence.\nAnother one.\n", b"One.\nAnother.\n", b"Uno.\nOtro.\n")
    assert good.status_code == 302 and good["Location"] == "/research/testbed/"
    corpus = Corpus.objects.get(name="tiny-web")
    assert list(corpus.items.order_by("index").values_list("references", flat=True)) == [["One.", "Uno."],
                                                                                          ["Another.", "Otro."]]
    page = client.get("/research/testbed/").content.decode()
    assert '<option value="tiny-web">' in page and "Corpus tiny-web imported: 2 sources" in page
    again = post("tiny-web", b"X.\n", b"Y.\n")
    assert again.status_code == 409 and "already imported" in again.context["corpus_form"].errors["name"][0]


def test_sources_without_an_eligible_span_read_as_a_sentence_and_a_table() -> None:
    from metrics.perturb.testbed import skipped_rows, skipped_sentence

    assert skipped_sentence({"number_swap": 0}) == ""
    sentence = skipped_sentence({"number_swap": 4, "delete": 1})
    assert "{" not in sentence and "number swap 4 sources" in sentence and "delete 1 source" in sentence
    rows = skipped_rows({"number_swap": 4})
    assert [(r["perturbation"], r["sources"]) for r in rows] == [("number_swap", 4)] and rows[0]["criterion"]


def test_a_finished_run_lists_the_sources_left_out_as_a_table(researcher: Any, web_client_for: Any, settings: Any,
                                                              tmp_path: Path) -> None:
    """Issue 44 (13): the run showed ``no eligible span: {'number_swap': 4, ...}``."""
    import json

    from core.services import background_job_create, background_job_finish
    from metrics.perturb.testbed import skipped_sentence
    from metrics.services.testbed import testbed_job_dir

    settings.VAR_DIR = tmp_path
    job = background_job_create(kind="testbed", owner=researcher)
    folder = testbed_job_dir(job.pk)
    folder.mkdir(parents=True)
    (folder / "params.json").write_text(json.dumps({"dataset": "tiny", "metrics": ["fkgl", "sari"], "seed": 0}))
    (folder / "slopes.json").write_text(json.dumps([{"metric": "fkgl", "perturbation": "delete", "slope": 1.0,
                                                     "p_holm": 0.01, "expected_direction": "down",
                                                     "as_expected": False},
                                                    {"metric": "sari", "perturbation": "split", "slope": 2.0,
                                                     "p_holm": 0.02, "expected_direction": "up",
                                                     "as_expected": True}]))
    (folder / "summary.json").write_text(json.dumps({"skipped_no_eligible_span": {"number_swap": 4, "delete": 0},
                                                     "config": {"sample": 4, "seen_in_training": {}}}))
    background_job_finish(job_id=job.pk, note=skipped_sentence({"number_swap": 4, "delete": 0}))
    client = web_client_for(researcher)
    detail = client.get(f"/research/testbed/{job.pk}/").content.decode()
    assert '<tr data-skipped="number_swap"><td>number swap</td>' in detail and "<td>4</td>" in detail
    assert 'data-skipped="delete"' not in detail
    assert 'title="p_holm 0.0100, expected down"' in detail
    assert "<td>\n        –</td>" in detail and 'title="p_holm , expected "' not in detail  # an empty cell: no tooltip
    listing = client.get("/research/testbed/").content.decode()
    assert "number swap 4 sources" in listing and "{&#x27;number_swap" not in listing
