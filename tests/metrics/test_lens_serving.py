"""Serving LENS: the score API and its limits, the model cache, campaign rescoring and the LENS leaderboard,
meta-evaluation, and the train_lens / lens_score / meta_evaluate commands. Tiny offline encoder, CPU."""

from __future__ import annotations

import json
import random
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Annotation, Campaign, Output, OutputJudgement
from core.models import BackgroundJob
from metrics.lens import z_to_score
from metrics.models import LearnedVersion, MetricScore
from metrics.selectors import campaign_lens_leaderboard
from metrics.services.metric_scores import campaign_lens_rescore
from metrics.services.scoring import MAX_ITEMS, MAX_TEXT_CHARS, scorer_cache
from metrics.services.training import learned_version_promote
from tests.factories import rated_campaign as make_rated_campaign
from tests.factories import succeeded_version
from tests.tiny import TINY_OPTIONS

pytestmark = pytest.mark.usefixtures("lens_on_cpu")

ITEM = {"complex": "the old man saw a big red car in the city", "output": "the man saw a red car",
        "references": ["he saw a car", "the old man saw a car in the city"]}


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    scorer_cache.clear()


@pytest.fixture
def active(db, tiny_checkpoint: Path) -> LearnedVersion:
    return learned_version_promote(version=succeeded_version(tiny_checkpoint))


# --- Score API ----------------------------------------------------------------------------------------------


def test_score_api_returns_z_and_a_0_100_score_with_the_active_version(active, researcher, client_for) -> None:
    response = client_for(researcher).post("/api/lens/score/", {"items": [ITEM, {**ITEM, "output": "a dog"}]},
                                           format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["version"] == active.pk and len(body["results"]) == 2
    for result in body["results"]:
        assert 0.0 <= result["score"] <= 100.0
        assert result["score"] == pytest.approx(z_to_score(result["z"]))
        assert len(result["per_reference"]) == 2 and result["z"] == pytest.approx(max(result["per_reference"]))
        assert result["truncated"] is False
    # ?version= picks another succeeded version; the cache keeps both (LRU of 2).
    other = succeeded_version(Path(active.checkpoint_path))
    again = client_for(researcher).post(f"/api/lens/score/?version={other.pk}", {"items": [ITEM]}, format="json")
    assert again.status_code == 200 and again.json()["version"] == other.pk
    assert again.json()["results"][0]["z"] == pytest.approx(body["results"][0]["z"], abs=1e-5)
    assert sorted(scorer_cache.loaded()) == sorted([active.pk, other.pk])
    third = succeeded_version(Path(active.checkpoint_path))
    client_for(researcher).post(f"/api/lens/score/?version={third.pk}", {"items": [ITEM]}, format="json")
    assert scorer_cache.loaded() == [other.pk, third.pk]


def test_score_api_validates_batch_size_lengths_and_versions(active, annotators, researcher, client_for) -> None:
    client = client_for(researcher)

    def post(items, query=""):
        return client.post(f"/api/lens/score/{query}", {"items": items}, format="json")

    too_many = post([ITEM] * (MAX_ITEMS + 1))
    assert too_many.status_code == 400 and f"at most {MAX_ITEMS} items" in too_many.json()["detail"]
    too_long = post([ITEM, {**ITEM, "output": "word " * (MAX_TEXT_CHARS // 5 + 1)}])
    assert too_long.status_code == 400
    assert "items[1].output" in too_long.json()["detail"] and str(MAX_TEXT_CHARS) in too_long.json()["detail"]
    assert post([{**ITEM, "references": []}]).status_code == 400
    assert post([{**ITEM, "complex": "   "}]).status_code == 400
    assert post([]).status_code == 400
    failed = LearnedVersion.objects.create(status=LearnedVersion.Status.FAILED, encoder="x", error="boom")
    conflict = post([ITEM], f"?version={failed.pk}")
    assert conflict.status_code == 409 and "failed" in conflict.json()["detail"]
    assert post([ITEM], "?version=99999").status_code == 404
    assert client_for(annotators[0]).post("/api/lens/score/", {"items": [ITEM]}, format="json").status_code == 403
    LearnedVersion.objects.filter(pk=active.pk).update(is_active=False)
    none_active = post([ITEM])
    assert none_active.status_code == 409 and "no LENS version is active" in none_active.json()["detail"]


# --- Rescoring a campaign and the LENS leaderboard ----------------------------------------------------------


def test_rescore_campaign_stores_scores_and_feeds_the_leaderboard(
    active, annotators, researcher, client_for, django_capture_on_commit_callbacks,
) -> None:
    campaign = make_rated_campaign("rescore", annotators, n_sources=4, without_references=1)
    campaign.owners.add(researcher)
    assert campaign_lens_leaderboard(campaign) == []
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(researcher).post("/api/lens/campaigns/rescore/rescore/")
    assert response.status_code == 202, response.content
    job = BackgroundJob.objects.get(pk=response.json()["job"])
    # The 3 outputs of the source without references are skipped; the 9 others are scored and stored as
    # the metric lens:<id>, like every metric's scores.
    assert job.status == BackgroundJob.Status.DONE and job.done == job.total == 9
    assert f"lens:{active.pk}: 3 output(s) not scored" in job.error
    stored = MetricScore.objects.filter(metric=f"lens:{active.pk}")
    assert stored.count() == 9
    first = stored.first()
    assert first is not None and first.components["score"] == pytest.approx(z_to_score(first.value))
    board = campaign_lens_leaderboard(campaign)
    assert {row["system"] for row in board} == {"copy-ref", "trim", "random"}
    assert [row["lens"] for row in board] == sorted((row["lens"] for row in board), reverse=True)
    for row in board:
        assert 0 <= row["lens"] <= 100 and row["outputs"] == 3 and row["version"] == active.pk
    assert client_for(researcher).get("/api/lens/campaigns/rescore/leaderboard/").json() == board
    # Scoring again keeps what is stored under the current signature, and recomputes a stale row.
    MetricScore.objects.filter(pk=first.pk).update(signature="stale", value=99.0)
    with django_capture_on_commit_callbacks(execute=True):
        again = campaign_lens_rescore(campaign=campaign)
    again.refresh_from_db()
    assert (again.status, again.done, again.total) == (BackgroundJob.Status.DONE, 1, 1)
    assert stored.count() == 9 and stored.get(pk=first.pk).value == pytest.approx(first.value)
    assert campaign_lens_leaderboard(campaign) == [{**row, "lens": pytest.approx(row["lens"], abs=1e-4),
                                                   "lens_z": pytest.approx(row["lens_z"], abs=1e-5)} for row in board]


def test_research_dashboard_shows_lens_beside_the_human_leaderboard(
    tiny_checkpoint: Path, annotators, researcher, client, django_capture_on_commit_callbacks,
) -> None:
    campaign = make_rated_campaign("beside", annotators, n_sources=4)
    campaign.owners.add(researcher)
    client.force_login(researcher)
    page = client.get("/research/campaigns/beside/").content.decode()
    assert "No LENS version is active" in page and "lens-table" not in page
    # Without an active version the rescore form explains instead of failing.
    response = client.post("/research/campaigns/beside/lens-rescore/")
    page = response.content.decode()
    assert response.status_code == 409  # the dashboard, the refusal at the top of the form
    assert "no LENS version is active; promote one first" in page.split('id="lens-rescore-errors"')[1]

    active = learned_version_promote(version=succeeded_version(tiny_checkpoint))
    page = client.get("/research/campaigns/beside/").content.decode()
    assert f"LENS v{active.pk} has not scored this campaign yet" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/research/campaigns/beside/lens-rescore/")
    assert response.status_code == 302
    page = client.get("/research/campaigns/beside/").content.decode()
    text = re.sub(r"<[^>]+>", "", page)  # the job line's values sit in spans the live updates rewrite
    assert 'id="lens-table"' in page and "done, 12 / 12 outputs" in text
    board = campaign_lens_leaderboard(campaign)
    # Every system appears with its LENS mean and its human rank (copy-ref > trim > random by construction).
    for row in board:
        assert row["system"] in page and f"{row['lens']:.2f}" in page
    from metrics.services.metric_scores import campaign_lens_beside_human

    beside = campaign_lens_beside_human(campaign)
    assert {row["system"]: row["human_rank"] for row in beside["rows"]} == {"copy-ref": 1, "trim": 2, "random": 3}
    assert beside["spearman"] is not None and -1.0 <= beside["spearman"] <= 1.0
    # Annotators and other researchers cannot trigger scoring.
    client.force_login(annotators[0])
    assert client.post("/research/campaigns/beside/lens-rescore/").status_code == 403


# --- Meta-evaluation ------------------------------------------------------------------------------------------


def _rate_demo(campaign: Campaign, annotators: list) -> None:
    """Synthetic submitted annotations of the demo campaign: each rater's ratings follow a system ranking."""
    rng = random.Random(11)
    quality = {"Copy": 55, "Scramble": 5, "Splitter": 80, "Trimmer": 60, "Rewriter": 75, "Short-T5": 30}
    categories = {"Splitter": "split", "Trimmer": "deletion", "Short-T5": "deletion"}
    for rater in annotators:
        for source in campaign.sources.all():
            annotation = Annotation.objects.create(source=source, annotator=rater, status=Annotation.Status.SUBMITTED)
            OutputJudgement.objects.bulk_create(
                OutputJudgement(annotation=annotation, output=o, category=categories.get(o.system.name, "paraphrase"),
                                rating=max(0, min(100, quality.get(o.system.name, 50) + rng.uniform(-10, 10))))
                for o in Output.objects.filter(source=source).select_related("system")
            )


def test_meta_evaluate_json_shape_on_the_demo_campaign(demo_campaign, annotators, active) -> None:
    _rate_demo(demo_campaign, annotators)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "demo", "--metric", "lens", "--json", "--n-boot", "50", stdout=out)
    result = json.loads(out.getvalue())
    assert result["metric"] == "lens" and result["version"] == active.pk and result["campaign"] == "demo"
    assert set(result["kendall"]) == {"all", "deletion", "paraphrase", "split"}
    assert set(result["kendall_ci"]) == set(result["kendall"]) == set(result["pairs"])
    for key, value in result["kendall"].items():
        pairs = result["pairs"][key]
        assert set(pairs) == {"concordant", "discordant"}
        if pairs["concordant"] + pairs["discordant"]:
            assert -1 <= value <= 1
            assert value == pytest.approx((pairs["concordant"] - pairs["discordant"])
                                          / (pairs["concordant"] + pairs["discordant"]))
        low, high = result["kendall_ci"][key]
        assert low is None or low <= high
    assert result["pairs"]["all"]["concordant"] + result["pairs"]["all"]["discordant"] > 0
    assert sum(result["pairs"][k]["concordant"] for k in ("deletion", "paraphrase", "split")) == \
        result["pairs"]["all"]["concordant"]
    for key in ("pearson", "spearman"):
        assert -1 <= result[key] <= 1 and len(result[f"{key}_ci"]) == 2
        assert result["ci"][key] == result[f"{key}_ci"]
    assert result["ci"]["kendall"] == result["kendall_ci"]
    n_outputs = Output.objects.filter(source__campaign=demo_campaign).count()
    assert result["outputs"] == n_outputs == MetricScore.objects.filter(metric=f"lens:{active.pk}").count()
    # lens:<id> and lens:latest name versions explicitly; the plain text report works too.
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "demo", "--metric", f"lens:{active.pk}", "--n-boot", "10",
                 "--exclude-system", "Copy", stdout=out)
    assert "all" in out.getvalue() and "pearson" in out.getvalue()
    with pytest.raises(CommandError, match="unknown metric"):
        call_command("meta_evaluate", "--campaign", "demo", "--metric", "nope")


# --- Commands --------------------------------------------------------------------------------------------------


def test_train_lens_command_end_to_end_then_lens_score(
    annotators, tiny_encoder_dir: Path, tmp_path: Path,
) -> None:
    make_rated_campaign("cmd-a", annotators, n_sources=4)
    make_rated_campaign("cmd-b", annotators[:2], n_sources=3, seed=2)
    out = StringIO()
    options = [item for key, value in TINY_OPTIONS.items() for item in ("--option", f"{key}={json.dumps(value)}")]
    call_command("train_lens", "--campaign", "cmd-a", "--campaign", "cmd-b", "--encoder", str(tiny_encoder_dir),
                 "--k", "2", "--epochs", "2", "--heldout", "0.2", "--seed", "1", "--activate", *options, stdout=out)
    lines = out.getvalue().splitlines()
    summary = json.loads(lines[-1])
    version = LearnedVersion.objects.get(pk=summary["version"])
    assert summary["status"] == "succeeded" and version.is_active and summary["active"] is True
    assert any(f"LENS v{version.pk} succeeded" in line and "tau_all=" in line for line in lines)
    assert sorted(version.campaigns.values_list("slug", flat=True)) == ["cmd-a", "cmd-b"]
    assert version.data_counts["sources"] == 7 and version.data_counts["heldout_sources"] == 1
    assert version.seed == 1 and version.hyperparameters["seed"] == 1

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ITEM) + "\n\n" + json.dumps({**ITEM, "id": "x2", "output": "a cat"}) + "\n")
    target = tmp_path / "out.jsonl"
    call_command("lens_score", "--version", "active", "--input", str(source), "--out", str(target), stdout=StringIO())
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == 2 and rows[1]["id"] == "x2" and rows[0]["lens_version"] == version.pk
    assert all(0 <= r["lens_score"] <= 100 and r["lens_score"] == pytest.approx(z_to_score(r["lens_z"]))
               for r in rows)
    call_command("lens_score", "--version", str(version.pk), "--input", str(source), "--out", str(target),
                 stdout=StringIO())
    source.write_text(json.dumps({**ITEM, "references": "not a list"}) + "\n")
    with pytest.raises(CommandError, match=r"in\.jsonl:1"):
        call_command("lens_score", "--input", str(source), "--out", str(target))


def test_train_lens_command_reports_a_failure(annotators, tmp_path: Path) -> None:
    make_rated_campaign("cmd-fail", annotators, n_sources=3)
    with pytest.raises(CommandError, match="failed"):
        call_command("train_lens", "--campaign", "cmd-fail", "--encoder", str(tmp_path / "no-such-encoder"),
                     "--epochs", "1", stdout=StringIO())
    version = LearnedVersion.objects.get()
    assert version.status == LearnedVersion.Status.FAILED and version.error
    assert not LearnedVersion.objects.filter(is_active=True).exists()
    with pytest.raises(CommandError, match="no campaign"):
        call_command("train_lens", "--campaign", "nope")


# --- ?version= ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "abc", "1.5", "-1", " 1", "²", "٣", "1" * 5000, "1" * 19, "Latest"])
def test_version_param_rejects_anything_but_active_latest_or_an_id(value: str) -> None:
    from core.errors import ServiceError
    from metrics.selectors import learned_version_ref

    with pytest.raises(ServiceError, match="version must be 'active', 'latest' or a version id") as info:
        learned_version_ref(value)
    assert info.value.field == "version" and info.value.status == 400


def test_version_param_parses_the_three_forms() -> None:
    from metrics.selectors import learned_version_ref

    assert [learned_version_ref(v) for v in (None, "active", "latest", "42", "0" * 18)] == [
        "active", "active", "latest", 42, 0]


@pytest.mark.parametrize("query", ["?version=%C2%B2", "?version=" + "9" * 5000, "?version=abc", "?version="])
def test_every_version_endpoint_answers_400_naming_the_parameter(
    query: str, active, annotators, researcher, client_for,
) -> None:
    campaign = make_rated_campaign("versions", annotators, n_sources=2)
    campaign.owners.add(researcher)
    client = client_for(researcher)
    responses = [
        client.post(f"/api/lens/score/{query}", {"items": [ITEM]}, format="json"),
        client.post(f"/api/lens/campaigns/versions/rescore/{query}"),
        client.get(f"/api/lens/campaigns/versions/leaderboard/{query}"),
    ]
    for response in responses:
        assert response.status_code == 400, response.content
        assert response.json()["field"] == "version" and "version must be" in response.json()["detail"]


def test_version_latest_and_unknown_ids(active, annotators, researcher, client_for) -> None:
    newer = succeeded_version(Path(active.checkpoint_path))
    client = client_for(researcher)
    latest = client.post("/api/lens/score/?version=latest", {"items": [ITEM]}, format="json")
    assert latest.status_code == 200 and latest.json()["version"] == newer.pk
    campaign = make_rated_campaign("ids", annotators, n_sources=2)
    campaign.owners.add(researcher)
    assert client.get("/api/lens/campaigns/ids/leaderboard/?version=99999").status_code == 404
    assert client.post("/api/lens/campaigns/ids/rescore/?version=99999").status_code == 404
