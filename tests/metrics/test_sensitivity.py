"""A metric's perturbation-sensitivity report: recorded by the testbed, shown beside its human agreement."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.stats.slopes import SlopeRow, sensitivity_summary
from metrics.models import LearnedVersion, MetricSensitivity
from metrics.perturb import REGISTRY
from metrics.services.sensitivity import metric_sensitivity, metric_sensitivity_record
from metrics.services.testbed import perturbation_metric_names
from metrics.suite import available_metrics
from tests.factories import CampaignFactory, SourceFactory, succeeded_version
from tests.metrics.test_testbed import _import, corpus_files  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db

RUN = {"dataset": "asset-valid", "rows": "1500:2000", "sample": 100, "seed": 13, "magnitudes": [0.0, 100.0]}


def _rows(metric: str, expected: set[str], slope: float = -1.0) -> list[SlopeRow]:
    """One row per perturbation of the registry; as_expected exactly for the names in ``expected``."""
    return [
        SlopeRow(metric=metric, perturbation=name, criterion=p.criterion, slope=slope, intercept=0.0, p=0.001,
                 p_holm=0.01, n=22, expected_direction=p.expected, as_expected=name in expected)
        for name, p in REGISTRY.items()
    ]


def test_summary_counts_each_criterion_in_a_fixed_order() -> None:
    rows = [{"criterion": c, "as_expected": ok} for c, ok in [
        ("faithfulness", True), ("informativeness", True), ("simplification", False), ("coherence", True),
        ("faithfulness", False), ("informativeness", True)]]
    summary = sensitivity_summary(rows)
    assert summary["text"] == "informativeness 2/2, coherence 1/1, faithfulness 1/2, simplification 0/1"
    assert summary["criteria"]["faithfulness"] == {"as_expected": 1, "total": 2}
    assert sensitivity_summary([]) == {"criteria": {}, "text": ""}


def test_record_replaces_a_metrics_whole_row_and_leaves_the_others() -> None:
    metric_sensitivity_record(slopes=[*_rows("sari", {"delete", "reorder"}), *_rows("fkgl", set())],
                              signatures={"sari": "sari:easse|v1", "fkgl": "fkgl|v1"}, run=RUN)
    assert MetricSensitivity.objects.count() == 2 * len(REGISTRY)
    metric_sensitivity_record(slopes=_rows("sari", {"negate"}, slope=2.0), signatures={"sari": "sari:easse|v2"},
                              run={**RUN, "seed": 14})
    reports = metric_sensitivity(["sari", "fkgl", "bleu"], signatures={"sari": "sari:easse|v2", "fkgl": "fkgl|v0"})
    sari, fkgl = reports["sari"], reports["fkgl"]
    assert reports["bleu"] is None
    assert sari["run"]["seed"] == 14 and sari["signature"] == "sari:easse|v2" and sari["current"] is True
    assert [p["perturbation"] for p in sari["perturbations"] if p["as_expected"]] == ["negate"]
    assert {p["slope"] for p in sari["perturbations"]} == {2.0}
    assert sari["responds_as_expected"].startswith("informativeness 0/3, coherence 0/1, faithfulness 1/5")
    assert fkgl["run"]["seed"] == 13 and fkgl["current"] is False  # scored under another signature
    assert "informativeness 0/3" in fkgl["responds_as_expected"]


def test_meta_evaluate_shows_human_agreement_and_sensitivity_side_by_side(rated_campaign, annotators) -> None:
    rated_campaign("side", annotators, n_sources=3)
    metric_sensitivity_record(slopes=_rows("sari", {"delete", "add_in_domain", "reorder", "negate"}),
                              signatures={}, run=RUN)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "side", "--metric", "fkgl,sari", "--n-boot", "10",
                 "--format", "table", stdout=out)
    text = out.getvalue()
    assert "Kendall tau-like" in text
    assert ("sari: responds as expected to: informativeness 2/3, coherence 1/1, faithfulness 1/5, "
            "simplification 0/1, lens 0/2 (asset-valid, 100 sources, seed 13; measured under another "
            "signature)") in text
    assert "fkgl: no testbed run yet" in text
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "side", "--metric", "fkgl,sari", "--n-boot", "0", "--json",
                 stdout=out)
    metrics = json.loads(out.getvalue())["metrics"]
    assert metrics["fkgl"]["sensitivity"] is None and metrics["sari"]["kendall"]["all"] is not None
    detail = {p["perturbation"]: p for p in metrics["sari"]["sensitivity"]["perturbations"]}
    assert set(detail) == set(REGISTRY) and detail["negate"]["as_expected"] is True
    assert detail["simplify"] == {"perturbation": "simplify", "criterion": "simplification", "slope": -1.0,
                                  "p_holm": 0.01, "expected_direction": "up", "as_expected": False, "n": 22}


def test_metrics_api_and_panel_carry_the_sensitivity(client_for, researcher, rated_campaign, annotators) -> None:
    campaign = rated_campaign("api-sens", annotators, n_sources=3)
    campaign.owners.add(researcher)
    call_command("meta_evaluate", "--campaign", "api-sens", "--metric", "sari", "--n-boot", "0", stdout=StringIO())
    metric_sensitivity_record(slopes=_rows("sari", {"delete"}), signatures={}, run=RUN)
    body = client_for(researcher).get("/api/campaigns/api-sens/metrics/?n_boot=0").json()
    report = body["metrics"]["sari"]["sensitivity"]
    assert report["responds_as_expected"] == ("informativeness 1/3, coherence 0/1, faithfulness 0/5, "
                                              "simplification 0/1, lens 0/2")
    assert len(report["perturbations"]) == 12 and report["current"] is False  # recorded without a signature
    assert [p["perturbation"] for p in report["perturbations"] if p["as_expected"]] == ["delete"]
    # The panel draws this cell: tests/browser/test_research_dashboard.py (the metrics panel).


def test_testbed_records_each_scored_metrics_report(corpus_files: list[Path], tmp_path: Path) -> None:  # noqa: F811
    _import(corpus_files)
    call_command("perturbation_testbed", "--metrics", "fkgl,sari", "--dataset", "tiny", "--magnitudes", "0,50,100",
                 "--seed", "3", "--out", str(tmp_path / "a"), stdout=StringIO(), stderr=StringIO())
    slopes = json.loads((tmp_path / "a" / "slopes.json").read_text(encoding="utf-8"))
    reports = metric_sensitivity(["fkgl", "sari"])
    for name in ("fkgl", "sari"):
        stored = {p["perturbation"]: p for p in reports[name]["perturbations"]}
        written = {row["perturbation"]: row for row in slopes if row["metric"] == name}
        assert set(stored) == set(written)
        assert all(stored[k]["slope"] == pytest.approx(written[k]["slope"]) and
                   stored[k]["as_expected"] == written[k]["as_expected"] for k in stored)
        assert reports[name]["run"] == {"dataset": "tiny", "rows": "0:6", "sample": 6, "seed": 3,
                                        "magnitudes": [0.0, 50.0, 100.0]}
    before = MetricSensitivity.objects.filter(metric="fkgl").values_list("slope", flat=True)
    call_command("perturbation_testbed", "--metrics", "sari", "--dataset", "tiny", "--magnitudes", "0,100",
                 "--seed", "4", "--out", str(tmp_path / "b"), stdout=StringIO(), stderr=StringIO())
    assert metric_sensitivity(["sari"])["sari"]["run"]["seed"] == 4
    assert list(MetricSensitivity.objects.filter(metric="fkgl").values_list("slope", flat=True)) == list(before)


def test_all_includes_the_active_lens_version(
    corpus_files: list[Path], tmp_path: Path, tiny_checkpoint: Path, lens_on_cpu: None  # noqa: F811
) -> None:
    assert "lens" not in perturbation_metric_names(["all"])  # no version yet
    version = succeeded_version(tiny_checkpoint)
    assert "lens" not in perturbation_metric_names(["all"])  # succeeded, not active
    version.is_active = True
    version.save()
    names = perturbation_metric_names(["all", "fkgl"])
    assert names == [*available_metrics(), "lens"]
    _import(corpus_files)
    out_dir = tmp_path / "out"
    call_command("perturbation_testbed", "--metrics", "fkgl,lens", "--dataset", "tiny", "--magnitudes", "0,100",
                 "--sample", "3", "--seed", "1", "--out", str(out_dir), stdout=StringIO(), stderr=StringIO())
    lens = f"lens:{version.pk}"
    slopes = json.loads((out_dir / "slopes.json").read_text(encoding="utf-8"))
    assert {row["perturbation"] for row in slopes if row["metric"] == lens} >= {"delete", "reorder", "copy"}
    figure: dict[str, Any] = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))["lens_figure"]
    assert set(figure[lens]) == {"Copy", "Drop", "Scramble", "Split", "Human"}
    assert all(cell["n"] == 3.0 for cell in figure[lens].values())
    assert (out_dir / "plots" / f"lens_{version.pk}.svg").is_file()
    assert lens in (out_dir / "lens_figure2.svg").read_text(encoding="utf-8")
    assert metric_sensitivity([lens])[lens]["signature"].startswith(f"lens:v{version.pk}|")


def test_meta_evaluate_pomme_without_its_language_models_says_how_to_build_them(
    rated_campaign, annotators, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rated_campaign("no-lm", annotators, n_sources=2)
    monkeypatch.setenv("POMME_LM_DIR", str(tmp_path / "empty"))
    with pytest.raises(CommandError, match=r"pomme: no language models in .*empty.*manage\.py build_pomme"):
        call_command("meta_evaluate", "--campaign", "no-lm", "--metric", "pomme", "--json", stdout=StringIO())


def test_learned_versions_know_which_testbed_sources_they_trained_on(corpus_files: list[Path]) -> None:  # noqa: F811
    from metrics.services.learned import learned_training_source_keys
    from tests.metrics.test_testbed import SOURCES

    _import(corpus_files)
    keys = [source.strip().lower() for source in SOURCES]

    def version(kind: str, **hyperparameters: Any) -> Any:
        return LearnedVersion.objects.create(kind=kind, corpora=["tiny"], hyperparameters=hyperparameters)

    assert learned_training_source_keys(version("siera")) == set(keys)  # SIERA draws pairs from every row
    assert learned_training_source_keys(version("siera", max_sources=3)) == set(keys[:3])  # ...or the first ones
    assert learned_training_source_keys(version("referee", stages=[1, 2, 3], max_sources=2)) == set(keys[:2])
    assert learned_training_source_keys(version("referee", stages=[1, 3], max_sources=0)) == set(keys)
    assert learned_training_source_keys(version("referee", stages=[3])) == set()  # no pre-training: no corpus
    # stage 2 on the rated outputs alone reads no corpus row
    assert learned_training_source_keys(version("referee", stages=[2, 3], stage2_data="outputs")) == set()
    assert learned_training_source_keys(version("referee", stages=[1, 2, 3], stage2_data="outputs",
                                                max_sources=2)) == set(keys[:2])
    lens = version("lens")
    lens.campaigns.add(campaign := CampaignFactory.create())
    SourceFactory.create(campaign=campaign, external_id="a", order=0, text=f"  {SOURCES[4].upper()} ")
    assert learned_training_source_keys(lens) == {keys[4]}  # LENS: its campaigns' sources, never the corpus


def test_the_testbed_says_when_a_learned_metric_trained_on_its_sources(
    corpus_files: list[Path], tmp_path: Path, tiny_checkpoint: Path, lens_on_cpu: None  # noqa: F811
) -> None:
    from tests.metrics.test_testbed import SOURCES

    _import(corpus_files)
    version = succeeded_version(tiny_checkpoint)
    campaign = CampaignFactory.create()
    version.campaigns.add(campaign)
    for order, text in enumerate((SOURCES[1], SOURCES[3], "A sentence the corpus does not have.")):
        SourceFactory.create(campaign=campaign, external_id=str(order), order=order, text=text)
    lens, out_dir, err = f"lens:{version.pk}", tmp_path / "out", StringIO()
    call_command("perturbation_testbed", "--metrics", f"fkgl,{lens}", "--dataset", "tiny", "--magnitudes", "0,100",
                 "--seed", "1", "--out", str(out_dir), stdout=StringIO(), stderr=err)
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["seen_in_training"] == {lens: 2}  # fkgl learns nothing: it is not listed
    assert f"warning: {lens} trained on 2 of the 6 sampled sources" in err.getvalue()
    reports = metric_sensitivity([lens, "fkgl"])
    assert reports[lens]["run"]["seen_in_training"] == 2 and "seen_in_training" not in reports["fkgl"]["run"]
    assert reports[lens]["measured_on"] == "tiny, 6 sources, seed 1; 2 of them seen in training"
    assert reports["fkgl"]["measured_on"] == "tiny, 6 sources, seed 1"
