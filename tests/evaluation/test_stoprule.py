"""The stop rule (evaluation.allocation.stoprule) and the study planner (evaluation.allocation.planner) on
synthetic studies with known system means, and the planner checked against studies it did not fit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.allocation import Revealed, make_policy
from evaluation.allocation.planner import PlanError, PlanRequest, check_plan, parse_sizes, plan
from evaluation.allocation.released import released_study
from evaluation.allocation.stoprule import settledness
from evaluation.allocation.study import Study


def make_study(means: list[float], *, sources: int, slots: int, noise: float = 0.8, output_sd: float = 0.4,
               seed: int = 0, name: str = "synthetic") -> Study:
    """Systems with known means; each output has its own effect (sd ``output_sd``) and each rating rater
    noise (sd ``noise``). Ratings are given as z-scores (kept as given, like SimpEval's slots)."""
    rng = np.random.default_rng(seed)
    k = len(means)
    output = np.asarray(means)[None, :] + rng.normal(0, output_sd, (sources, k))
    z = output[:, None, :] + rng.normal(0, noise, (sources, slots, k))
    return Study(
        name=name, sources=[f"src{s}" for s in range(sources)], systems=[f"s{i}" for i in range(k)],
        raw=50 + 15 * z, z=z, rater=np.zeros(z.shape, dtype=np.int64), raters=["slot"],
        outputs=[[f"src{s}:s{i}" for i in range(k)] for s in range(sources)], recompute_z=False,
    )


def keep_sources(study: Study, n: int) -> Study:
    """The study with only its first ``n`` sources' ratings."""
    return replace(study, raw=study.raw[:n], z=study.z[:n], rater=study.rater[:n], sources=study.sources[:n],
                   outputs=study.outputs[:n])


def test_far_apart_systems_are_settled_and_identical_ones_are_a_coin_flip() -> None:
    far = settledness(make_study([3.0, 1.5, 0.0, -1.5], sources=40, slots=3))
    assert far.order == ["s0", "s1", "s2", "s3"]
    assert [p.p_kept for p in far.pairs] == [1.0, 1.0, 1.0]
    assert far.settled_pairs == 3 and far.expected_discordant == 0.0
    assert far.ratings_needed_top1 == 0 and far.ratings_needed_tau == 0 and far.tau_expected == 1.0
    # exactly identical systems: every resample ties them, P(kept) = 0.5
    twin = make_study([0.0, 0.0], sources=30, slots=3)
    twin = replace(twin, z=np.repeat(twin.z[:, :, :1], 2, axis=2), raw=np.repeat(twin.raw[:, :, :1], 2, axis=2))
    assert settledness(twin).pairs[0].p_kept == 0.5
    # systems with the same true mean: ordered by their observed gap, P(kept) is a coin flip's |t| (uniform on
    # 0.5-1, mean 0.75), settled at 0.95 about one time in ten, never near 1 on average
    probabilities = [settledness(make_study([0.0, 0.0], sources=40, slots=3, seed=seed), seed=seed).pairs[0].p_kept
                     for seed in range(60)]
    assert 0.6 < float(np.mean(probabilities)) < 0.85
    assert sum(p >= 0.95 for p in probabilities) <= 12


def test_settledness_is_seeded_and_bounded() -> None:
    study = make_study([0.3, 0.2, 0.0], sources=30, slots=2)
    assert settledness(study, seed=4).as_dict() == settledness(study, seed=4).as_dict()
    with pytest.raises(ValueError, match="n_boot"):
        settledness(study, n_boot=10**6)


def test_ratings_still_needed_fall_as_the_ratings_grow_even_with_a_near_tie() -> None:
    """Median over 20 synthetic studies with a near tie (0.10 vs 0.08) among five systems: the more sources
    rated, the fewer ratings still needed for the top system (down to 0) and the higher the expected tau;
    the total the model asks for tau >= 0.95 stays about one size (the former figure, every adjacent pair
    settled, grew with the data as close pairs left the near-tie zone)."""
    means = [0.5, 0.35, 0.1, 0.08, -0.2]
    sizes = (20, 40, 80, 160)
    figures = [[settledness(keep_sources(study, n)) for n in sizes]
               for study in (make_study(means, sources=160, slots=3, seed=seed) for seed in range(20))]
    top1 = np.median([[np.inf if f.ratings_needed_top1 is None else f.ratings_needed_top1 for f in row]
                      for row in figures], axis=0)
    assert top1[0] > top1[1] > top1[2] >= top1[3] == 0, top1
    # the model's total for tau >= 0.95 (collected + still needed) estimates one size, whatever was collected
    totals = np.median([[np.inf if f.ratings_needed_tau is None else f.ratings + f.ratings_needed_tau
                         for f in row] for row in figures], axis=0)
    assert float(totals.max() / totals.min()) < 2.5, totals
    expected = np.median([[f.tau_expected for f in row] for row in figures], axis=0)
    assert expected[0] < expected[1] < expected[2] < expected[3] <= 1.0, expected


def test_ratings_needed_for_the_top_system_against_fresh_studies() -> None:
    """The total the model asks for (collected + still needed, median over 20 pilots of 20 sources) finds the
    true best system in about 95% of fresh studies of that size drawn from the true model (it did not fit)."""
    means = [0.5, 0.3, 0.0]
    pilots = [settledness(make_study(means, sources=20, slots=3, seed=seed), seed=seed) for seed in range(20)]
    totals = [p.ratings + p.ratings_needed_top1 for p in pilots if p.ratings_needed_top1 is not None]
    sources = round(float(np.median(totals)) / (3 * len(means)))
    assert sources > 20  # the pilot alone does not settle the top
    hits = [int(np.argmax(np.nanmean(make_study(means, sources=sources, slots=3, seed=1000 + s).z, axis=(0, 1)))
                == 0)
            for s in range(300)]
    assert 0.88 <= float(np.mean(hits)) <= 1.0, (sources, np.mean(hits))


def revealed(study: Study, policy: str, share: float, seed: int) -> Study:
    """The study with only what ``policy`` reveals up to ``share`` of its ratings."""
    state = Revealed(study)
    chosen = make_policy(policy)
    chosen.start(study, np.random.default_rng(seed))
    while state.cost < share * study.full_ratings:
        screen = chosen.choose(state)
        if screen is None:
            break
        state.reveal(screen)
    return replace(study, raw=np.where(state.mask, study.raw, np.nan), z=np.where(state.mask, study.z, np.nan))


def test_savings_are_zero_for_uniform_and_positive_for_better_designs() -> None:
    study = make_study([0.5, 0.3, 0.15, 0.0, -0.2], sources=200, slots=5, noise=0.46, seed=2)
    assert settledness(study, uniform=True).ratings_saved == 0  # a uniform campaign: 0 by definition
    saved: dict[str, list[float]] = {policy: [] for policy in ("uniform", "round_robin")}
    for seed in range(15):
        for policy in saved:
            figures = settledness(revealed(study, policy, 0.2, seed), seed=seed)
            assert figures.ratings_saved is not None
            saved[policy].append(figures.ratings_saved / figures.ratings)
    # replaying uniform allocation: the model finds about no saving; round-robin (every source once before
    # any twice, the same ratings) covers more sources and saves
    assert abs(float(np.median(saved["uniform"]))) < 0.08, saved["uniform"]
    assert float(np.median(saved["round_robin"])) > 0.15, saved["round_robin"]
    # ratings moved from the clear pair to the close ones save; moved the other way, they cost
    base = make_study([1.0, 0.12, 0.0], sources=80, slots=4, seed=3)
    focused = base.raw.copy()
    focused[:, 2:, 0] = np.nan  # the leader: 2 ratings per output, the close pair 4
    close = settledness(replace(base, raw=focused, z=np.where(np.isfinite(focused), base.z, np.nan)))
    wasted = base.raw.copy()
    wasted[:, 2:, 1:] = np.nan  # the close pair: 2 ratings per output, the leader 4
    spent = settledness(replace(base, raw=wasted, z=np.where(np.isfinite(wasted), base.z, np.nan)))
    assert (close.ratings, spent.ratings) == (800, 640)
    assert close.ratings_saved is not None and close.ratings_saved > 0
    assert spent.ratings_saved is not None and spent.ratings_saved < 0


def test_planner_meets_its_target_on_studies_it_did_not_fit() -> None:
    means = [0.5, 0.3, 0.15, 0.0, -0.3]
    pilot = make_study(means, sources=40, slots=3, seed=11)
    request = PlanRequest(target="top_k", k=1, p=0.9, sources=(10, 20, 40, 80, 160, 320), raters=(1, 2, 3),
                          sims=200, seed=0)
    result = plan(pilot, request)
    assert result.truth_top == ["s0"]
    chosen = result.recommended
    assert chosen is not None and chosen["probability"] >= 0.9
    # more sources never lower the planned probability much (the grid is monotone up to simulation noise)
    for r in (1, 2, 3):
        probs = [row["probability"] for row in result.rows if row["raters"] == r]
        assert probs[-1] > probs[0]
    # fresh studies of the recommended size from the true model (other seeds): the true best is found
    hits = []
    for seed in range(100, 300):
        fresh = make_study(means, sources=chosen["sources"], slots=chosen["raters"], seed=seed)
        z = fresh.z.mean(axis=1).mean(axis=0)
        hits.append(int(np.argmax(z)) == 0)
    assert float(np.mean(hits)) >= 0.9 - 0.08, (chosen, np.mean(hits))
    # and the next smaller size of the grid falls short there too (the plan is not wastefully large)
    smaller = [n for n in request.sources if n < chosen["sources"]]
    if smaller:
        n = max(smaller)
        hits = [int(np.argmax(make_study(means, sources=n, slots=chosen["raters"], seed=seed).z.mean(axis=(0, 1))))
                == 0 for seed in range(300, 500)]
        assert float(np.mean(hits)) < 0.9 + 0.05


def test_planner_alpha_width_narrows_with_size() -> None:
    pilot = make_study([0.5, 0.0, -0.5, 0.2], sources=40, slots=3, seed=5)
    result = plan(pilot, PlanRequest(target="alpha", w=0.15, sources=(10, 40, 160), raters=(1, 2, 4), sims=60))
    rows = {(row["sources"], row["raters"]): row for row in result.rows}
    assert rows[(40, 1)]["width"] is None and not rows[(40, 1)]["met"]  # one rater: no agreement to measure
    assert rows[(10, 2)]["width"] > rows[(160, 2)]["width"] > 0
    assert result.recommended is not None and result.recommended["width"] < 0.15


@pytest.mark.parametrize(("change", "field"), [
    ({"target": "nope"}, "target"), ({"k": 0}, "k"), ({"k": 5}, "k"), ({"p": 1.0}, "p"),
    ({"target": "alpha", "w": 0.0}, "w"), ({"sources": (1,)}, "sources"), ({"sources": (10**6,)}, "sources"),
    ({"raters": ()}, "raters"), ({"raters": tuple(range(1, 15))}, "raters"), ({"sims": 5}, "sims"),
    ({"sims": 1000, "sources": (2000, 1999, 1998), "raters": (20, 19, 18)}, "sims"),
    ({"sims": 1000, "sources": tuple(range(2, 14)), "raters": tuple(range(1, 13))}, "sims"),
])
def test_bad_planner_input_names_the_field(change: dict[str, object], field: str) -> None:
    request = replace(PlanRequest(), **change)  # type: ignore[arg-type]
    with pytest.raises(PlanError) as caught:
        check_plan(request, systems=5)
    assert caught.value.field == field


def test_parse_sizes() -> None:
    assert parse_sizes("50, 25,25;100", field="sources") == (25, 50, 100)
    for bad in ("", "a,b", "-3", ",".join(["1"] * 20)):
        with pytest.raises(PlanError) as caught:
            parse_sizes(bad, field="raters")
        assert caught.value.field == "raters"


@pytest.mark.data
def test_plan_from_half_of_simpeval_past_holds_on_the_other_half(simpeval_data_dir: Path) -> None:
    """Plan top-1 from 50 of SimpEval_past's sources; the recommended size, drawn from the 50 held-out
    sources, finds the full data's best system about as often as planned."""
    past = released_study("past", simpeval_data_dir)
    order = np.random.default_rng(0).permutation(past.shape[0])
    first, second = order[:50], order[50:]

    def part(rows: np.ndarray) -> Study:
        return replace(past, raw=past.raw[rows], z=past.z[rows], rater=past.rater[rows],
                       sources=[past.sources[i] for i in rows], outputs=[past.outputs[i] for i in rows])

    request = PlanRequest(target="top_k", k=1, p=0.8, sources=(50, 100, 200, 400), raters=(1, 3), sims=200)
    planned = plan(part(first), request)
    chosen = planned.recommended
    assert chosen is not None
    check = plan(part(second), replace(request, sources=(chosen["sources"],), raters=(chosen["raters"],), seed=9))
    full_top = plan(past, replace(request, sources=(10,), raters=(1,), sims=20)).truth_top
    if check.truth_top == full_top:  # the held-out half's own best is the full data's
        assert check.rows[0]["probability"] >= 0.8 - 0.15, (chosen, check.rows)
