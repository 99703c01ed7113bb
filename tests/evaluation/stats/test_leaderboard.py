from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats.leaderboard import output_scores, significance_clusters, system_leaderboard
from evaluation.stats.records import RatingRecord


def rec(source: str, system: str, rater: str, raw: float, z: float | None) -> RatingRecord:
    return RatingRecord(source=source, output=f"{source}:{system}", system=system, rater=rater, raw=raw, z=z)


def test_means_are_taken_per_output_first() -> None:
    records = [
        rec("s1", "A", "r1", 90.0, 1.0),
        rec("s1", "A", "r2", 70.0, 0.0),
        rec("s1", "A", "r3", 80.0, 0.5),
        rec("s2", "A", "r1", 20.0, -1.0),
    ]
    board = system_leaderboard(records, n_boot=50)
    (row,) = board.rows
    assert row["n"] == 4 and row["n_outputs"] == 2
    assert row["raw_mean"] == pytest.approx((80.0 + 20.0) / 2)
    assert row["z_mean"] == pytest.approx((0.5 - 1.0) / 2)
    assert row["cluster"] == 1
    assert {s.output: s.n for s in output_scores(records)} == {"s1:A": 3, "s2:A": 1}


def test_clusters_separate_clearly_different_systems() -> None:
    rng = np.random.default_rng(0)
    records = []
    for s in range(40):
        for system, level in (("good", 1.0), ("also-good", 1.0), ("bad", -1.0)):
            for rater in ("r1", "r2"):
                z = level + rng.normal(0, 0.3)
                records.append(rec(f"s{s}", system, rater, 50 + 20 * z, z))
    board = system_leaderboard(records, n_boot=200)
    assert board.ranked_by == "z"
    assert [row["system"] for row in board.rows][-1] == "bad"
    assert [row["cluster"] for row in board.rows] == [1, 1, 2]
    for row in board.rows:
        assert row["ci_low"] <= row["z_mean"] <= row["ci_high"]
        assert row["raw_ci_low"] <= row["raw_mean"] <= row["raw_ci_high"]


def test_cluster_rules() -> None:
    a = np.linspace(10, 11, 30)
    b = np.linspace(9.5, 11.5, 30)  # overlaps a
    c = np.linspace(0, 1, 30)
    assert significance_clusters([a, c]) == [1, 2]
    assert significance_clusters([a, a.copy()]) == [1, 1]
    # b overlaps a, c is beaten by both: a and b tie, c alone.
    assert significance_clusters([a, b, c]) == [1, 1, 2]
    # "wmt" also needs the systems above a boundary to beat everything below it.
    top, low = np.linspace(9, 10, 30), np.linspace(8, 9, 30)
    # mid ranks above top on most outputs, but a few disasters pull its mean below low's.
    mid = np.r_[np.full(25, 10.5), np.full(5, -100.0)]
    assert significance_clusters([top, low, mid], rule="above") == [1, 2, 2]
    assert significance_clusters([top, low, mid], rule="wmt") == [1, 1, 1]
    assert significance_clusters([]) == []
    assert significance_clusters([np.array([1.0])]) == [1]


def test_raw_ranking_when_zscores_are_missing() -> None:
    records = [rec("s1", "A", "r1", 80.0, None), rec("s1", "B", "r1", 60.0, None)]
    board = system_leaderboard(records, n_boot=20)
    assert board.ranked_by == "raw"
    assert [row["system"] for row in board.rows] == ["A", "B"]
    assert board.rows[0]["z_mean"] is None and board.rows[0]["ci_low"] is None
    mixed = system_leaderboard([rec("s1", "A", "r1", 80.0, 1.0), rec("s1", "B", "r1", 60.0, None)], n_boot=20)
    assert mixed.ranked_by == "raw" and mixed.warnings


def test_empty() -> None:
    assert system_leaderboard([]).rows == []
