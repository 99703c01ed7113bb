"""LENS Table 2 (SimpEval_2022) reproduced through the product: import, score, store, meta-evaluate."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.models import Campaign
from metrics.models import MetricScore
from metrics.services.meta_evaluation import campaign_meta_evaluate

pytestmark = [pytest.mark.data, pytest.mark.django_db]

# metric -> (tau_para, tau_spl, tau_all), the fidelity list
SIMPEVAL_2022 = {
    "fkgl": (-0.556, -0.310, -0.356),
    "gleu": (0.048, -0.054, -0.033),
    "sari:lens": (0.206, 0.140, 0.149),
    "sari": (0.397, 0.264, 0.289),
}


def _import_2022(data_dir: Path) -> Campaign:
    simpeval = data_dir / "simpeval"
    call_command(
        "import_simpeval", str(simpeval / "simpeval_2022.csv"), "--campaign", "simpeval-2022", "--no-analysis",
        "--references", str(simpeval / "simpeval_2022_references.src"), str(simpeval / "simpeval_2022_references.dst"),
        stdout=StringIO(),
    )
    return Campaign.objects.get(slug="simpeval-2022")


def test_simpeval_2022_table_2_through_meta_evaluate(simpeval_data_dir: Path) -> None:
    campaign = _import_2022(simpeval_data_dir)
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "simpeval-2022", "--metric", "fkgl,gleu,sari:lens,sari", "--json",
                 "--n-boot", "200", stdout=out)
    result = json.loads(out.getvalue())
    assert result["kind"] == "kendall" and result["outputs"] == 360
    for name, expected in SIMPEVAL_2022.items():
        entry = result["metrics"][name]
        got = tuple(round(entry["kendall"][key], 3) for key in ("paraphrase", "split", "all"))
        assert got == expected, name
        assert [entry["pairs"][k]["concordant"] + entry["pairs"][k]["discordant"]
                for k in ("paraphrase", "split", "all")] == [63, 258, 329]
        low, high = entry["kendall_ci"]["all"]
        assert low <= entry["kendall"]["all"] <= high
        assert entry["signature"].startswith(name.replace(":lens", "") if name != "sari:lens" else "sari:lens")
    assert {p["column"] for p in result["paired"]} == {"all"} and len(result["paired"]) == 6
    # Stored once per (signature, output): a second run computes nothing new and gives the same numbers.
    assert MetricScore.objects.filter(output__source__campaign=campaign).count() == 4 * 360
    again = campaign_meta_evaluate(campaign=campaign, metric=["fkgl"], n_boot=0)
    assert again["metrics"]["fkgl"]["kendall"] == result["metrics"]["fkgl"]["kendall"]
    # The terminal table and the paper formats print the same cells.
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "simpeval-2022", "--metric", "fkgl,sari", "--format", "latex",
                 "--n-boot", "0", stdout=out)
    assert "-0.556 & -0.310" in out.getvalue()


# metric -> Pearson (fluency, meaning, simplicity) on WIKI-DA without the SimpEval_past sources (LENS Table 2)
WIKI_DA = {
    "fkgl": (0.054, 0.145, 0.001),
    "gleu": (0.460, 0.622, 0.438),
    "sari:lens": (0.335, 0.534, 0.366),
}


def test_wiki_da_table_2_through_import_da_and_meta_evaluate(simpeval_data_dir: Path) -> None:
    call_command(
        "import_simpeval", str(simpeval_data_dir / "simpeval" / "simpeval_past.csv"), "--campaign", "simpeval-past",
        "--no-analysis", stdout=StringIO(),
    )
    da = simpeval_data_dir / "simplicity_da"
    call_command(
        "import_da", str(da / "simplicity_DA.csv"), "--campaign", "wiki-da", "--no-analysis",
        "--references", str(da / "references.src"), str(da / "references.dst"), stdout=StringIO(),
    )
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "wiki-da", "--metric", "fkgl,gleu,sari:lens", "--json",
                 "--exclude-sources-of", "simpeval-past", "--n-boot", "200", stdout=out)
    result = json.loads(out.getvalue())
    assert result["outputs"] == 434
    for name, expected in WIKI_DA.items():
        pearson = result["metrics"][name]["pearson"]
        got = tuple(round(pearson[aspect]["value"] if isinstance(pearson[aspect], dict) else pearson[aspect], 3)
                    for aspect in ("fluency", "meaning", "simplicity"))
        assert got == expected, name
