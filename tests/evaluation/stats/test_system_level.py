"""System-level figures, pairwise accuracy with tie calibration, Williams' test and significance clusters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.stats.system_level import (
    grouped_acc_eq,
    pairwise_accuracy,
    significance_clusters,
    system_level_figures,
    tie_calibrated_accuracy,
    williams_test,
)


def _study(system_means: dict[str, float], n_sources: int = 4) -> tuple[list[str], list[str], list[float]]:
    """One output per system and source; the sources' offsets (+1, -1, +2, -2...) cancel in each system's mean."""
    sources, systems, values = [], [], []
    offsets = [(-1) ** s * (s // 2 + 1) for s in range(n_sources)]
    for system, mean in system_means.items():
        for s, offset in enumerate(offsets):
            sources.append(f"src{s}")
            systems.append(system)
            values.append(mean + offset)
    return sources, systems, values


def test_system_figures_on_a_hand_made_study_with_known_means() -> None:
    sources, systems, human = _study({"A": 1.0, "B": 2.0, "C": 3.0})
    metrics = {
        "good": _study({"A": 10.0, "B": 20.0, "C": 40.0})[2],
        "reversed": _study({"A": 3.0, "B": 2.0, "C": 1.0})[2],
        "tied": _study({"A": 10.0, "B": 10.0, "C": 20.0})[2],
    }
    result = system_level_figures(sources, systems, {"z": human}, metrics, n_boot=200, seed=1)
    assert result["systems"] == ["A", "B", "C"]
    assert result["human_means"]["z"] == pytest.approx({"A": 1.0, "B": 2.0, "C": 3.0})
    good = result["metrics"]["good"]["z"]
    assert result["metrics"]["good"]["means"]["z"] == pytest.approx({"A": 10.0, "B": 20.0, "C": 40.0})
    # Pearson of (1, 2, 3) with (10, 20, 40): cov 30 / (sqrt(2) * sqrt(466.67)) = 0.98198
    assert good["pearson"]["value"] == pytest.approx(30 / math.sqrt(2 * 1400 / 3), abs=1e-9)
    assert good["kendall"]["value"] == pytest.approx(1.0)
    assert (good["accuracy"]["value"], good["accuracy"]["agree"], good["accuracy"]["pairs"]) == (1.0, 3, 3)
    reversed_ = result["metrics"]["reversed"]["z"]
    assert reversed_["pearson"]["value"] == pytest.approx(-1.0)
    assert reversed_["kendall"]["value"] == pytest.approx(-1.0) and reversed_["accuracy"]["value"] == 0.0
    tied = result["metrics"]["tied"]["z"]
    assert tied["accuracy"]["value"] == pytest.approx(2 / 3)  # the metric's tie A = B disagrees with the humans
    assert tied["kendall"]["value"] == pytest.approx(2 / math.sqrt(3 * 2))  # tau-b
    assert tied["acc_eq"]["value"] == pytest.approx(2 / 3) and tied["acc_eq"]["epsilon"] == 0.0
    low, high = good["pearson"]["ci_sources"]
    assert low is not None and high is not None and low <= good["pearson"]["value"] <= high + 1e-12
    assert result["clusters"]["z"]["accuracy"]["order"][0] == "good"
    assert result["clusters"]["z"]["accuracy"]["rank"]["reversed"] > result["clusters"]["z"]["accuracy"]["rank"]["good"]


def test_pairwise_accuracy_counts_a_tie_only_against_a_tie() -> None:
    assert pairwise_accuracy([1, 2, 3], [1, 2, 3]) == (3, 3)
    assert pairwise_accuracy([1, 1, 3], [1, 2, 3]) == (2, 3)
    assert pairwise_accuracy([1, 1, 3], [5, 5, 3]) == (1, 3)


def test_tie_calibration_finds_the_known_best_threshold() -> None:
    # Humans tie outputs 0 and 1; the metric separates them by 0.05 and every other pair by 0.95 or more, in the
    # humans' order: 5/6 agree at epsilon 0, 6/6 at 0.05, fewer from 0.95 on.
    calibrated = tie_calibrated_accuracy([[1.0, 1.0, 2.0, 3.0]], [[0.0, 0.05, 1.0, 2.0]])
    assert calibrated["epsilon"] == pytest.approx(0.05) and calibrated["value"] == pytest.approx(1.0)
    # No human tie: introducing ties only loses, so epsilon stays 0.
    assert tie_calibrated_accuracy([[1.0, 2.0, 3.0]], [[0.0, 0.5, 3.0]])["epsilon"] == 0.0
    # Groups are averaged, not pooled: a group of 1 pair weighs as much as a group of 6.
    two = tie_calibrated_accuracy([[1.0, 2.0], [1.0, 1.0, 2.0, 3.0]], [[2.0, 1.0], [0.0, 0.05, 1.0, 2.0]])
    assert two["epsilon"] == pytest.approx(0.05) and two["value"] == pytest.approx((0.0 + 1.0) / 2)
    assert two["groups"] == 2
    assert tie_calibrated_accuracy([[1.0]], [[2.0]])["value"] is None
    # Equal maxima at epsilon 0 and 0.1 (1/3 each; 0 at 0.05): the smallest threshold is kept.
    equal = tie_calibrated_accuracy([[1.0, 1.0, 2.0]], [[0.0, 0.1, 0.05]])
    assert equal["epsilon"] == 0.0 and equal["value"] == pytest.approx(1 / 3)


def test_output_level_acc_eq_groups_pairs_by_source() -> None:
    sources = ["a", "a", "a", "a", "b", "b"]
    human = [1.0, 1.0, 2.0, 3.0, 1.0, 2.0]
    result = grouped_acc_eq(sources, {"z": human}, {"m": [0.0, 0.05, 1.0, 2.0, 2.0, 1.0]}, n_boot=50)
    cell = result["metrics"]["m"]["z"]
    assert cell["value"] == pytest.approx(0.5) and cell["epsilon"] == pytest.approx(0.05) and cell["groups"] == 2
    assert result["clusters"]["z"]["order"] == ["m"]


def test_williams_test_against_hand_arithmetic() -> None:
    # r(human, a) = .8, r(human, b) = .5, r(a, b) = .6, n = 20: K = 1 - .64 - .25 - .36 + .48 = .23,
    # t = .3 * sqrt(19 * 1.6) / sqrt(2 * .23 * 19 / 17 + .65^2 * .4^3) = 2.24851 on 17 df, one-sided p = 0.019047
    # (mt-metrics-eval's WilliamsTest gives 0.0190474 for the same numbers).
    assert williams_test(0.8, 0.5, 0.6, 20) == pytest.approx(0.0190474, abs=1e-6)
    assert williams_test(0.5, 0.8, 0.6, 20) == pytest.approx(0.0190474, abs=1e-6)
    assert williams_test(0.8, 0.5, 0.6, 3) is None


def test_clusters_separate_different_metrics_and_keep_identical_ones_together() -> None:
    rng = np.random.default_rng(0)
    n_sys, n_src = 8, 40
    quality = np.linspace(-1.0, 1.0, n_sys)
    sources = [f"s{j}" for i in range(n_sys) for j in range(n_src)]
    systems = [f"sys{i}" for i in range(n_sys) for _ in range(n_src)]
    human = [float(quality[i] + rng.normal(0, 0.5)) for i in range(n_sys) for _ in range(n_src)]
    good = [h + float(rng.normal(0, 0.1)) for h in human]
    noise = [float(rng.normal(0, 1.0)) for _ in human]
    result = system_level_figures(sources, systems, {"z": human}, {"good": good, "copy": list(good), "noise": noise},
                                  n_boot=300, seed=0)
    for figure in ("accuracy", "pearson"):
        clusters = result["clusters"]["z"][figure]
        assert clusters["rank"]["good"] == clusters["rank"]["copy"] == 1
        assert clusters["rank"]["noise"] == 2
        same = next(p for p in clusters["pairs"] if {p["better"], p["worse"]} == {"good", "copy"})
        assert same["p_value"] == 1.0 and not same["significant"]
    williams = {(w["metric_a"], w["metric_b"]): w for w in result["williams"]["z"]}
    assert williams[("good", "noise")]["p_value"] < 0.05


def test_cluster_rule_is_greedy_from_the_top() -> None:
    boot = {"a": np.full(100, 0.9), "b": np.full(100, 0.85), "c": np.full(100, 0.8)}
    boot["b"][:50] = 0.95  # b ties a in half the resamples: not different; c is below both in every one
    clusters = significance_clusters({"a": 0.9, "b": 0.85, "c": 0.8, "none": None}, boot)
    assert clusters["order"] == ["a", "b", "c", "none"]
    assert clusters["rank"] == {"a": 1, "b": 1, "c": 2, "none": 3}
    assert clusters["correction"] == "holm" and "bootstrap" in clusters["test"]
