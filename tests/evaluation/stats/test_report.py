from __future__ import annotations

import json
from typing import Any

import pytest

from evaluation.stats.records import RatingRecord
from evaluation.stats.report import build_report
from tests.factories import make_records

SYSTEM_KEYS = {"system", "n", "raw_mean", "z_mean", "ci_low", "ci_high", "cluster"}


def _check(report: dict[str, Any]) -> None:
    json.dumps(report, allow_nan=False)
    assert set(report) >= {"systems", "alpha", "categories", "annotators", "warnings"}
    for row in report["systems"]:
        assert set(row) >= SYSTEM_KEYS
    assert set(report["alpha"]) == {"raw", "z"}
    for block in report["alpha"].values():
        assert set(block) == {"value", "ci_low", "ci_high"}


def _campaign() -> list[RatingRecord]:
    table = {
        "A": {f"a{i}": {"r1": 80.0 + i, "r2": 75.0 + 2 * i, "r3": 90.0 - i} for i in range(6)},
        "B": {f"b{i}": {"r1": 40.0 + i, "r2": 50.0 - i, "r3": 45.0 + 3 * i} for i in range(6)},
    }
    sources = {f"{p}{i}": f"s{i}" for p in "ab" for i in range(6)}
    return make_records(table, source_of=sources, category="split")


def test_regular_campaign() -> None:
    report = build_report(_campaign(), n_boot=100)
    _check(report)
    assert [row["system"] for row in report["systems"]] == ["A", "B"]
    assert [row["cluster"] for row in report["systems"]] == [1, 2]
    assert report["alpha"]["raw"]["value"] > 0.5
    assert report["warnings"] == []
    assert list(report["categories"]) == ["split"]
    assert report["categories"]["split"]["counts"]["ratings"] == 36
    assert report["categories"]["split"]["systems"][0]["system"] == "A"
    assert len(report["annotators"]) == 3


def test_empty() -> None:
    report = build_report([])
    _check(report)
    assert report["warnings"] == ["no ratings"]
    assert report["counts"] == {"ratings": 0, "outputs": 0, "sources": 0, "systems": 0, "raters": 0}
    assert report["systems"] == [] and report["annotators"] == [] and report["categories"] == {}
    nothing = {"value": None, "ci_low": None, "ci_high": None}
    assert report["alpha"] == {"raw": nothing, "z": nothing}


def test_one_rater() -> None:
    table = {"A": {"a1": {"r1": 80.0}, "a2": {"r1": 60.0}}, "B": {"b1": {"r1": 30.0}}}
    report = build_report(make_records(table), n_boot=50)
    _check(report)
    assert report["alpha"]["raw"]["value"] is None
    assert report["systems"][0]["system"] == "A"
    assert any("alpha" in w for w in report["warnings"])
    assert report["annotators"][0]["corr_with_others"] is None


def test_all_equal_ratings() -> None:
    table = {"A": {"a1": {"r1": 50.0, "r2": 50.0}}, "B": {"b1": {"r1": 50.0, "r2": 50.0}}}
    report = build_report(make_records(table), n_boot=50)
    _check(report)
    assert report["alpha"]["raw"]["value"] is None and report["alpha"]["z"]["value"] is None
    assert all(row["z_mean"] is None for row in report["systems"])
    assert any("r1" in w and "equal" in w for w in report["warnings"])
    assert [row["cluster"] for row in report["systems"]] == [1, 1]


def test_source_with_single_rating_and_missing_ratings() -> None:
    records = _campaign()
    records = [r for r in records if not (r.output == "b5" and r.rater != "r1")]  # b5: one rating
    records = [r for r in records if not (r.output == "a2" and r.rater == "r2")]  # a missing rating
    records.append(RatingRecord("lonely", "x1", "A", "r2", 55.0))  # a source with one rating
    report = build_report(records, n_boot=50)
    _check(report)
    assert report["warnings"] == ["2 outputs have fewer than 2 ratings and do not count towards alpha",
                                  "1 ratings have no category and appear in no category table"]
    # 36 ratings - 3 dropped + 1; 12 outputs + x1; sources s0-s5 and "lonely".
    assert report["counts"] == {"ratings": 34, "outputs": 13, "sources": 7, "systems": 2, "raters": 3}
    assert [(row["system"], row["n"]) for row in report["systems"]] == [("A", 18), ("B", 16)]
    assert report["categories"]["split"]["counts"]["ratings"] == 33  # all but the uncategorised one
    # The outputs rated once add nothing to alpha: without them, the same raw alpha.
    pairable = [r for r in records if r.output not in ("b5", "x1")]
    assert build_report(pairable, n_boot=0)["alpha"]["raw"]["value"] == pytest.approx(report["alpha"]["raw"]["value"])


def test_system_with_one_output() -> None:
    records = _campaign() + make_records(
        {"C": {"c0": {"r1": 10.0, "r2": 20.0, "r3": 15.0}}}, source_of={"c0": "s0"}
    )
    report = build_report(records, n_boot=50)
    _check(report)
    row = next(r for r in report["systems"] if r["system"] == "C")
    assert row["n"] == 3 and row["ci_low"] == row["ci_high"] == row["z_mean"]
    assert report["systems"][-1]["system"] == "C"


def test_seeded() -> None:
    assert build_report(_campaign(), n_boot=50, seed=1) == build_report(_campaign(), n_boot=50, seed=1)
