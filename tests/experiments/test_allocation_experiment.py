"""The allocation experiment on the released 2022 sets: the summary rows the issue asks for, the curves and
the plot; SimpDA_2022's named workers get recomputed z-scores."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evaluation.allocation import full_leaderboard
from evaluation.stats.leaderboard import system_leaderboard
from evaluation.stats.zscores import with_zscores
from experiments import allocation_experiment

pytestmark = pytest.mark.data


def test_summary_curves_and_plot(simpeval_data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = allocation_experiment.main([
        "--dataset", "2022", "--policies", "uniform,adaptive", "--seeds", "2", "--data-dir", str(simpeval_data_dir),
        "--cache", str(tmp_path / "cache"), "--out", str(out),
    ])
    assert code == 0
    rows = json.loads((out / "summary.json").read_text())
    assert [row["policy"] for row in rows] == ["uniform", "adaptive"]
    for row in rows:
        assert row["dataset"] == "SimpEval_2022" and row["seeds"] == 2 and row["full_ratings"] == 1080
        assert set(row["ratings_to_tau95"]) >= {"median", "p90"}
        assert set(row["top1_accuracy"]) == {"0.1", "0.2", "0.3", "0.5"}
    curves = json.loads((out / "curves.json").read_text())
    assert set(curves["policies"]) == {"uniform", "adaptive"}
    assert ET.parse(out / "curves.svg").getroot().tag.endswith("svg")
    assert list((tmp_path / "cache").glob("SimpEval_2022-*.npy"))  # metric scores cached


def test_simpda_workers_get_recomputed_zscores(simpeval_data_dir: Path) -> None:
    study, _ = allocation_experiment.load_study("simpda", simpeval_data_dir)
    assert study.recompute_z and len(study.raters) == 11 and study.full_ratings == 1080
    records = study.records(study.present)
    expected = system_leaderboard(with_zscores(records)[0], n_boot=50)
    assert [dict(r) for r in full_leaderboard(study, n_boot=50).rows] == [dict(r) for r in expected.rows]
