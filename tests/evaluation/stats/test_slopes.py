"""Slope estimation on synthetic metrics with known slopes, and Holm's adjustment."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats.slopes import Observation, as_expected, fit_slope, score_direction, slope_table

MAGNITUDES = [float(m) for m in range(0, 101, 10)]


def test_a_known_slope_is_recovered() -> None:
    rng = np.random.default_rng(0)
    x = MAGNITUDES * 30
    y = [50.0 - 0.2 * m + float(rng.normal(0, 1)) for m in x]  # -20 points from 0% to 100%
    fit = fit_slope(x, y)
    assert fit.slope == pytest.approx(-20.0, abs=0.5) and fit.intercept == pytest.approx(50.0, abs=0.5)
    assert fit.p < 1e-12 and fit.n == 330


def test_degenerate_fits_are_not_significant() -> None:
    assert fit_slope([0, 50, 100], [3.0, 3.0, 3.0]).p == 1.0
    assert fit_slope([50, 50, 50], [1.0, 2.0, 3.0]).slope == 0.0
    assert fit_slope([0, 100], [1.0, 2.0]).p == 1.0
    with pytest.raises(ValueError, match="magnitudes"):
        fit_slope([0, 1], [1.0])


def test_directions() -> None:
    assert score_direction("up", higher_is_better=False) == "down"
    assert score_direction("down", higher_is_better=False) == "up"
    assert score_direction("none", higher_is_better=False) == "none"
    assert as_expected("down", -1.0, 0.01) and not as_expected("down", 1.0, 0.01)
    assert not as_expected("down", -1.0, 0.2) and as_expected("none", 5.0, 0.2) and not as_expected("none", 5.0, 0.001)


def test_table_of_a_sensitive_and_an_insensitive_metric() -> None:
    rng = np.random.default_rng(1)
    observations = []
    for m in MAGNITUDES * 20:
        noise = float(rng.normal(0, 0.5))
        observations.append(Observation("good", "negate", "faithfulness", "down", m, 10 - 0.05 * m + noise))
        observations.append(Observation("blind", "negate", "faithfulness", "down", m, 10 + noise))
        observations.append(Observation("grade", "simplify", "simplification", "up", m, 12 - 0.04 * m + noise, False))
    rows = {(r.metric, r.perturbation): r for r in slope_table(observations)}
    good, blind, grade = rows[("good", "negate")], rows[("blind", "negate")], rows[("grade", "simplify")]
    assert good.slope == pytest.approx(-5, abs=0.3) and good.as_expected and good.p_holm <= 3 * good.p + 1e-300
    assert not blind.as_expected and abs(blind.slope) < 0.5
    assert grade.expected_direction == "down" and grade.as_expected and grade.slope == pytest.approx(-4, abs=0.3)
    assert [r.metric for r in rows.values()] == ["good", "blind", "grade"]
    assert set(good.to_dict()) >= {"metric", "perturbation", "criterion", "slope", "p_holm", "expected_direction",
                                   "as_expected"}
