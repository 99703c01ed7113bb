"""Per-aspect correlations and the paired bootstrap test between two metrics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from evaluation.stats.bootstrap import FloatArray
from evaluation.stats.correlation import TauItem, kendall_tau_like, kendall_tau_like_ci
from evaluation.stats.metric_comparison import TauPairs, aspect_correlations, paired_pearson_test, paired_tau_test


def _data(n_sources: int = 40, per_source: int = 5, seed: int = 3) -> tuple[list[str], FloatArray, FloatArray]:
    rng = np.random.default_rng(seed)
    sources = [f"s{i}" for i in range(n_sources) for _ in range(per_source)]
    human = rng.normal(size=n_sources * per_source)
    return sources, human, rng.normal(size=human.size)


def _list(values: FloatArray) -> list[float]:
    return [float(v) for v in values]


def test_aspect_correlations_match_scipy() -> None:
    sources, human, noise = _data()
    metric = human + noise
    result = aspect_correlations(sources, _list(metric), {"fluency": _list(human), "meaning": _list(noise)}, n_boot=200)
    assert result["fluency"]["pearson"]["value"] == pytest.approx(pearsonr(metric, human)[0])
    assert result["meaning"]["spearman"]["value"] == pytest.approx(spearmanr(metric, noise)[0])
    fluency = result["fluency"]["pearson"]
    assert fluency["ci_low"] < fluency["value"] < fluency["ci_high"]


def test_paired_pearson_test_separates_a_good_metric_from_noise() -> None:
    sources, human, noise = _data()
    good, bad = human + 0.3 * noise, noise
    test = paired_pearson_test(sources, _list(good), _list(bad), _list(human), n_boot=500)
    assert test.a == pytest.approx(pearsonr(good, human)[0])
    assert test.b == pytest.approx(pearsonr(bad, human)[0])
    assert test.a is not None and test.b is not None
    assert test.difference == pytest.approx(test.a - test.b)
    assert test.ci_low is not None and test.ci_low > 0
    assert test.p_value is not None and test.p_value < 0.01


def test_paired_test_of_a_metric_with_itself_is_not_significant() -> None:
    sources, human, noise = _data()
    same = _list(human + noise)
    test = paired_pearson_test(sources, same, same, _list(human), n_boot=200)
    assert test.difference == 0.0
    assert test.p_value == 1.0


def _tau_items() -> list[TauItem]:
    # One source, one category, three outputs rated 90 / 50 / 10 by all three raters.
    ratings = [90.0, 50.0, 10.0]
    return [
        TauItem(source=f"s{s}", output=f"s{s}o{k}", category="split", metric=0.0, ratings={"r1": r, "r2": r, "r3": r})
        for s in range(6)
        for k, r in enumerate(ratings)
    ]


def test_paired_tau_test_uses_the_tau_like_of_each_metric() -> None:
    items = _tau_items()
    agree = [3.0, 2.0, 1.0] * 6  # orders every pair as the raters do: tau 1
    reverse = [1.0, 2.0, 3.0] * 6  # orders every pair the other way: tau -1
    test = paired_tau_test(items, agree, reverse, n_boot=200)
    assert (test.a, test.b, test.difference) == (1.0, -1.0, 2.0)
    assert test.p_value == 0.0
    expected = kendall_tau_like(
        [TauItem(i.source, i.output, i.category, m, i.ratings) for i, m in zip(items, agree, strict=True)]
    )
    assert test.a == expected["all"].value
    with pytest.raises(ValueError, match="unknown key"):
        paired_tau_test(items, agree, reverse, key="deletion2", n_boot=10)


def test_tau_pairs_give_the_same_numbers_as_kendall_tau_like() -> None:
    rng = np.random.default_rng(11)
    categories = ["split", "paraphrase", "deletion"]
    items = []
    for s in range(30):
        category = categories[s % 3]
        for k in range(6):
            ratings = {f"r{j}": float(rng.integers(0, 101)) for j in range(3) if (s + k + j) % 7}  # some missing
            items.append(TauItem(f"s{s}", f"s{s}o{k}", category if k < 5 else "split", 0.0, ratings))
    metric = [float(v) for v in rng.integers(0, 5, size=len(items))]  # many metric ties
    scored = [TauItem(i.source, i.output, i.category, m, i.ratings) for i, m in zip(items, metric, strict=True)]
    pairs = TauPairs.from_items(items)
    fast = pairs.tau(metric, n_boot=300, seed=4)
    slow = kendall_tau_like_ci(scored, n_boot=300, seed=4)
    for key, cell in slow.items():
        assert fast[key]["concordant"] == cell["concordant"] and fast[key]["discordant"] == cell["discordant"]
        assert fast[key]["value"] == pytest.approx(cell["value"])
        assert fast[key]["ci_low"] == pytest.approx(cell["ci_low"]) and fast[key]["ci_high"] == pytest.approx(
            cell["ci_high"]
        )
