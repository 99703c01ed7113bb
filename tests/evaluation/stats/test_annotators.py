from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats.annotators import annotator_quality, correlation_with_others, robust_z
from evaluation.stats.records import RatingRecord


def _records(seed: int = 0) -> list[RatingRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for o in range(60):
        quality = rng.uniform(10, 90)
        for rater in ("r1", "r2", "r3", "r4"):
            raw = quality + rng.normal(0, 5)
            if rater == "r4":  # rates at random
                raw = rng.uniform(0, 100)
            records.append(
                RatingRecord(
                    f"s{o // 6}", f"o{o}", "A", rater, float(raw), seconds=30.0 + (o // 6) * (rater == "r1")
                )
            )
    return records


def test_random_rater_is_flagged() -> None:
    rows = {row["rater"]: row for row in annotator_quality(_records())}
    assert rows["r4"]["outlier"] is True
    assert not any(rows[r]["outlier"] for r in ("r1", "r2", "r3"))
    assert rows["r4"]["corr_with_others"] < 0.2 < rows["r1"]["corr_with_others"]
    # Dropping the random rater improves agreement most.
    assert rows["r4"]["alpha_without_raw"] == max(row["alpha_without_raw"] for row in rows.values())
    assert rows["r1"]["n"] == 60 and rows["r1"]["n_sources"] == 10 and rows["r1"]["n_shared"] == 60
    assert rows["r1"]["median_seconds"] == pytest.approx(np.median([30.0 + s for s in range(10)]))
    assert rows["r2"]["median_seconds"] == 30.0
    assert rows["r1"]["alpha_without_z"] is None  # no z-scores given to annotator_quality


def test_correlation_with_others_uses_shared_outputs_only() -> None:
    values = np.array(
        [[1.0, 2.0, 3.0, 4.0, np.nan], [2.0, 4.0, 6.0, 8.0, 1.0], [np.nan, np.nan, np.nan, np.nan, 5.0]]
    )
    corrs, shared = correlation_with_others(values)
    assert corrs[0] == pytest.approx(1.0)
    assert shared == [4, 5, 1]
    assert corrs[2] is None  # one shared output


def test_robust_z_degenerate() -> None:
    assert robust_z([0.5, None]) == [None, None]
    assert robust_z([0.5, 0.5, 0.5]) == [None, None, None]
    assert robust_z([0.1, 0.5, 0.6, None])[3] is None


def test_no_records() -> None:
    assert annotator_quality([]) == []
