"""The metric suite through the product: names, stored scores, jobs, meta-evaluation, API, exports."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from annotation.models import Output
from core.errors import ServiceError
from core.models import BackgroundJob
from evaluation.services.exports import campaign_export_jsonl
from metrics.models import MetricScore
from metrics.selectors import RatedOutput
from metrics.services.meta_evaluation import (
    campaign_meta_evaluate,
    campaign_metric_points,
    rated_meta_evaluate,
    rated_outputs_filter,
)
from metrics.services.metric_registry import metric_get, metric_names, metrics_get
from metrics.services.metric_scores import (
    campaign_metric_scores_compute,
    campaign_metric_scores_queue,
    campaign_scores_csv,
    metric_queue,
)
from tests.factories import succeeded_version

pytestmark = pytest.mark.django_db


# --- Names: the one parser ---------------------------------------------------------------------------------


def test_metric_names_expand_all_and_lists() -> None:
    assert metric_names("sari, fkgl,sari") == ["sari", "fkgl"]
    assert metric_names("all")[:5] == ["fkgl", "bleu", "gleu", "sari", "sari:lens"]
    with pytest.raises(ServiceError, match="name a metric"):
        metric_names(" , ")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope", "unknown metric 'nope'"),
        ("sari:nope", "unknown variant 'nope' of 'sari'"),
        ("lens", "no LENS version is active"),
        ("lens:latest", "no LENS version has succeeded"),
        ("lens:999", "no LENS version 999"),
        ("lens:x1", "unknown variant 'x1' of 'lens'"),
        ("", "name a metric"),
    ],
)
def test_bad_metric_names_are_400s_on_the_metric_field(name: str, message: str) -> None:
    with pytest.raises(ServiceError, match=message) as info:
        metric_get(name)
    assert info.value.status == 400 and info.value.field == "metric"


def test_lens_versions_are_suite_metrics_with_a_signature(tiny_checkpoint: Path, lens_on_cpu: None) -> None:
    version = succeeded_version(tiny_checkpoint, is_active=True)
    for name in ("lens", "lens:latest", f"lens:{version.pk}"):
        metric = metric_get(name)
        assert metric.name == f"lens:{version.pk}"
    signature = metric_get("lens").signature
    assert signature.startswith(f"lens:v{version.pk}|enc:") and "|ckpt:" in signature and "missing" not in signature
    assert "|fp32|" in signature
    assert "|loss:topk|" in signature  # the tiny checkpoint's hyperparameters name no ranking term
    for precision in ("int8", "bf16"):  # reduced-precision scores are stored apart from fp32 ones
        with override_settings(LEARNED_SERVING_PRECISION=precision):
            assert metric_get("lens").signature == signature.replace("|fp32|", f"|{precision}|")
    version.hyperparameters = {**version.hyperparameters, "rank_weight": 10.0}
    version.save(update_fields=["hyperparameters"])
    assert metric_get("lens").signature == signature.replace("|loss:topk|", "|loss:topk+rank10|")
    assert f"lens:{version.pk}" in metric_names("all")
    [score] = metric_get("lens").score_batch([_item()])
    assert math.isfinite(score.value) and 0 <= score.components["score"] <= 100
    assert metric_queue(metric_get("lens")) == "gpu" and metric_queue(metric_get("sari")) == "default"


def _item() -> Any:
    from metrics.suite import Item

    return Item("the cat sat on the mat today", "the cat sat", ("the cat sat on the mat",))


# --- Stored scores -------------------------------------------------------------------------------------------


def test_scores_are_stored_once_and_recomputed_when_the_signature_changes(rated_campaign, annotators) -> None:
    campaign = rated_campaign("stored", annotators, n_sources=3, without_references=1)
    n = Output.objects.filter(source__campaign=campaign).count()
    sari, fkgl = metrics_get("sari,fkgl")
    first = campaign_metric_scores_compute(campaign=campaign, metrics=[sari, fkgl])
    assert first.scored == {"sari": n - 3, "fkgl": n} and first.skipped == {"sari": 3, "fkgl": 0}
    again = campaign_metric_scores_compute(campaign=campaign, metrics=[sari, fkgl])
    assert again.scored == {"sari": 0, "fkgl": 0} and again.reused == {"sari": n - 3, "fkgl": n}
    row = MetricScore.objects.filter(metric="sari").first()
    assert row is not None and set(row.components) == {"add", "keep", "delete"}
    MetricScore.objects.filter(metric="fkgl").update(signature="fkgl:old", value=-99)
    redone = campaign_metric_scores_compute(campaign=campaign, metrics=[fkgl])
    assert redone.scored == {"fkgl": n}
    assert not MetricScore.objects.filter(value=-99).exists()
    assert set(MetricScore.objects.filter(metric="fkgl").values_list("signature", flat=True)) == {fkgl.signature}


def test_scoring_job_runs_on_the_worker_with_progress(
    rated_campaign, annotators, settings, django_capture_on_commit_callbacks
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    campaign = rated_campaign("queued", annotators, n_sources=2)
    with django_capture_on_commit_callbacks(execute=True):
        jobs = campaign_metric_scores_queue(campaign=campaign, metric="sari,fkgl").jobs
    [job] = jobs
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.DONE and job.kind == "metric_scores"
    assert job.done == job.total == 12
    assert MetricScore.objects.filter(output__source__campaign=campaign).count() == 12


def test_a_failing_scoring_job_ends_failed(rated_campaign, annotators, settings, monkeypatch,
                                           django_capture_on_commit_callbacks) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CELERY_TASK_EAGER_PROPAGATES = False
    campaign = rated_campaign("failing", annotators, n_sources=1)

    def boom(**kwargs: Any) -> Any:
        raise RuntimeError("encoder exploded")

    monkeypatch.setattr("metrics.services.metric_scores.campaign_metric_scores_compute", boom)
    with django_capture_on_commit_callbacks(execute=True):
        [job] = campaign_metric_scores_queue(campaign=campaign, metric="fkgl").jobs
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.FAILED and "encoder exploded" in job.error


def test_campaign_without_references_refuses_reference_metrics(rated_campaign, annotators) -> None:
    campaign = rated_campaign("norefs", annotators, n_sources=2, without_references=2)
    with pytest.raises(ServiceError, match="sari need\\(s\\) references, but campaign 'norefs' has none"):
        campaign_meta_evaluate(campaign=campaign, metric="sari", n_boot=0)
    with pytest.raises(ServiceError, match="references"):
        campaign_metric_scores_queue(campaign=campaign, metric="gleu")
    result = campaign_meta_evaluate(campaign=campaign, metric="fkgl", n_boot=0)
    assert result["outputs"] == 6


def test_export_and_csv_carry_stored_scores_with_signatures(rated_campaign, annotators) -> None:
    campaign = rated_campaign("exported", annotators, n_sources=2)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("sari,fkgl"))
    lines = [json.loads(line) for line in campaign_export_jsonl(campaign=campaign)]
    output = lines[0]["outputs"][0]
    assert set(output["scores"]) == {"fkgl", "sari"}
    assert output["scores"]["sari"]["signature"].startswith("sari:easse|")
    assert set(output["scores"]["sari"]["components"]) == {"add", "keep", "delete"}
    text = campaign_scores_csv(campaign=campaign)
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert comments[0] == "# campaign: exported" and comments[1].startswith("# fkgl: fkgl")
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert len(rows) == 6 and list(rows[0]) == ["output_id", "source", "system", "fkgl", "sari"]
    stored = dict(MetricScore.objects.filter(metric="sari").values_list("output_id", "value"))
    assert {int(r["output_id"]): float(r["sari"]) for r in rows} == pytest.approx(stored)


# --- Meta-evaluation ----------------------------------------------------------------------------------------


def test_rank_and_rate_campaign_gives_kendall_per_category(rated_campaign, annotators) -> None:
    campaign = rated_campaign("rr", annotators, n_sources=6, categories={"copy-ref": "paraphrase",
                                                                       "trim": "paraphrase", "random": "paraphrase"})
    result = campaign_meta_evaluate(campaign=campaign, metric="sari,fkgl", n_boot=100)
    assert result["kind"] == "kendall" and result["outputs"] == 18
    sari = result["metrics"]["sari"]
    assert set(sari["kendall"]) >= {"all", "paraphrase", "split", "deletion"}
    assert sari["kendall"]["all"] == sari["kendall"]["paraphrase"] > 0  # every output is a paraphrase
    pairs = sari["pairs"]["all"]
    assert pairs["concordant"] + pairs["discordant"] == 18 and sari["pairs"]["split"]["concordant"] == 0
    assert sari["kendall"]["all"] == (pairs["concordant"] - pairs["discordant"]) / 18
    assert sari["kendall"]["split"] is None
    # Pearson against the mean z per output: the scatter plot's points, correlated here.
    points = campaign_metric_points(campaign=campaign, metric="sari")["points"]
    expected = statistics.correlation([p["value"] for p in points], [p["human"] for p in points])
    assert sari["pearson"] == pytest.approx(expected) and len(points) == sari["correlation_outputs"] == 18
    assert sari["pearson_ci"][0] <= sari["pearson"] <= sari["pearson_ci"][1]
    [pair] = result["paired"]
    assert {pair["metric_a"], pair["metric_b"]} == {"sari", "fkgl"} and pair["column"] == "all"
    # Excluding a system drops its outputs from every figure.
    fewer = campaign_meta_evaluate(campaign=campaign, metric="sari", n_boot=0, exclude_systems=["random"])
    assert fewer["outputs"] == 12 and fewer["outputs_excluded"] == 6
    # The stored-only view (dashboard, API) shows the same figures without computing anything.
    stored = campaign_meta_evaluate(campaign=campaign, metric=None, compute=False, n_boot=100)
    assert list(stored["metrics"]) == ["fkgl", "sari"]
    assert stored["metrics"]["sari"]["kendall"] == sari["kendall"]


def test_exclude_sources_of_matches_sources_by_lowercased_text(rated_campaign, annotators) -> None:
    campaign = rated_campaign("main", annotators, n_sources=4)
    other = rated_campaign("other", annotators[:1], n_sources=1)
    first = campaign.sources.order_by("order").first()
    assert first is not None
    other_source = other.sources.get()
    other_source.text = "  " + first.text.upper() + " "
    other_source.save(update_fields=["text"])
    result = campaign_meta_evaluate(campaign=campaign, metric="fkgl", n_boot=0, exclude_sources_of=other)
    assert result["outputs"] == 9 and result["outputs_excluded"] == 3 and result["excluded_sources_of"] == "other"


def _aspect_output(pk: int, source: int, z: dict[str, float], raw: dict[str, float]) -> RatedOutput:
    return RatedOutput(campaign="da", source_pk=source, source=f"s{source}", complex=f"Complex {source}.",
                       output_pk=pk, system=f"sys{pk % 3}", text=f"out {pk}", category="unknown",
                       aspects_z=z, aspects_raw=raw)


def test_multi_aspect_outputs_give_pearson_per_aspect_on_z() -> None:
    rated = []
    metric: dict[int, float] = {}
    for pk in range(30):
        quality = (pk * 7) % 11 / 10
        rated.append(_aspect_output(pk, pk // 3, {"fluency": quality, "meaning": -quality},
                                    {"fluency": 100 - 60 * quality, "meaning": 50.0}))
        metric[pk] = 2 * quality + 1
    result = rated_meta_evaluate(rated, {"m": metric}, n_boot=50)
    assert result["kind"] == "pearson"
    entry = result["metrics"]["m"]
    assert entry["pearson"]["fluency"] == pytest.approx(1.0)  # z, not the raw -1
    assert entry["pearson"]["meaning"] == pytest.approx(-1.0)
    assert entry["spearman"]["fluency"] == pytest.approx(1.0)
    assert entry["n"] == {"fluency": 30, "meaning": 30}
    low, high = entry["pearson_ci"]["meaning"]
    assert low <= -0.99 and high <= -0.99


def test_aspects_without_z_fall_back_to_raw_ratings() -> None:
    rated = [_aspect_output(pk, pk, {}, {"simplicity": float(pk)}) for pk in range(10)]
    result = rated_meta_evaluate(rated, {"m": {pk: float(pk * pk) for pk in range(10)}}, n_boot=0)
    assert result["metrics"]["m"]["spearman"]["simplicity"] == pytest.approx(1.0)
    assert 0.9 < result["metrics"]["m"]["pearson"]["simplicity"] < 1.0


def test_outputs_a_metric_did_not_score_are_left_out_and_counted() -> None:
    rated = [_aspect_output(pk, pk, {"fluency": float(pk)}, {}) for pk in range(6)]
    result = rated_meta_evaluate(rated, {"a": {pk: float(pk) for pk in range(6)}, "b": {0: 1.0, 1: 2.0, 2: 0.0}},
                                 n_boot=0)
    assert result["outputs"] == 3 and result["outputs_not_scored"] == 3
    assert len(result["paired"]) == 1 and result["paired"][0]["column"] == "fluency"
    assert rated_outputs_filter(rated, exclude_sources={"complex 1."}, exclude_systems=["sys0"]) == [
        r for r in rated if r.output_pk in (2, 4, 5)
    ]
    # A name no rated output has is an error, not a filter that silently keeps everything.
    with pytest.raises(ServiceError, match="no rated output of 'sys9' to leave out") as caught:
        rated_outputs_filter(rated, exclude_systems=["sys0", "sys9"])
    assert caught.value.field == "exclude_system"


def test_points_pair_each_output_with_its_human_mean_z(rated_campaign, annotators) -> None:
    campaign = rated_campaign("points", annotators, n_sources=2)
    with pytest.raises(ServiceError, match="no stored 'sari' scores"):
        campaign_metric_points(campaign=campaign, metric="sari")
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("sari"))
    points = campaign_metric_points(campaign=campaign, metric="sari")
    assert len(points["points"]) == 6 and points["human"] == "mean z"
    assert {p["system"] for p in points["points"]} == {"copy-ref", "trim", "random"}


# --- Command -------------------------------------------------------------------------------------------------


def test_meta_evaluate_command_formats_and_errors(rated_campaign, annotators) -> None:
    rated_campaign("cmd", annotators, n_sources=3)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "cmd", "--metric", "all", "--n-boot", "20", "--format", "csv",
                 stdout=out)
    header = out.getvalue().splitlines()[0]
    assert header.startswith("metric,paraphrase") or header.startswith("metric,")
    names = [line.split(",")[0] for line in out.getvalue().splitlines()[1:]]
    assert names[:5] == ["fkgl", "bleu", "gleu", "sari", "sari:lens"]
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "cmd", "--metric", "sari,fkgl", "--n-boot", "20", stdout=out)
    assert "Kendall tau-like (95% bootstrap CI)" in out.getvalue() and "sari:easse|" in out.getvalue()
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "cmd", "--metric", "sari", "--json", "--n-boot", "0", stdout=out)
    single = json.loads(out.getvalue())
    assert single["metric"] == "sari" and set(single["kendall"]) >= {"all", "paraphrase", "split", "deletion"}
    for bad, message in [(["--metric", "nope"], "unknown metric 'nope'"),
                         (["--metric", "sari:x"], "unknown variant 'x'"),
                         (["--exclude-sources-of", "missing"], "--exclude-sources-of: no campaign"),
                         (["--n-boot", "-1"], "--n-boot must be an integer from 0 to 2000"),
                         (["--metric", "sari", "--exclude-system", "Random"],
                          r"no rated output of 'Random' to leave out; the rated systems are 'copy-ref', 'random', "
                          r"'trim'")]:
        with pytest.raises(CommandError, match=message):
            call_command("meta_evaluate", "--campaign", "cmd", *bad)
    with pytest.raises(CommandError, match="--campaign: no campaign with slug 'nowhere'"):
        call_command("meta_evaluate", "--campaign", "nowhere", "--metric", "fkgl")


# --- API -----------------------------------------------------------------------------------------------------


def test_score_api_scores_any_metric(client_for, researcher) -> None:
    item = {"complex": "About 95 species are currently accepted .", "output": "About 95 species are now agreed .",
            "references": ["About 95 species are now accepted ."]}
    response = client_for(researcher).post("/api/metrics/score", {"metric": "sari", "items": [item]}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["metric"] == "sari" and body["signature"].startswith("sari:easse|")
    assert body["results"][0]["value"] == pytest.approx(74.72, abs=0.01)
    assert set(body["results"][0]["components"]) == {"add", "keep", "delete"}
    fkgl = client_for(researcher).post("/api/metrics/score", {"metric": "fkgl", "items": [
        {"complex": "A b.", "output": "The cat sat."}]}, format="json")
    assert fkgl.status_code == 200 and body["higher_is_better"] is True and fkgl.json()["higher_is_better"] is False


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"metric": "nope", "items": [{"complex": "a", "output": "b"}]}, "metric", "unknown metric 'nope'"),
        ({"metric": "sari:x", "items": [{"complex": "a", "output": "b"}]}, "metric", "unknown variant 'x'"),
        ({"metric": "sari", "items": [{"complex": "a", "output": "b", "references": ["c"]},
                                      {"complex": "a", "output": "b"}]}, "items", "sari needs references: items[1]"),
        ({"metric": "fkgl", "items": [{"complex": "a", "output": "b"}, {"complex": "a", "output": "  "}]},
         "items", "items[1].output is empty"),
        ({"metric": "fkgl", "items": [{"complex": "a"}]}, "items", "items[0]: 'output' must be a string"),
        ({"metric": "fkgl", "items": []}, "items", "non-empty list"),
        ({"metric": "fkgl", "items": "x"}, "items", "non-empty list"),
        ({"metric": "sari", "items": [{"complex": "a", "output": "b", "references": "c"}]}, "items",
         "items[0]: 'references' must be a list"),
        ({"metric": "fkgl", "items": [{"complex": "a", "output": "b"}] * 65}, "items", "at most 64"),
    ],
)
def test_score_api_bad_input_names_what_and_where(client_for, researcher, payload, field, message) -> None:
    response = client_for(researcher).post("/api/metrics/score", payload, format="json")
    assert response.status_code == 400, response.content
    assert message in response.json()["detail"] and response.json()["field"] == field


def test_score_api_needs_a_researcher(client_for, annotators) -> None:
    response = client_for(annotators[0]).post("/api/metrics/score", {"metric": "fkgl", "items": []}, format="json")
    assert response.status_code == 403


def test_campaign_metrics_api_shows_stored_comparison_to_its_researchers(
    client_for, researcher, make_user, rated_campaign, annotators, settings, django_capture_on_commit_callbacks,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    campaign = rated_campaign("api-metrics", annotators, n_sources=3)
    campaign.owners.add(researcher)
    client = client_for(researcher)
    empty = client.get("/api/campaigns/api-metrics/metrics/?n_boot=10")
    assert empty.status_code == 200 and empty.json()["metrics"] == {}
    with django_capture_on_commit_callbacks(execute=True):
        queued = client.post("/api/campaigns/api-metrics/metrics/score/", {"metric": "sari,fkgl"}, format="json")
    assert queued.status_code == 202 and len(queued.json()["jobs"]) == 1
    body = client.get("/api/campaigns/api-metrics/metrics/?n_boot=10").json()
    assert list(body["metrics"]) == ["fkgl", "sari"] and body["kind"] == "kendall" and "comparison" not in body
    fewer = client.get("/api/campaigns/api-metrics/metrics/?n_boot=10&exclude_system=random").json()
    assert fewer["outputs_excluded"] == 3 and fewer["excluded_systems"] == ["random"]
    assert body["metrics"]["sari"]["signature"].startswith("sari:easse|")
    points = client.get("/api/campaigns/api-metrics/metrics/points/?metric=sari").json()
    assert len(points["points"]) == 9
    scores = client.get("/api/campaigns/api-metrics/metrics/scores.csv")
    assert scores.status_code == 200 and scores["Content-Type"] == "text/csv"
    assert b"output_id,source,system,fkgl,sari" in scores.content
    for url, field in [("/api/campaigns/api-metrics/metrics/?n_boot=x", "n_boot"),
                       ("/api/campaigns/api-metrics/metrics/?n_boot=99999", "n_boot"),
                       ("/api/campaigns/api-metrics/metrics/points/", "metric"),
                       ("/api/campaigns/api-metrics/metrics/points/?metric=bleu", "metric"),
                       ("/api/campaigns/api-metrics/metrics/?exclude_system=random&exclude_system=rnd",
                        "exclude_system")]:
        response = client.get(url)
        assert response.status_code == 400 and response.json()["field"] == field, url
    bad = client.post("/api/campaigns/api-metrics/metrics/score/", {"metric": "nope"}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "metric"
    stranger = make_user("stranger", role="researcher")
    assert client_for(stranger).get("/api/campaigns/api-metrics/metrics/").status_code == 404
    assert client_for(annotators[0]).get("/api/campaigns/api-metrics/metrics/").status_code == 403


def test_scores_csv_is_parseable_by_csv_module(rated_campaign, annotators) -> None:
    campaign = rated_campaign("csvonly", annotators, n_sources=1)
    text = campaign_scores_csv(campaign=campaign)
    assert list(csv.reader(io.StringIO(text.split("\n", 1)[1]))) == [["output_id", "source", "system"]] + [
        [str(o.pk), "s0", o.system.name] for o in Output.objects.filter(source__campaign=campaign).order_by("row_index")
    ]


# --- Dashboard panel -------------------------------------------------------------------------------------------


def test_dashboard_panel_and_its_score_button(
    web_client_for, researcher, annotators, rated_campaign, settings, django_capture_on_commit_callbacks,
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    campaign = rated_campaign("panel", annotators, n_sources=2)
    campaign.owners.add(researcher)
    client = web_client_for(researcher)
    page = client.get("/research/campaigns/panel/").content.decode()
    assert 'id="metrics-panel"' in page and "No metric has scored this campaign yet" in page
    assert "frontend/research/metrics.js" in page
    assert client.get("/research/campaigns/panel/metrics-score/").status_code == 302  # GET changes nothing
    assert not MetricScore.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/research/campaigns/panel/metrics-score/")
    assert response.status_code == 302 and response["Location"].endswith("#metrics-title")
    names = set(MetricScore.objects.values_list("metric", flat=True))
    assert {"fkgl", "bleu", "gleu", "sari", "sari:lens", "bertscore", "self-bertscore"} == names
    page = client.get("/research/campaigns/panel/").content.decode()
    assert 'data-stored="fkgl,bleu,gleu,sari,sari:lens,bertscore,self-bertscore"' in page
    assert "/api/campaigns/panel/metrics/scores.csv" in page and "Scoring job #" in page
    assert web_client_for(annotators[0]).post("/research/campaigns/panel/metrics-score/").status_code == 403
