"""The quality-control core: MWU against scipy, degraded copies, verdicts on a synthetic careless rater."""

from __future__ import annotations

import random

import pytest
from scipy import stats

from evaluation.stats.quality import QualityRatings, annotator_verdict, degrade, mann_whitney_greater


@pytest.mark.parametrize("seed", range(12))
def test_mwu_matches_scipy(seed: int) -> None:
    rng = random.Random(seed)
    n1, n2 = rng.randint(1, 14), rng.randint(1, 14)
    ties = seed % 2 == 0
    draw = (lambda: float(rng.randrange(0, 101, 25))) if ties else (lambda: rng.uniform(0, 100))
    x = [draw() + (10 if seed % 3 else 0) for _ in range(n1)]
    y = [draw() for _ in range(n2)]
    ours = mann_whitney_greater(x, y, method="asymptotic")
    theirs = stats.mannwhitneyu(x, y, alternative="greater", method="asymptotic", use_continuity=True)
    assert ours.u == pytest.approx(float(theirs.statistic))
    assert ours.p == pytest.approx(float(theirs.pvalue), rel=1e-9, abs=1e-12)
    if not ties:
        exact = mann_whitney_greater(x, y, method="exact")
        reference = stats.mannwhitneyu(x, y, alternative="greater", method="exact")
        assert exact.p == pytest.approx(float(reference.pvalue), rel=1e-9)


def test_mwu_refuses_empty_samples() -> None:
    with pytest.raises(ValueError):
        mann_whitney_greater([], [1.0])


def test_degrade_always_changes_the_text() -> None:
    rng = random.Random(0)
    text = "The cat sat on the mat near the old red house"
    for _ in range(50):
        assert degrade(text, rng=rng) != text
        assert sorted(degrade(text, rng=rng).split()) == sorted(text.split())  # scrambled: same words
        replaced = degrade(text, rng=rng, filler=["river", "car", "friend"])
        assert replaced != text and len(replaced.split()) == len(text.split())


def test_synthetic_campaign_flags_only_the_careless_rater() -> None:
    """Careful raters score originals ~70 and degraded copies ~25; the careless one rates at random."""
    rng = random.Random(3)  # fixed data; at random about one seed in twenty would pass MWU by chance
    verdicts = {}
    for rater in ("careful-1", "careful-2", "careless"):
        is_careless = rater == "careless"
        originals = [rng.uniform(0, 100) if is_careless else rng.gauss(70, 10) for _ in range(10)]
        degraded = [rng.uniform(0, 100) if is_careless else rng.gauss(25, 10) for _ in range(10)]
        repeats = [(a, rng.uniform(0, 100) if is_careless else a + rng.gauss(0, 5)) for a in originals[:4]]
        seconds = [rng.uniform(3, 8) if is_careless else rng.uniform(40, 90) for _ in range(10)]
        verdicts[rater] = annotator_verdict(QualityRatings(rater, originals, degraded, (), repeats, seconds,
                                                           0.05 if is_careless else 0.7))
    assert verdicts["careful-1"].reliable and not verdicts["careful-1"].flagged
    assert verdicts["careful-2"].reliable and not verdicts["careful-2"].flagged
    careless = verdicts["careless"]
    assert careless.reliable is False and careless.mwu_p is not None and careless.mwu_p >= 0.05
    assert any("MWU p =" in r for r in careless.reasons)
    assert any("too fast" in r for r in careless.reasons)


def test_too_few_pairs_gives_no_mwu_verdict() -> None:
    verdict = annotator_verdict(QualityRatings("a", [80.0, 70.0], [10.0, 20.0]))
    assert verdict.reliable is None and verdict.mwu_p is None and not verdict.flagged
