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
