"""REFEREE and SIERA through the shared learned-metric machinery: create, train, promote per kind, roll back,
serve through the metric registry, the command, and the clear error without the training corpus."""

from __future__ import annotations

import io
import json
import random
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Campaign, Corpus, CorpusItem
from core.errors import Conflict, NotAllowed, ServiceError
from metrics.models import LearnedVersion
from metrics.services.metric_registry import metric_get, metric_names
from metrics.services.training import learned_version_create, learned_version_promote, learned_version_train
from metrics.suite import Item
from tests.factories import rated_campaign as make_rated_campaign
from tests.factories import succeeded_version
from tests.tiny import WORDS

pytestmark = pytest.mark.usefixtures("lens_on_cpu")


@pytest.fixture
def rated(annotators: list[Any]) -> Campaign:
    return make_rated_campaign("rated", annotators)


@pytest.fixture
def asset_valid(db: None) -> Corpus:
    """A small stand-in for ASSET validation: sources with three references each."""
    rng = random.Random(2)
    corpus = Corpus.objects.create(name="asset-valid")
    for index in range(8):
        words = [rng.choice(WORDS) for _ in range(12)]
        CorpusItem.objects.create(corpus=corpus, index=index, source=" ".join(words),
                                  references=[" ".join(words[:6]), " ".join(words[2:8]), " ".join(words[4:9])])
    return corpus


def _options(tiny_encoder_dir: Path, **extra: Any) -> dict[str, Any]:
    return {"encoder": str(tiny_encoder_dir), "max_length": 24, "batch_size": 4, **extra}


def _referee(tiny_encoder_dir: Path, rated: Campaign, seed: int = 0) -> LearnedVersion:
    version = learned_version_create(
        kind="referee", campaigns=[rated], started_by=None, enqueue=False,
        options=_options(tiny_encoder_dir, seed=seed, finetune_epochs=1, encoder_lr=1e-3, head_lr=3e-3),
    )
    return learned_version_train(version=version)


def test_without_asset_valid_referee_and_siera_fail_clearly(rated: Campaign, tiny_encoder_dir: Path) -> None:
    for kind, campaigns in (("referee", [rated]), ("siera", [])):
        with pytest.raises(ServiceError) as caught:
            learned_version_create(kind=kind, campaigns=campaigns, options=_options(tiny_encoder_dir),
                                   started_by=None, enqueue=False)
        assert caught.value.field == "corpus"
        assert "corpus 'asset-valid' has not been imported" in caught.value.message
        assert "import_corpus --name asset-valid" in caught.value.message
    assert not LearnedVersion.objects.exists()
    with pytest.raises(CommandError, match="asset-valid' has not been imported"):
        call_command("train_metric", "--kind", "siera", "--option", f'encoder="{tiny_encoder_dir}"')
    # REFEREE fine-tuned only (the stage ablation) needs no corpus
    version = learned_version_create(kind="referee", campaigns=[rated], started_by=None, enqueue=False,
                                     options=_options(tiny_encoder_dir, stages=[3]))
    assert version.corpora == [] and version.kind == "referee"
    # nor does one whose stage 2 reads the rated outputs alone; with stage 1 the corpus is needed again
    outputs = learned_version_create(kind="referee", campaigns=[rated], started_by=None, enqueue=False,
                                     options=_options(tiny_encoder_dir, stages=[2, 3], stage2_data="outputs",
                                                      stage2_epochs=1, finetune_epochs=1))
    assert outputs.corpora == []
    trained = learned_version_train(version=outputs)
    assert trained.status == LearnedVersion.Status.SUCCEEDED, trained.error
    assert trained.heldout_results["rated_outputs"] > 0 and trained.heldout_results["synthetic_outputs"] == 0
    with pytest.raises(ServiceError, match="asset-valid' has not been imported"):
        learned_version_create(kind="referee", campaigns=[rated], started_by=None, enqueue=False,
                               options=_options(tiny_encoder_dir, stage2_data="outputs"))
    with pytest.raises(ServiceError) as caught:
        learned_version_create(kind="referee", campaigns=[rated], started_by=None, enqueue=False,
                               options=_options(tiny_encoder_dir, stage2_data="systems"))
    assert caught.value.field == "stage2_data"


def test_bad_kind_options_and_rights_are_refused(
    rated: Campaign, asset_valid: Corpus, tiny_encoder_dir: Path, annotators: list[Any]
) -> None:
    with pytest.raises(ServiceError) as caught:
        learned_version_create(kind="siera", options={"epochs": 0}, started_by=None, enqueue=False)
    assert caught.value.field == "epochs"
    with pytest.raises(ServiceError, match="unknown learned metric"):
        learned_version_create(kind="bleurt", options={}, started_by=None, enqueue=False)
    with pytest.raises(ServiceError, match="corpus only"):
        learned_version_create(kind="siera", options={}, campaigns=[rated], started_by=None, enqueue=False)
    with pytest.raises(ServiceError, match="choose at least one campaign"):
        learned_version_create(kind="referee", options={}, started_by=None, enqueue=False)
    with pytest.raises(NotAllowed):
        learned_version_create(kind="siera", options={}, started_by=annotators[0], enqueue=False)


def test_referee_trains_promotes_per_kind_rolls_back_and_scores(
    rated: Campaign, asset_valid: Corpus, tiny_encoder_dir: Path, tiny_checkpoint: Path
) -> None:
    lens = learned_version_promote(version=succeeded_version(tiny_checkpoint))
    first = _referee(tiny_encoder_dir, rated, seed=1)
    assert first.status == LearnedVersion.Status.SUCCEEDED, first.error
    assert first.corpora == ["asset-valid"] and first.data_counts["corpus_sources"] == 8
    assert set(first.heldout_results["stage_seconds"]) >= {"stage1", "stage2", "stage3"}
    assert first.events.filter(kind="epoch").count() == 3
    assert (Path(first.checkpoint_path).parent / "snapshot.json").is_file()
    second = _referee(tiny_encoder_dir, rated, seed=2)
    # force: which of the two tiny runs has the better held-out τ is chance; the warning is tested elsewhere
    learned_version_promote(version=first, force=True)
    learned_version_promote(version=second, force=True)
    # one active version per kind: LENS keeps serving
    active = set(LearnedVersion.objects.filter(is_active=True).values_list("kind", "pk"))
    assert active == {("lens", lens.pk), ("referee", second.pk)}
    learned_version_promote(version=first, force=True)  # rollback
    assert set(LearnedVersion.objects.filter(is_active=True).values_list("pk", flat=True)) == {lens.pk, first.pk}

    metric = metric_get("referee")
    assert metric.name == f"referee:{first.pk}" and not metric.needs_references
    item = Item("the old man saw the big red car", "the man saw the car")
    value = metric.score_batch([item])[0].value
    assert value == metric_get(f"referee:{first.pk}").score_batch([item])[0].value
    long = Item(" ".join(WORDS), "the man saw the car")  # longer than the version's 24 tokens
    assert [s.components for s in metric.score_batch([item, long])] == [{"truncated": 0.0}, {"truncated": 1.0}]
    assert metric_get("referee:latest").name == f"referee:{second.pk}"
    assert {f"referee:{first.pk}", f"referee:{second.pk}", f"lens:{lens.pk}"} <= set(metric_names("all"))
    with pytest.raises(ServiceError, match=f"no REFEREE version {lens.pk}"):
        metric_get(f"referee:{lens.pk}")
    with pytest.raises(ServiceError, match=f"no LENS version {first.pk}"):
        metric_get(f"lens:{first.pk}")
    with pytest.raises(ServiceError, match="no SIERA version is active"):
        metric_get("siera")


def test_siera_through_the_command_and_the_registry(asset_valid: Corpus, tiny_encoder_dir: Path) -> None:
    out = StringIO()
    call_command("train_metric", "--kind", "siera", "--seed", "3", "--activate",
                 "--option", f'encoder="{tiny_encoder_dir}"', "--option", "max_length=24",
                 "--option", "epochs=2", "--option", "silver=true", stdout=out)
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    version = LearnedVersion.objects.get(pk=summary["version"])
    assert version.kind == "siera" and version.is_active and version.seed == 3
    assert version.hyperparameters["seeds"] == [3] and version.corpora == ["asset-valid"]
    assert 0.0 <= summary["heldout"]["accuracy"] <= 1.0
    metric = metric_get("siera")
    source = "the old man saw the big red car in the city"
    simpler, harder = metric.score_batch([Item(source, "the man saw the car"), Item("the man saw the car", source)])
    assert simpler.value + harder.value == pytest.approx(1.0, abs=1e-5)
    assert simpler.components == {"truncated": 0.0}
    assert metric.score_batch([Item(" ".join(WORDS), source)])[0].components == {"truncated": 1.0}
    assert metric.signature.startswith(f"siera:v{version.pk}|") and "value:p_simpler" in metric.signature


def test_failed_learned_run_leaves_the_active_version_and_cannot_be_promoted(
    rated: Campaign, asset_valid: Corpus, tiny_encoder_dir: Path
) -> None:
    version = learned_version_create(kind="referee", campaigns=[rated], started_by=None, enqueue=False,
                                     options=_options(tiny_encoder_dir, stages=[3]))
    Corpus.objects.all().delete()
    version.hyperparameters = {**version.hyperparameters, "encoder": "/nonexistent/encoder"}
    version.save(update_fields=["hyperparameters"])
    version = learned_version_train(version=version)
    assert version.status == LearnedVersion.Status.FAILED and version.error
    with pytest.raises(Conflict):
        learned_version_promote(version=version)


def test_admin_picks_the_kind(client: Any, admin_user: Any, asset_valid: Corpus, tiny_encoder_dir: Path) -> None:
    client.force_login(admin_user)
    form = {"kind": "siera", "encoder": str(tiny_encoder_dir), "k": 3, "epochs": 1, "heldout": 0.1, "seed": 5,
            "corpora": "asset-valid", "options": '{"max_length": 24, "silver": true}'}
    page = client.get("/admin/metrics/learnedversion/train/")
    assert b'name="kind"' in page.content and b'value="siera"' in page.content
    response = client.post("/admin/metrics/learnedversion/train/", form)
    assert response.status_code == 302
    queued = LearnedVersion.objects.get()
    assert (queued.kind, queued.seed, queued.corpora) == ("siera", 5, ["asset-valid"])
    assert queued.hyperparameters["silver"] is True and queued.started_by == admin_user
    bad = client.post("/admin/metrics/learnedversion/train/", {**form, "options": '{"lr": -1}'})
    assert bad.status_code == 200 and b"lr must be above 0" in bad.content
    missing = client.post("/admin/metrics/learnedversion/train/", {**form, "corpora": "newsela"})
    assert missing.status_code == 200 and b"corpus &#x27;newsela&#x27; has not been imported" in missing.content
    lens = client.post("/admin/metrics/learnedversion/train/", {**form, "kind": "lens"})
    assert lens.status_code == 200 and b"This field is required" in lens.content
    assert LearnedVersion.objects.count() == 1


def test_a_signal_referee_could_not_compute_is_recorded_on_the_version(
    rated: Campaign, asset_valid: Corpus, tiny_encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POMME_LM_DIR", str(tmp_path / "no-pomme-here"))  # POMME's language models are missing
    version = _referee(tiny_encoder_dir, rated)
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert version.heldout_results["masked_signals"] == ["pomme"]
    [warning] = [w for w in version.data_warnings if "pomme" in w]
    assert warning.startswith("the pomme signal was masked in pre-training: ") and "build_pomme" in warning
    fine_tuned_only = learned_version_train(version=learned_version_create(
        kind="referee", campaigns=[rated], started_by=None, enqueue=False,
        options=_options(tiny_encoder_dir, stages=[3], finetune_epochs=1)))
    assert fine_tuned_only.heldout_results["masked_signals"] == [] and not fine_tuned_only.data_warnings


@pytest.fixture
def da_campaign(db: None) -> Campaign:
    """A multi-aspect campaign in Simplicity-DA's layout (6 sources, 3 systems, fluency / meaning / simplicity
    with released z-scores that follow the system), each source with two references."""
    from annotation.models import Reference, Source
    from annotation.services.imports import campaign_import

    rng = random.Random(4)
    lines = ["sent_id,sys_name,orig_sent,simp_sent,sys_type,fluency,fluency_zscore,meaning,meaning_zscore,"
             "simplicity,simplicity_zscore"]
    for s in range(6):
        words = [rng.choice(WORDS) for _ in range(10)]
        for quality, system in ((1.0, "good"), (0.0, "fair"), (-1.0, "poor")):
            z = [round(quality + rng.uniform(-0.3, 0.3), 3) for _ in range(3)]
            output = " ".join(words[: 7 + int(quality)])
            lines.append(f"{s},{system},{' '.join(words)},{output},x," +
                         ",".join(f"{50 + 20 * v:.1f},{v}" for v in z))
    campaign_import(kind="da", file=io.BytesIO("\n".join(lines).encode()), filename="da.csv", campaign_slug="da",
                    analyse=False)
    for source in Source.objects.filter(campaign__slug="da"):
        for position, text in enumerate((" ".join(source.text.split()[:6]), " ".join(source.text.split()[2:9]))):
            Reference.objects.create(source=source, text=text, position=position)
    return Campaign.objects.get(slug="da")


def test_referee_fine_tunes_on_one_aspect_of_a_multi_aspect_campaign(
    da_campaign: Campaign, rated: Campaign, tiny_encoder_dir: Path
) -> None:
    from metrics.services.snapshot import lens_training_snapshot

    snapshot = lens_training_snapshot(campaigns=[da_campaign], heldout_fraction=0.2, aspect="simplicity")
    samples = [*snapshot.train, *snapshot.heldout]
    assert len(samples) == 18 and all(s.ratings == {} for s in samples)  # no raw ratings: no tau-like
    by_system: dict[str, list[float]] = {}
    for sample in samples:
        by_system.setdefault(sample.output_id, []).append(sample.z)
    assert max(by_system["poor"]) < min(by_system["fair"]) and max(by_system["fair"]) < min(by_system["good"])
    assert json.loads(snapshot.canonical)["aspect"] == "simplicity"
    overall = lens_training_snapshot(campaigns=[da_campaign, rated])
    assert "aspect" not in json.loads(overall.canonical)  # overall snapshots keep their document and hash
    assert "da: 18 output(s) without a z-score skipped" in overall.warnings

    def create(campaign: Campaign, **extra: Any) -> LearnedVersion:
        return learned_version_create(kind="referee", campaigns=[campaign], started_by=None, enqueue=False,
                                      options=_options(tiny_encoder_dir, stages=[3], finetune_epochs=2, **extra))

    with pytest.raises(ServiceError) as caught:
        create(da_campaign)
    assert caught.value.field == "campaigns" and "fluency, meaning, simplicity" in caught.value.message
    assert 'the option aspect, e.g. aspect="simplicity"' in caught.value.message
    with pytest.raises(ServiceError) as caught:
        create(da_campaign, aspect="adequacy")
    assert caught.value.field == "aspect"
    assert caught.value.message == ("campaign 'da' has no 'adequacy' ratings (its aspects are fluency, meaning, "
                                    "simplicity)")
    with pytest.raises(ServiceError, match=r"campaign 'rated' has no 'fluency' ratings \(it holds overall ratings"):
        create(rated, aspect="fluency")
    with pytest.raises(ServiceError, match=r"aspect must be null \(overall ratings\) or an aspect name"):
        create(da_campaign, aspect="")
    with pytest.raises(ServiceError, match="not the overall ratings LENS fine-tunes on"):
        learned_version_create(kind="lens", campaigns=[da_campaign], started_by=None, enqueue=False,
                               options={"encoder": str(tiny_encoder_dir)})
    assert not LearnedVersion.objects.exists()

    out = StringIO()
    call_command("train_metric", "--kind", "referee", "--campaign", "da", "--seed", "1",
                 "--option", f'encoder="{tiny_encoder_dir}"', "--option", "max_length=24", "--option", "batch_size=4",
                 "--option", "stages=[3]", "--option", "finetune_epochs=2", "--option", 'aspect="simplicity"',
                 stdout=out)
    version = LearnedVersion.objects.get(pk=json.loads(out.getvalue().strip().splitlines()[-1])["version"])
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert version.hyperparameters["aspect"] == "simplicity"
    results = version.heldout_results  # no tau-like on aspect ratings: the epoch is chosen on the loss
    assert results["tau"].get("all") is None and results["loss"] is not None and results["pearson"] is not None
    # its scores say what it learned, beside every other REFEREE's
    assert "|value:z|aspect:simplicity|version:" in metric_get(f"referee:{version.pk}").signature
    with pytest.raises(CommandError, match="has no 'adequacy' ratings"):
        call_command("train_metric", "--kind", "referee", "--campaign", "da",
                     "--option", f'encoder="{tiny_encoder_dir}"', "--option", 'aspect="adequacy"')


def test_referee_trains_on_sources_without_references_which_lens_skips(
    annotators: list[Any], tiny_encoder_dir: Path
) -> None:
    from metrics.services.snapshot import lens_training_snapshot

    campaign = make_rated_campaign("norefs", annotators, n_sources=6, without_references=2)
    lens = lens_training_snapshot(campaigns=[campaign])
    assert lens.counts["sources"] == 4 and lens.counts["sources_skipped_no_reference"] == 2
    version = learned_version_train(version=learned_version_create(
        kind="referee", campaigns=[campaign], started_by=None, enqueue=False,
        options=_options(tiny_encoder_dir, stages=[3], finetune_epochs=1)))
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error
    assert version.data_counts["sources"] == 6 and version.data_counts["sources_skipped_no_reference"] == 0
    assert version.data_counts["outputs"] == 18 and not version.data_warnings


def test_the_testbed_takes_the_active_referee_and_siera(
    rated: Campaign, asset_valid: Corpus, tiny_encoder_dir: Path, tmp_path: Path, settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The testbed's ``all`` holds the active version of each learned kind, and a run queued from the research
    page may name REFEREE and SIERA: it refused them as unknown metrics, so only the command could run them."""
    from core.models import BackgroundJob
    from metrics.services.testbed import perturbation_metric_names, testbed_job_dir, testbed_start

    settings.VAR_DIR = tmp_path
    referee = learned_version_train(version=learned_version_create(
        kind="referee", campaigns=[rated], started_by=None, enqueue=False,
        options=_options(tiny_encoder_dir, stages=[3], finetune_epochs=1)))
    siera = learned_version_train(version=learned_version_create(
        kind="siera", campaigns=[], started_by=None, enqueue=False, options=_options(tiny_encoder_dir, epochs=1)))
    assert referee.status == siera.status == LearnedVersion.Status.SUCCEEDED

    def start(names: list[str]) -> BackgroundJob:
        return testbed_start(dataset="asset-valid", metric_names=names, magnitudes=[0.0, 100.0], sample=3, seed=1)

    learned_version_promote(version=referee)
    assert perturbation_metric_names(["all"])[-1:] == ["referee"]  # no active SIERA, no LENS
    with pytest.raises(ServiceError, match="no SIERA version is active") as caught:
        start(["fkgl", "siera"])
    assert caught.value.field == "metrics"
    with pytest.raises(ServiceError, match=r"unknown metrics \['nope'\]; known: .*referee, siera"):
        start(["referee", "nope"])
    with pytest.raises(ServiceError, match=f"no SIERA version {referee.pk}"):
        start([f"siera:{referee.pk}"])
    assert not BackgroundJob.objects.exists()
    learned_version_promote(version=siera)
    assert perturbation_metric_names(["all", "fkgl"])[-2:] == ["referee", "siera"]
    with django_capture_on_commit_callbacks(execute=True):
        job = start(["fkgl", "referee", "siera"])
    job.refresh_from_db()
    assert job.status == "done", job.error
    slopes = json.loads((testbed_job_dir(job.pk) / "slopes.json").read_text(encoding="utf-8"))
    scored = {row["metric"] for row in slopes}
    assert {f"referee:{referee.pk}", f"siera:{siera.pk}", "fkgl"} <= scored
    summary = json.loads((testbed_job_dir(job.pk) / "summary.json").read_text(encoding="utf-8"))
    # SIERA trained on every corpus row; a fine-tuned-only REFEREE on none of them
    assert summary["config"]["seen_in_training"] == {f"referee:{referee.pk}": 0, f"siera:{siera.pk}": 3}
