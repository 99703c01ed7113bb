from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from annotation.rules import TAU_THRESHOLD
from evaluation.stats.correlation import (
    TauItem,
    kendall_tau_like,
    kendall_tau_like_ci,
    metric_correlation_ci,
    pearson,
)


def item(
    output: str, metric: float, ratings: dict[str, float], *, source: str = "s1", category: str = "split"
):
    return TauItem(source=source, output=output, category=category, metric=metric, ratings=ratings)


def test_concordant_and_discordant_pairs() -> None:
    items = [
        item("a", 0.9, {"r1": 90, "r2": 85, "r3": 80}),
        item("b", 0.5, {"r1": 60, "r2": 65, "r3": 70}),
        item("c", 0.7, {"r1": 20, "r2": 30, "r3": 25}),
    ]
    # Human order a > b > c; metric order a > c > b: (a,b) C, (a,c) C, (b,c) D.
    result = kendall_tau_like(items)
    assert result["split"].concordant == 2
    assert result["split"].discordant == 1
    assert result["split"].value == pytest.approx(1 / 3)
    assert result.value["all"] == pytest.approx(1 / 3)
    assert result.value["paraphrase"] is None
    assert result.value["deletion"] is None
    assert set(result.to_dict()) == {"all", "deletion", "paraphrase", "split"}
    json.dumps(result.to_dict())


def test_threshold_and_strict_majority() -> None:
    # r1 prefers a by 10, r2 by exactly 5 (a tie at threshold 5), r3 prefers b: 1 of 3 votes a.
    weak = [item("a", 1.0, {"r1": 70, "r2": 65, "r3": 50}), item("b", 0.0, {"r1": 60, "r2": 60, "r3": 60})]
    assert kendall_tau_like(weak)["all"].pairs == 0
    # Two of three prefer a by more than 5: a strict majority, counted.
    majority = [
        item("a", 1.0, {"r1": 70, "r2": 67, "r3": 50}),
        item("b", 0.0, {"r1": 60, "r2": 60, "r3": 60}),
    ]
    assert kendall_tau_like(majority)["all"].concordant == 1
    assert kendall_tau_like(majority, unanimous=True)["all"].pairs == 0
    # A lower threshold turns r2's 5-point difference into a vote.
    assert kendall_tau_like(weak, threshold=4.0)["all"].concordant == 1


def test_two_raters_need_both_for_a_strict_majority() -> None:
    items = [item("a", 1.0, {"r1": 90, "r2": 60}), item("b", 0.0, {"r1": 60, "r2": 60})]
    assert kendall_tau_like(items)["all"].pairs == 0


def test_only_raters_of_both_outputs_vote() -> None:
    items = [item("a", 1.0, {"r1": 90, "r2": 10}), item("b", 0.0, {"r1": 60, "r3": 95})]
    assert kendall_tau_like(items)["all"].concordant == 1
    assert kendall_tau_like([item("a", 1.0, {"r1": 90}), item("b", 0.0, {"r2": 10})])["all"].pairs == 0


def test_metric_ties_are_discordant() -> None:
    items = [item("a", 0.5, {"r1": 90}), item("b", 0.5, {"r1": 10})]
    result = kendall_tau_like(items)
    assert (result["all"].concordant, result["all"].discordant) == (0, 1)
    assert result["all"].value == -1.0


def test_pairs_only_within_source_and_category() -> None:
    items = [
        item("a", 1.0, {"r1": 90}, category="split"),
        item("b", 0.0, {"r1": 10}, category="paraphrase"),
        item("c", 0.0, {"r1": 10}, category="split", source="s2"),
        item("d", 1.0, {"r1": 90}, category="deletion", source="s2"),
        item("e", 0.0, {"r1": 10}, category="deletion", source="s2"),
    ]
    result = kendall_tau_like(items)
    assert result["all"].pairs == 1
    assert result["deletion"].concordant == 1
    assert result["split"].pairs == 0


def test_empty_input() -> None:
    result = kendall_tau_like([])
    assert result.value == {"all": None, "deletion": None, "paraphrase": None, "split": None}
    ci = kendall_tau_like_ci([], n_boot=10)
    assert ci["all"] == {"value": None, "ci_low": None, "ci_high": None, "concordant": 0, "discordant": 0}


def _random_items(seed: int, n_sources: int = 40) -> list[TauItem]:
    rng = np.random.default_rng(seed)
    items = []
    for s in range(n_sources):
        for o in range(6):
            quality = rng.normal(50, 20)
            ratings = {f"r{k}": float(np.clip(quality + rng.normal(0, 10), 0, 100)) for k in range(3)}
            category = ["split", "paraphrase", "deletion"][int(rng.integers(0, 3))]
            items.append(TauItem(f"s{s}", f"s{s}o{o}", category, float(quality + rng.normal(0, 15)), ratings))
    return items


def test_ci_brackets_value_and_is_seeded() -> None:
    items = _random_items(0)
    ci = kendall_tau_like_ci(items, n_boot=300, seed=3)
    point = kendall_tau_like(items)
    for key in ("all", "split", "paraphrase", "deletion"):
        assert ci[key]["value"] == point[key].value
        assert ci[key]["ci_low"] <= ci[key]["value"] <= ci[key]["ci_high"]
    assert ci == kendall_tau_like_ci(items, n_boot=300, seed=3)
    assert ci != kendall_tau_like_ci(items, n_boot=300, seed=4)


def test_pearson_and_spearman_match_scipy() -> None:
    rng = np.random.default_rng(1)
    metric = rng.integers(0, 15, 120).astype(float)  # many ties, for Spearman
    human = metric * 0.1 + rng.normal(0, 1, 120)
    sources = [f"s{i // 4}" for i in range(120)]
    out = metric_correlation_ci(sources, list(metric), list(human), n_boot=200)
    assert out["n"] == 120
    assert out["pearson"]["value"] == pytest.approx(stats.pearsonr(metric, human)[0], abs=1e-12)
    assert out["spearman"]["value"] == pytest.approx(stats.spearmanr(metric, human)[0], abs=1e-12)
    for name in ("pearson", "spearman"):
        assert out[name]["ci_low"] <= out[name]["value"] <= out[name]["ci_high"]


def test_bootstrap_spearman_equals_spearman_of_the_resample() -> None:
    from evaluation.stats.correlation import _spearman_rows

    rng = np.random.default_rng(2)
    x = rng.integers(0, 6, 30).astype(float)
    y = rng.normal(size=30)
    weights = rng.integers(0, 3, (1, 30)).astype(float)
    expanded = np.repeat(np.arange(30), weights[0].astype(int))
    assert _spearman_rows(x, y, weights)[0] == pytest.approx(stats.spearmanr(x[expanded], y[expanded])[0])


def test_correlation_degenerate_inputs() -> None:
    out = metric_correlation_ci(["a", "b"], [1.0, 1.0], [0.0, 1.0], n_boot=20)
    assert out["pearson"]["value"] is None
    assert metric_correlation_ci([], [], [], n_boot=20)["spearman"]["value"] is None
    with pytest.raises(ValueError):
        metric_correlation_ci(["a"], [1.0, 2.0], [1.0], n_boot=5)


def test_pearson_agrees_with_scipy_and_stays_within_one() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=40), rng.normal(size=40)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    for r, expected in ((pearson(list(x), list(2 * x + 1)), 1.0),
                        (pearson([1e8 + 0.1, 1e8 + 0.2, 1e8 + 0.3], [3.0, 2.0, 1.0]), -1.0)):
        assert r is not None and -1.0 <= r <= 1.0 and r == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("x", "y"),
    [([], []), ([1.0], [2.0]), ([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]), ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]),
     ([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]), ([1.0, 2.0, float("inf")], [1.0, 2.0, 3.0])],
    ids=["empty", "one-pair", "flat-x", "flat-y", "nan", "infinite"],
)
def test_pearson_is_none_where_undefined(x: list[float], y: list[float]) -> None:
    assert pearson(x, y) is None


def test_pearson_refuses_series_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="pearson of 3 against 2 values"):
        pearson([1.0, 2.0, 3.0], [1.0, 2.0])


def test_tau_threshold_is_the_default_gap() -> None:
    """Two raters 5 points apart are tied at the default threshold and not at a lower one."""
    items = [item("a", 0.9, {"r1": 55, "r2": 55}), item("b", 0.1, {"r1": 50, "r2": 50})]
    assert TAU_THRESHOLD == 5.0
    assert kendall_tau_like(items).value["all"] is None
    assert kendall_tau_like(items, threshold=TAU_THRESHOLD - 1).value["all"] == 1.0
