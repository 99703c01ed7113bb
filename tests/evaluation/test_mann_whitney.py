"""The leaderboard's one-sided Mann-Whitney test equals scipy's (method "auto") on every kind of sample."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from evaluation.stats.leaderboard import mann_whitney_greater_p


@pytest.mark.parametrize("kind", ["ratings", "continuous", "heavy_ties", "small_exact", "small_tied"])
def test_p_values_equal_scipys(kind: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n1, n2 = (rng.integers(1, 9, 2) if kind.startswith("small") else rng.integers(9, 400, 2))
        if kind in ("ratings", "small_tied"):
            x, y = rng.integers(0, 101, n1).astype(float), rng.integers(0, 101, n2).astype(float)
        elif kind == "heavy_ties":
            x, y = rng.integers(0, 4, n1).astype(float), rng.integers(0, 4, n2).astype(float)
        else:
            x, y = rng.normal(0.0, 1.0, n1), rng.normal(0.2, 1.0, n2)
        if np.ptp(np.concatenate([x, y])) == 0:
            continue
        expected = float(mannwhitneyu(x, y, alternative="greater").pvalue)
        assert mann_whitney_greater_p(x, y) == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_a_clearly_better_sample_gets_a_small_p() -> None:
    better, worse = np.arange(50, 100, dtype=float), np.arange(0, 50, dtype=float)
    assert mann_whitney_greater_p(better, worse) < 1e-10 < 0.99 < mann_whitney_greater_p(worse, better)
