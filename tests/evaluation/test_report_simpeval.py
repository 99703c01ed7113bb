"""`campaign_report` on the released SimpEval datasets reproduces the LENS paper's Table 1 and its alpha."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from annotation.services.imports import campaign_import
from tests.paper_figures import TABLE1_2022
from tests.paper_figures import TABLE1_PAST as PAPER_TABLE1_PAST

pytestmark = [pytest.mark.django_db, pytest.mark.data]

# The paper's Table 1; for SimpEval_past a subset of its 24 systems, under the file's names.
TABLE1_PAST = {name: (raw, z) for name, (_, raw, z) in PAPER_TABLE1_PAST.items()}


def report_for(simpeval_data_dir, name: str, slug: str, capsys, n_boot: int = 200):
    with (simpeval_data_dir / "simpeval" / f"{name}.csv").open("rb") as handle:
        campaign_import(kind="simpeval", file=handle, filename=f"{name}.csv", campaign_slug=slug, analyse=False)
    capsys.readouterr()
    call_command("campaign_report", "--campaign", slug, "--json", "--n-boot", str(n_boot))
    return json.loads(capsys.readouterr().out)


def test_simpeval_2022_reproduces_table_1(simpeval_data_dir, capsys):
    report = report_for(simpeval_data_dir, "simpeval_2022", "s22", capsys)
    systems = report["systems"]
    assert [row["system"] for row in systems] == list(TABLE1_2022)  # ranked by mean z, as in the paper
    for row in systems:
        raw, z = TABLE1_2022[row["system"]]
        assert round(row["raw_mean"], 2) == raw
        assert round(row["z_mean"], 3) == z
        assert row["n"] == 60 * 3 and row["ci_low"] < row["z_mean"] < row["ci_high"]
        assert set(row) >= {"system", "n", "raw_mean", "z_mean", "ci_low", "ci_high", "cluster"}
    assert round(report["alpha"]["z"]["value"], 3) == 0.326
    assert round(report["alpha"]["raw"]["value"], 3) == 0.203
    for block in report["alpha"].values():
        assert block["ci_low"] < block["value"] < block["ci_high"]
    assert report["counts"] == {"ratings": 1080, "outputs": 360, "sources": 60, "systems": 6, "raters": 3}
    # The final sentence types become the per-category tables and the category mix.
    assert set(report["categories"]) == {"split", "deletion", "paraphrase"}
    mix = report["features"]["systems"]
    assert sum(sum(row["categories"].values()) for row in mix) == 360
    assert report["warnings"] == []
    assert len(report["annotators"]) == 3  # the three imported rating slots


def test_simpeval_past_reproduces_table_1(simpeval_data_dir, capsys):
    report = report_for(simpeval_data_dir, "simpeval_past", "past", capsys, n_boot=100)
    rows = {row["system"]: row for row in report["systems"]}
    assert len(rows) == 24
    for name, (raw, z) in TABLE1_PAST.items():
        assert round(rows[name]["raw_mean"], 2) == raw, name
        assert round(rows[name]["z_mean"], 3) == z, name
    assert report["systems"][0]["system"] == "asset.test.simp"
    assert report["systems"][-1]["system"] == "scramble_words"
    assert round(report["alpha"]["z"]["value"], 3) == 0.705
    assert round(report["alpha"]["raw"]["value"], 3) == 0.509
    assert report["counts"]["ratings"] == 2400 * 5


def test_simpeval_2022_text_report_and_csv(simpeval_data_dir, capsys, researcher, client_for):
    with (simpeval_data_dir / "simpeval" / "simpeval_2022.csv").open("rb") as handle:
        campaign_import(kind="simpeval", file=handle, filename="simpeval_2022.csv", campaign_slug="s22",
                        user=researcher, analyse=False)
    call_command("campaign_report", "--campaign", "s22", "--n-boot", "100")
    text = capsys.readouterr().out
    assert "Human 2 Writing" in text and "81.87" in text and "0.424" in text
    assert "z 0.326" in text
    response = client_for(researcher).get("/api/campaigns/s22/leaderboard.csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["system"] for r in rows] == list(TABLE1_2022)
    assert round(float(rows[0]["raw_mean"]), 2) == 81.87
