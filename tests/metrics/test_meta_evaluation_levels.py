"""`meta_evaluate --level output|system|both` and the service's system-level result."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.errors import ServiceError
from metrics.selectors import RatedOutput
from metrics.services.meta_evaluation import campaign_meta_evaluate, rated_meta_evaluate

pytestmark = pytest.mark.django_db


def _output(pk: int, source: int, system: str, z: float) -> RatedOutput:
    return RatedOutput(campaign="c", source_pk=source, source=f"s{source}", complex=f"Complex {source}.",
                       output_pk=pk, system=system, text=f"out {pk}", category="paraphrase",
                       ratings={"r1": 50 + 10 * z, "r2": 50 + 10 * z}, zscores=[z, z])


def test_service_levels_add_system_figures_and_acc_eq() -> None:
    means = {"A": -1.0, "B": 0.0, "C": 1.0}
    rated = [_output(i * 3 + k, i, system, mean + (0.5 if i % 2 else -0.5))
             for i in range(6) for k, (system, mean) in enumerate(means.items())]
    scores = {"up": {r.output_pk: 2 * (r.mean_z or 0.0) for r in rated},
              "down": {r.output_pk: -(r.mean_z or 0.0) for r in rated}}
    output = rated_meta_evaluate(rated, scores, n_boot=20)
    assert output["level"] == "output" and "system" not in output
    assert output["metrics"]["up"]["acc_eq"]["z"]["value"] == pytest.approx(1.0)
    assert output["output_clusters"]["z"]["rank"] == {"up": 1, "down": 2}
    both = rated_meta_evaluate(rated, scores, n_boot=20, level="both")
    system = both["system"]
    assert system["human_means"]["z"] == pytest.approx(means)
    assert system["metrics"]["up"]["z"]["accuracy"]["value"] == 1.0
    assert system["metrics"]["down"]["z"]["kendall"]["value"] == pytest.approx(-1.0)
    assert "acc_eq" in both["metrics"]["up"]
    assert "acc_eq" not in rated_meta_evaluate(rated, scores, n_boot=0, level="system")["metrics"]["up"]
    with pytest.raises(ServiceError, match="level must be one of output, system, both") as caught:
        rated_meta_evaluate(rated, scores, level="systems")
    assert caught.value.field == "level"


def test_meta_evaluate_command_level(rated_campaign, annotators) -> None:
    rated_campaign("lvl", annotators, n_sources=3)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvl", "--metric", "sari,fkgl", "--n-boot", "20",
                 "--level", "system", stdout=out)
    text = out.getvalue()
    assert "system level: 3 systems" in text and "acc_eq" in text and "Kendall tau-like" not in text
    assert "Holm" in text or "holm" in text.lower()
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvl", "--metric", "sari,fkgl", "--n-boot", "20", stdout=out)
    text = out.getvalue()
    assert "Kendall tau-like" in text and "system level" not in text and "tie calibration" in text
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvl", "--metric", "sari,fkgl", "--n-boot", "0", "--json",
                 "--level", "both", stdout=out)
    payload = json.loads(out.getvalue())
    assert set(payload["system"]["metrics"]) == {"sari", "fkgl"}
    assert set(payload["system"]["clusters"]["z"]) == {"accuracy", "pearson", "acc_eq"}
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvl", "--metric", "sari", "--n-boot", "0", "--json",
                 "--level", "system", stdout=out)
    single = json.loads(out.getvalue())
    assert single["metric"] == "sari" and single["level"] == "system"
    assert set(single["system"]["z"]) == {"pearson", "kendall", "accuracy", "acc_eq"}
    result = campaign_meta_evaluate(campaign=rated_campaign("lvl2", annotators, n_sources=2), metric="fkgl",
                                    n_boot=0, level="system")
    assert len(result["system"]["systems"]) == 3 and result["level"] == "system"
    with pytest.raises(CommandError, match="invalid choice: 'sys'"):
        call_command("meta_evaluate", "--campaign", "lvl", "--level", "sys")


def test_a_one_metric_card_at_another_threshold_still_has_both_levels(rated_campaign, annotators) -> None:
    """The card shows both levels whatever --level says; with a --threshold of its own it comes from this run's
    result, which must then hold both levels (it said "system level: not computed for this result")."""
    rated_campaign("thr", annotators, n_sources=3)
    for extra in ([], ["--level", "system"]):
        out = StringIO()
        call_command("meta_evaluate", "--campaign", "thr", "--metric", "sari", "--n-boot", "20", "--threshold", "10",
                     *extra, stdout=out)
        text = out.getvalue()
        assert "not computed" not in text and "3 systems: copy-ref" in text, text
        assert "pairwise accuracy with tie calibration (z)" in text


def test_meta_table_rows_carry_both_levels_and_render_them() -> None:
    import csv

    from metrics.services.meta_table import meta_table_rows, render_meta_table

    means = {"A": -1.0, "B": 0.0, "C": 1.0}
    rated = [_output(i * 3 + k, i, system, mean + (0.5 if i % 2 else -0.5))
             for i in range(6) for k, (system, mean) in enumerate(means.items())]
    scores = {"down": {r.output_pk: -(r.mean_z or 0.0) for r in rated},
              "up": {r.output_pk: 2 * (r.mean_z or 0.0) for r in rated}}
    both = rated_meta_evaluate(rated, scores, n_boot=20, level="both")
    rows = meta_table_rows(both)
    assert [(r["human"], r["metric"]) for r in rows] == [("z", "up"), ("z", "down")]  # best accuracy first
    up, down = rows
    assert up["output"] == both["metrics"]["up"]["kendall"]["all"] and up["output_acc_eq"] == pytest.approx(1.0)
    assert up["sys_accuracy"] == 1.0 and down["sys_accuracy"] == 0.0 and down["sys_kendall"] == pytest.approx(-1.0)
    assert up["sys_pearson"] == pytest.approx(1.0) and up["sys_acc_eq_epsilon"] == 0.0
    assert (up["cluster_accuracy"], down["cluster_accuracy"]) == (1, 2) and down["output_cluster"] == 2
    parsed = list(csv.DictReader(render_meta_table(both, "csv").splitlines()))
    assert [p["metric"] for p in parsed] == ["up", "down"]
    assert float(parsed[1]["sys_kendall"]) == pytest.approx(-1.0) and parsed[0]["cluster_acc_eq"] == "1"
    latex = render_meta_table(both, "latex")
    assert r"sys Pearson [95\% CI]" not in latex and "sys Pearson [95% CI]" in latex
    assert r"acc\_eq out (eps)" in latex and "down & " in latex
    system_only = meta_table_rows(rated_meta_evaluate(rated, scores, n_boot=0, level="system"))
    assert "output_acc_eq" not in system_only[0] and "sys_accuracy" in system_only[0]
    output_only = render_meta_table(rated_meta_evaluate(rated, scores, n_boot=0), "csv").splitlines()[0]
    assert output_only == "human,metric,output,output_acc_eq,output_acc_eq_epsilon,output_cluster"


def test_meta_evaluate_csv_with_system_level(rated_campaign, annotators) -> None:
    rated_campaign("lvlcsv", annotators, n_sources=3)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvlcsv", "--metric", "sari,fkgl", "--n-boot", "20",
                 "--level", "both", "--format", "csv", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("human,metric,output,output_acc_eq") and "sys_accuracy" in lines[0]
    assert {line.split(",")[1] for line in lines[1:]} == {"sari", "fkgl"}
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "lvlcsv", "--metric", "sari,fkgl", "--n-boot", "20",
                 "--format", "csv", stdout=out)
    assert not out.getvalue().startswith("human,")  # --level output keeps today's per-category columns
