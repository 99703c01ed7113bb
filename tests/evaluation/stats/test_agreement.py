from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from evaluation.stats.agreement import (
    Level,
    RatingMatrix,
    alpha_bootstrap,
    alpha_leave_one_out,
    alpha_with_ci,
    krippendorff_alpha,
    rating_matrix,
)
from evaluation.stats.bootstrap import resample_weights
from evaluation.stats.records import RatingRecord


def _with_missing(values: np.ndarray, rng: np.random.Generator, share: float = 0.3) -> np.ndarray:
    out = values.astype(float)
    out[rng.random(out.shape) < share] = np.nan
    return out


@pytest.mark.parametrize("seed", range(5))
def test_interval_matches_krippendorff_package(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # 0-100 integer ratings like the interface's; the package is slow on many distinct values.
    truth = rng.normal(50, 20, 400)
    data = _with_missing(np.clip(np.round(truth[None, :] + rng.normal(0, 15, (5, 400))), 0, 100), rng)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert krippendorff_alpha(data) == pytest.approx(expected, abs=1e-9)


def test_interval_matches_package_on_continuous_values() -> None:
    rng = np.random.default_rng(7)
    data = _with_missing(rng.normal(0, 1, (3, 40)) + rng.normal(0, 1, 40)[None, :], rng)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert krippendorff_alpha(data) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(3))
def test_other_levels_match_krippendorff_package(level: Level, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    truth = rng.integers(1, 6, 250)
    noisy = np.clip(truth[None, :] + rng.integers(-1, 2, (4, 250)) * (rng.random((4, 250)) < 0.4), 1, 6)
    data = _with_missing(noisy, rng)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-9)


def test_perfect_agreement_and_undefined_cases() -> None:
    assert krippendorff_alpha(np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])) == pytest.approx(1.0)
    assert np.isnan(krippendorff_alpha(np.full((3, 4), 7.0)))  # no variation
    assert np.isnan(krippendorff_alpha(np.array([[1.0, 2.0, 3.0]])))  # one rater: nothing pairable
    assert np.isnan(krippendorff_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])))
    assert np.isnan(krippendorff_alpha(np.full((3, 4), 7.0), level="ordinal"))
    assert np.isnan(krippendorff_alpha(np.empty((0, 0))))


def test_unpairable_units_are_ignored() -> None:
    data = np.array([[1.0, 2.0, 3.0, 9.0], [1.5, 2.0, 3.5, np.nan]])
    assert krippendorff_alpha(data) == pytest.approx(krippendorff_alpha(data[:, :3]))


def _matrix(seed: int = 0, n_sources: int = 30) -> RatingMatrix:
    rng = np.random.default_rng(seed)
    units = n_sources * 4
    truth = rng.normal(0, 1, units)
    values = _with_missing(truth[None, :] + rng.normal(0, 1, (3, units)), rng, 0.2)
    return RatingMatrix(
        values=values,
        raters=["a", "b", "c"],
        units=[f"u{i}" for i in range(units)],
        unit_sources=[f"s{i // 4}" for i in range(units)],
    )


def test_vectorised_bootstrap_equals_explicit_resampling() -> None:
    matrix = _matrix()
    fast = alpha_bootstrap(matrix, n_boot=20, seed=5)
    weights = resample_weights(30, n_boot=20, seed=5)
    for b in range(20):
        columns = [u for g in range(30) for _ in range(int(weights[b, g])) for u in range(4 * g, 4 * g + 4)]
        assert fast[b] == pytest.approx(krippendorff_alpha(matrix.values[:, columns]), abs=1e-9)
    slow = alpha_bootstrap(matrix, n_boot=5, seed=5, level="ordinal")
    assert slow.shape == (5,)


def test_alpha_with_ci() -> None:
    matrix = _matrix(1)
    out = alpha_with_ci(matrix, n_boot=200, seed=0)
    assert out["value"] == pytest.approx(krippendorff_alpha(matrix.values))  # the point estimate: all the data
    assert out["ci_low"] is not None and out["value"] is not None and out["ci_high"] is not None
    assert out["ci_low"] < out["value"] < out["ci_high"]
    assert alpha_with_ci(matrix, n_boot=200, seed=1)["value"] == out["value"]  # the seed moves only the interval
    assert alpha_with_ci(matrix, n_boot=200, seed=0) == out
    undefined = RatingMatrix(
        values=np.full((2, 3), 5.0), raters=["a", "b"], units=["1", "2", "3"], unit_sources=["s", "s", "t"]
    )
    assert alpha_with_ci(undefined, n_boot=10) == {"value": None, "ci_low": None, "ci_high": None}


def test_rating_matrix_layout_and_duplicates() -> None:
    records = [
        RatingRecord("s1", "o1", "A", "r1", 10.0, z=-1.0),
        RatingRecord("s1", "o2", "B", "r1", 30.0),
        RatingRecord("s1", "o1", "A", "r2", 20.0, z=0.5),
        RatingRecord("s1", "o1", "A", "r2", 40.0, z=1.5),
    ]
    raw = rating_matrix(records)
    assert raw.raters == ["r1", "r2"] and raw.units == ["o1", "o2"]
    assert raw.unit_sources == ["s1", "s1"]
    np.testing.assert_array_equal(raw.values, [[10.0, 30.0], [30.0, np.nan]])
    assert raw.duplicates == 1
    z = rating_matrix(records, field="z")
    np.testing.assert_array_equal(z.values, [[-1.0, np.nan], [1.0, np.nan]])


def test_leave_one_out() -> None:
    matrix = _matrix(2)
    loo = alpha_leave_one_out(matrix)
    assert set(loo) == {"a", "b", "c"}
    assert loo["a"] == pytest.approx(krippendorff_alpha(matrix.values[1:]))
    single = RatingMatrix(
        values=np.array([[1.0, 2.0]]), raters=["a"], units=["x", "y"], unit_sources=["s", "t"]
    )
    assert alpha_leave_one_out(single) == {"a": None}
