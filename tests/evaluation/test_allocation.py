"""The allocation simulator (evaluation.allocation): exact full reveal, cost accounting, and every policy
finding a known order on a small synthetic study."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.allocation import (
    MIN_SCREEN,
    POLICIES,
    Revealed,
    Screen,
    Study,
    Truth,
    full_leaderboard,
    kendall_tau_b,
    make_policy,
    simulate,
    summarise,
)
from evaluation.allocation.policies import METRIC_AWARE
from evaluation.stats.leaderboard import system_leaderboard
from evaluation.stats.records import RatingRecord, simpeval_records
from evaluation.stats.zscores import with_zscores

TRUE_MEANS = np.linspace(1.5, -1.5, 8)  # system "s0" best ... "s7" worst


def synthetic_records(*, named: bool, noise: float = 0.4, sources: int = 30, slots: int = 3) -> list[RatingRecord]:
    """Systems s0..s7 with known means, a source effect, rater noise; z-scores released (slots) or not
    (named raters: four people take turns)."""
    rng = np.random.default_rng(7)
    records = []
    for s in range(sources):
        effect = rng.normal(0, 0.5)
        for slot in range(slots):
            for k, mean in enumerate(TRUE_MEANS):
                value = mean + effect + rng.normal(0, noise)
                rater = f"worker-{(s + slot + k) % 4}" if named else f"slot-{slot + 1}"
                records.append(
                    RatingRecord(
                        source=f"src{s}", output=f"src{s}:s{k}", system=f"s{k}", rater=rater,
                        raw=float(50 + 15 * value), z=None if named else float(value),
                    )
                )
    return records


def with_metrics(study: Study) -> Study:
    """Two noisy metrics that know the true order only roughly (higher is better)."""
    rng = np.random.default_rng(3)
    s, _, k = study.shape
    truth = np.array([TRUE_MEANS[int(name[1:])] for name in study.systems])
    scores = np.stack([truth[None, :] + rng.normal(0, 1.0, (s, k)) for _ in range(2)])
    return replace(study, metric_scores=scores, metric_names=["m1", "m2"])


def _rows(board: object) -> list[dict[str, object]]:
    return [dict(row) for row in board.rows]  # type: ignore[attr-defined]


@pytest.mark.parametrize("named", [False, True])
def test_full_reveal_reproduces_the_full_leaderboard_exactly(named: bool) -> None:
    records = synthetic_records(named=named)
    study = Study.from_records(records, name="synthetic")
    assert study.recompute_z is named
    trace = simulate(study, make_policy("uniform"), seed=1)
    assert trace.cost[-1] == study.full_ratings == len(records)
    assert trace.tau[-1] == 1.0 and trace.top1[-1]
    expected = system_leaderboard(with_zscores(records)[0] if named else records, n_boot=50, seed=0)
    assert _rows(full_leaderboard(study, n_boot=50, seed=0)) == _rows(expected)


@pytest.mark.parametrize("named", [False, True])
def test_revealed_means_follow_the_leaderboard_on_a_partial_reveal(named: bool) -> None:
    study = Study.from_records(synthetic_records(named=named), name="synthetic")
    state = Revealed(study)
    rng = np.random.default_rng(0)
    for source in rng.choice(study.shape[0], 12, replace=False):
        state.reveal(Screen(int(source), int(rng.integers(study.shape[1])), tuple(range(0, 8, 1 + source % 2))))
    board = state.leaderboard(n_boot=20)
    means = state.system_means()
    got = {study.systems[k]: means[k] for k in range(len(means)) if np.isfinite(means[k])}
    assert got == pytest.approx({row["system"]: row["z_mean"] for row in board.rows}, abs=1e-12)
    assert [row["system"] for row in board.rows] == sorted(got, key=lambda name: -got[name])


def test_recomputed_zscores_are_the_platforms() -> None:
    records = synthetic_records(named=True)
    study = Study.from_records(records, name="synthetic")
    mask = np.zeros(study.shape, dtype=bool)
    mask[:10] = True
    revealed = study.records(mask)
    computed, _ = with_zscores(revealed)
    z = study.zscores(mask)
    by_cell = {(r.output, r.rater): r.z for r in computed}
    for s, slot, k in zip(*np.nonzero(mask), strict=True):
        rater = study.raters[study.rater[s, slot, k]]
        assert z[s, slot, k] == pytest.approx(by_cell[(study.outputs[s][k], rater)], abs=1e-12)


def test_cost_counts_ratings_revealed_and_screens_are_shown_once() -> None:
    records = [r for r in synthetic_records(named=False) if not (r.source == "src0" and r.system == "s3"
                                                                  and r.rater == "slot-1")]
    study = Study.from_records(records, name="synthetic")
    state = Revealed(study)
    source, slot = study.sources.index("src0"), 0
    s3 = study.systems.index("s3")
    assert state.reveal(Screen(source, slot, (0, 1, s3))) == 2  # the missing rating costs nothing
    assert state.cost == int(state.mask.sum()) == 2
    with pytest.raises(ValueError, match="already shown"):
        state.reveal(Screen(source, slot, (4,)))
    with pytest.raises(ValueError, match="asks for systems"):
        state.reveal(Screen(source, 1, ()))
    with pytest.raises(ValueError, match="outside the study"):
        state.reveal(Screen(999, 0, (0,)))
    trace = simulate(study, make_policy("uniform"), seed=0, budget=100)
    assert trace.cost[-1] <= 100 and trace.cost == sorted(trace.cost)
    assert all(b - a <= 8 for a, b in zip(trace.cost, trace.cost[1:], strict=False))


@pytest.mark.parametrize("name", [*sorted(POLICIES), "adaptive-without-metrics"])
def test_each_policy_finds_the_true_order(name: str) -> None:
    study = Study.from_records(synthetic_records(named=False, noise=0.6), name="synthetic")
    if name in METRIC_AWARE:
        study = with_metrics(study)
    name = name.removesuffix("-without-metrics")
    truth = Truth.of(study)
    expected = [study.systems.index(f"s{k}") for k in range(8)]
    assert np.argsort(-truth.means).tolist() == expected
    for seed in range(3):
        trace = simulate(study, make_policy(name), seed=seed, truth=truth, budget=study.full_ratings // 2)
        assert trace.tau[-1] == 1.0, (name, seed, trace.tau[-1])
        assert trace.top1[-1]


@pytest.mark.parametrize("name", ["elimination", "uncertainty", "bootstrap_gain", "finite_population"])
def test_shorter_screens_keep_the_minimum_size_and_cost_less(name: str) -> None:
    records = [replace(r, system=f"{r.system}-{copy}", output=f"{r.output}-{copy}", z=(r.z or 0.0) - 5 * copy)
               for copy in range(2) for r in synthetic_records(named=False)]  # 16 systems in two far groups
    study = Study.from_records(records, name="synthetic")
    policy = make_policy(name)
    policy.start(study, np.random.default_rng(0))
    state = Revealed(study)
    sizes = []
    while state.open_screens().any():
        screen = policy.choose(state)
        if screen is None:
            break
        sizes.append(state.reveal(screen))
    assert min(sizes) >= MIN_SCREEN
    assert min(sizes) < 16  # some screens leave settled systems off


def test_adaptive_without_metric_scores_is_round_robin_by_source() -> None:
    study = Study.from_records(synthetic_records(named=False), name="synthetic")
    policy = make_policy("adaptive")
    policy.start(study, np.random.default_rng(0))
    state = Revealed(study)
    shown = []
    for _ in range(study.shape[0]):
        screen = policy.choose(state)
        assert screen is not None and len(screen.systems) == 8
        shown.append(screen.source)
        state.reveal(screen)
    assert sorted(shown) == list(range(study.shape[0]))  # every source once before any twice


def test_metric_policies_need_metric_scores() -> None:
    study = Study.from_records(synthetic_records(named=False), name="synthetic")
    with pytest.raises(ValueError, match="needs automatic metric scores"):
        simulate(study, make_policy("metric_guided"), seed=0)
    with pytest.raises(ValueError, match="unknown allocation policy 'best'"):
        make_policy("best")


def test_kendall_tau_b_matches_scipy() -> None:
    from scipy.stats import kendalltau

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=12).round(1), rng.normal(size=12).round(1)
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_summary_row_has_the_issue_keys() -> None:
    study = Study.from_records(synthetic_records(named=False), name="synthetic")
    traces = [simulate(study, make_policy("round_robin"), seed=s) for s in range(3)]
    row = summarise(study, "round_robin", traces)
    assert {"dataset", "policy", "seeds", "full_ratings", "ratings_to_tau95", "top1_accuracy"} <= set(row)
    assert set(row["top1_accuracy"]) == {"0.1", "0.2", "0.3", "0.5"}
    assert row["full_ratings"] == 720 and row["seeds"] == 3
    assert row["ratings_to_tau95"]["median"] is not None and row["ratings_to_tau95"]["median"] <= 720


@pytest.mark.data
def test_full_reveal_of_released_data_reproduces_the_leaderboard(simpeval_data_dir: Path) -> None:
    records = simpeval_records(simpeval_data_dir / "simpeval" / "simpeval_2022.csv")
    study = Study.from_records(records, name="SimpEval_2022")
    assert study.shape == (60, 3, 6) and not study.recompute_z
    assert _rows(full_leaderboard(study, n_boot=50)) == _rows(system_leaderboard(records, n_boot=50))


def test_mixed_objective_rates_the_close_pair_next() -> None:
    """s0 and s1 are 0.05 apart, every other neighbour 0.43: after one slot of every source, one more
    rating of s0 or s1 lowers the expected misorders most (with the leader's pairs weighing more)."""
    records = [replace(r, z=(r.z or 0.0) + (0.38 if r.system == "s1" else 0.0)) for r in synthetic_records(named=False)]
    study = with_metrics(Study.from_records(records, name="synthetic"))
    policy = make_policy("mixed_objective")
    policy.start(study, np.random.default_rng(0))
    state = Revealed(study)
    for source in range(study.shape[0]):
        state.reveal(Screen(source, 0, tuple(range(8))))
    gains = policy.gains(state)  # type: ignore[attr-defined]
    close = {study.systems.index("s0"), study.systems.index("s1")}
    others = [k for k in range(8) if k not in close]
    assert min(gains[list(close)]) > 3 * max(gains[others])
    screen = policy.choose(state)
    assert screen is not None and close <= set(screen.systems) and len(screen.systems) >= MIN_SCREEN


def test_oracle_bound_reads_the_full_data_not_the_revealed() -> None:
    study = with_metrics(Study.from_records(synthetic_records(named=False), name="synthetic"))
    policy = make_policy("oracle_bound")
    policy.start(study, np.random.default_rng(0))
    state = Revealed(study)
    state.reveal(Screen(0, 0, tuple(range(8))))
    means, _, _ = policy.estimates(state)  # type: ignore[attr-defined]
    assert means == pytest.approx(Truth.of(study).means, abs=1e-12)


def test_leader_share_spends_its_share_on_the_leaders_of_covered_sources() -> None:
    records = [replace(r, system=f"{r.system}-{copy}", output=f"{r.output}-{copy}", z=(r.z or 0.0) - 0.2 * copy)
               for copy in range(2) for r in synthetic_records(named=False)]  # 16 systems
    study = Study.from_records(records, name="synthetic")
    rng = np.random.default_rng(3)
    study = replace(study, metric_scores=rng.normal(size=(2, *study.shape[::2])), metric_names=["m1", "m2"])
    policy = make_policy("leader_share")
    policy.start(study, np.random.default_rng(0))
    state = Revealed(study)
    whole_seen: set[int] = set()
    short = 0
    while state.cost < study.full_ratings // 2:
        screen = policy.choose(state)
        assert screen is not None
        if len(screen.systems) < 16:
            means = state.system_means()
            assert set(screen.systems) == set(np.argsort(-means, kind="stable")[:MIN_SCREEN].tolist())
            assert screen.source in whole_seen  # another slot of a source already covered
            short += state.reveal(screen)
            assert short <= 0.05 * state.cost + MIN_SCREEN
        else:
            whole_seen.add(screen.source)
            state.reveal(screen)
    assert short > 0


def test_median_interval_brackets_the_median_and_narrows_with_more_seeds() -> None:
    from evaluation.allocation.simulate import median_interval

    rng = np.random.default_rng(0)
    few, many = rng.normal(2000, 500, 20), rng.normal(2000, 500, 500)
    lo_few, hi_few = median_interval(few.tolist()) or (0.0, 0.0)
    lo_many, hi_many = median_interval(many.tolist()) or (0.0, 0.0)
    assert lo_few <= np.median(few) <= hi_few and lo_many <= np.median(many) <= hi_many
    assert hi_many - lo_many < (hi_few - lo_few) / 2
    assert median_interval([1.0]) is None
    study = Study.from_records(synthetic_records(named=False), name="synthetic")
    row = summarise(study, "round_robin", [simulate(study, make_policy("round_robin"), seed=s) for s in range(5)])
    low, high = row["ratings_to_tau95"]["median_90"]
    assert low <= row["ratings_to_tau95"]["median"] <= high


def test_metric_variance_priority_ranks_sources_by_how_differently_the_metrics_score_their_outputs() -> None:
    """One rule for the simulator and live campaigns: the source whose systems the metrics spread most comes
    first; a source with one scored output (or none) gets 0; the simulator's policy reads the same numbers."""
    from evaluation.allocation.policies import ItemVariance, metric_variance_priority

    nan = np.nan
    scores = np.array([
        [[10.0, 50.0, 90.0], [40.0, 50.0, 60.0], [50.0, nan, nan], [nan, nan, nan]],  # metric 1
        [[1.0, 5.0, 9.0], [4.0, 5.0, 6.0], [5.0, nan, nan], [nan, nan, nan]],  # metric 2, another scale
    ])
    priority = metric_variance_priority(scores)
    assert priority[0] > priority[1] > 0
    assert priority[2] == priority[3] == 0
    assert np.allclose(metric_variance_priority(scores[:1]), priority)  # standardised: the scale drops out
    assert np.allclose(metric_variance_priority(scores, power=2.0), priority**2)
    with pytest.raises(ValueError, match="metrics, sources, systems"):
        metric_variance_priority(scores[0])
    study = with_metrics(Study.from_records(synthetic_records(named=False), name="synthetic"))
    assert study.metric_scores is not None
    assert np.array_equal(ItemVariance().priorities(study), metric_variance_priority(study.metric_scores))


def test_every_policy_has_a_description_for_the_pages() -> None:
    from evaluation.allocation.policies import POLICIES, POLICY_DESCRIPTIONS

    assert set(POLICY_DESCRIPTIONS) == set(POLICIES) and all(POLICY_DESCRIPTIONS.values())
