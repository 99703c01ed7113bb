"""The report reproduces the LENS paper's Table 1 and agreement figures from the released data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.stats.records import simpeval_records
from evaluation.stats.report import build_report
from tests.paper_figures import TABLE1_2022, TABLE1_PAST

pytestmark = pytest.mark.data


def _check_row(row: dict[str, Any], raw: float, z: float) -> None:
    assert round(row["raw_mean"], 2) == pytest.approx(raw, abs=1e-9)
    assert round(row["z_mean"], 3) == pytest.approx(z, abs=1e-9)


def test_loader(simpeval_data_dir: Path) -> None:
    simpeval_dir = simpeval_data_dir / "simpeval"
    records = simpeval_records(simpeval_dir / "simpeval_2022.csv")
    assert len(records) == 1080
    assert {r.rater for r in records} == {"slot-1", "slot-2", "slot-3"}
    assert {r.category for r in records} == {"split", "paraphrase", "deletion"}
    assert all(r.z is not None for r in records)
    past = simpeval_records(simpeval_dir / "simpeval_past.csv")
    assert len(past) == 12000 and len({r.output for r in past}) == 2400
    assert all(r.z is not None and r.category is None for r in past)


def test_simpeval_2022_table1(simpeval_data_dir: Path) -> None:
    simpeval_dir = simpeval_data_dir / "simpeval"
    report = build_report(simpeval_records(simpeval_dir / "simpeval_2022.csv"), n_boot=200)
    json.dumps(report, allow_nan=False)
    assert [row["system"] for row in report["systems"]] == list(TABLE1_2022)
    for row in report["systems"]:
        _check_row(row, *TABLE1_2022[row["system"]])
        assert row["n"] == 180
        assert row["ci_low"] < row["z_mean"] < row["ci_high"]
    assert report["alpha"]["z"]["value"] == pytest.approx(0.3258, abs=5e-5)
    assert report["alpha"]["raw"]["value"] == pytest.approx(0.2033, abs=5e-5)
    assert round(report["alpha"]["z"]["value"], 2) == 0.33  # printed as 0.32 in the paper (truncated)
    assert report["alpha"]["z"]["ci_low"] < 0.3258 < report["alpha"]["z"]["ci_high"]
    assert set(report["categories"]) == {"split", "paraphrase", "deletion"}
    assert sum(c["counts"]["ratings"] for c in report["categories"].values()) == 1080
    assert report["warnings"] == []
    assert [a["rater"] for a in report["annotators"]] == ["slot-1", "slot-2", "slot-3"]


def test_simpeval_past_table1(simpeval_data_dir: Path) -> None:
    simpeval_dir = simpeval_data_dir / "simpeval"
    report = build_report(simpeval_records(simpeval_dir / "simpeval_past.csv"), n_boot=200)
    assert len(report["systems"]) == 24 == len(TABLE1_PAST)
    # Sorted by z-score, the paper's order.
    assert [row["system"] for row in report["systems"]] == list(TABLE1_PAST)
    rows = {row["system"]: row for row in report["systems"]}
    for system, (_, raw, z) in TABLE1_PAST.items():
        _check_row(rows[system], raw, z)
        assert rows[system]["n"] == 500
    assert report["alpha"]["z"]["value"] == pytest.approx(0.7051, abs=5e-5)
    assert report["alpha"]["raw"]["value"] == pytest.approx(0.5088, abs=5e-5)
    assert report["systems"][0]["system"] == "asset.test.simp"
    assert report["systems"][-1]["system"] == "scramble_words"
    assert report["systems"][-1]["cluster"] == max(row["cluster"] for row in report["systems"])
