"""A stop rule for a campaign: how settled its system ranking is, what settling it would still cost, and
what its allocation has saved against uniform allocation.

Everything is computed on the ratings collected so far (a :class:`~evaluation.allocation.study.Study`
whose cells are the collected ratings), with the leaderboard's rule (mean z per output, then per system).

* **Settledness.** The systems are put in their current order and each *adjacent* pair ``(a, b)`` (a above
  b) gets ``P(order kept)``: the share of ``n_boot`` seeded bootstrap resamples of the sources
  (:func:`~evaluation.allocation.policies.bootstrap_means`) in which a's mean stays above b's (ties count
  half). Overall figures: the expected number of adjacent pairs the wrong way round
  (``sum(1 - P)``) and how many adjacent pairs are settled (``P >= level``, default 0.95).
* **Ratings still needed.** One normal model for every pair of systems (not only adjacent ones): pair
  ``(a, b)`` has its current gap ``d`` and the bootstrap's standard deviation ``sd`` of the difference; with
  ``f`` times the ratings collected, spread as so far (the same design over new sources like these, so
  ``sd`` falls as ``1/sqrt(f)``) and the gaps taken as they are, the pair comes out the wrong way round with
  probability ``Phi(-d sqrt(f) / sd)``. Two figures, each ``ceil((f - 1) N)`` for the smallest ``f`` that
  meets its target (0 when today's ratings meet it; None when not even ``FACTOR_MAX`` times them would):
  ``ratings_needed_top1``, for the current top system to stay on top with probability >= ``level``
  (Bonferroni: ``1 - sum_b Phi(-d_top,b sqrt(f) / sd) >= level``), and ``ratings_needed_tau``, for an
  expected Kendall tau of ``TAU_TARGET`` between the ranking and the true one
  (``1 - 2 sum Phi(...) / pairs``, ties in the truth counting against). ``tau_expected`` is that expected tau
  with today's ratings. Per adjacent pair, ``ratings_needed`` is what that pair alone would need for
  ``P(kept) >= level`` (``n (z_p sd / d)^2``; a pair needing more than ``NEAR_TIE_FACTOR`` times its ratings is
  a *near tie*, listed with no figure). Settling every adjacent pair of a long ranking is rarely the goal and
  its cost is ruled by the near ties, so no such total is given (experiments/README.md, "The stop rule").
* **Ratings saved against uniform.** One variance model of a pair's gap compares the campaign's design
  with uniform allocation's: each source covered by both systems gives a difference of output means with
  variance ``sb^2 + sr^2 (1/c_a + 1/c_b)`` (``sb^2``: the pair's spread over sources beyond rater noise,
  ``sr^2``: the rater noise, pooled within outputs; ``c``: ratings of the output), and the gap's variance
  is their mean over the ``m`` sources covered, divided by ``m``. Uniform allocation (today's: whole
  screens, source and rater at random) with ``N`` ratings gives system k ``n_k = N outputs_k / outputs``
  ratings as random screens over the ``S`` sources the campaign holds, each output rated at most ``R``
  times (its rater slots): :func:`coverage` gives the distinct sources ``m`` it covers and the mean of
  ``1/c`` over them (``c`` binomial). :func:`uniform_equivalent` finds by bisection the ``N_u`` with
  which uniform allocation reaches the campaign's expected number of adjacent pairs the wrong way round under this model
  (``sum Phi(-gap / sd)``); the ratings saved are ``N_u - N``. Covering more distinct sources (round-robin,
  adaptive) or giving the close pairs more ratings saves; ratings spent on settled pairs cost. A campaign
  run with uniform allocation reports 0 by definition (the caller says so: ``uniform=True``); replaying
  uniform allocation on released data gives about 0 (``tests/evaluation/test_stoprule.py``). When every
  adjacent pair is far beyond doubt (model's expected discordant pairs under ``SATURATED``) there is no
  saving to measure: None.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln, ndtr, ndtri

from evaluation.allocation.policies import RATER_VARIANCE, bootstrap_means
from evaluation.allocation.study import IntArray, Revealed, Study
from evaluation.stats.bootstrap import FloatArray

SETTLED_LEVEL = 0.95
N_BOOT_DEFAULT = 200
N_BOOT_MAX = 2000
NEAR_TIE_FACTOR = 100.0  # a pair needing more than 100x its current ratings is a near tie
FACTOR_MAX = 100.0  # the totals' search stops at 100x the ratings collected (None beyond)
TAU_TARGET = 0.95
REPEATS_MIN = 20  # repeat ratings (within outputs) before the rater noise is estimated from the campaign
SATURATED = 1e-6  # expected discordant pairs below this: every pair far beyond doubt, no saving to measure


@dataclass(frozen=True)
class PairSettledness:
    """One adjacent pair of the current order: ``above`` is ranked just above ``below``."""

    rank: int  # 1: the pair of the systems ranked 1 and 2
    above: str
    below: str
    gap: float  # mean z of ``above`` minus ``below`` (>= 0)
    se: float  # bootstrap standard deviation of the gap
    p_kept: float  # share of resamples keeping the order
    ratings: int  # ratings of the two systems so far
    ratings_needed: int | None  # total ratings of the two for P(kept) >= level by the model; None: near tie

    @property
    def settled(self) -> bool:
        return self.p_kept >= SETTLED_LEVEL

    def as_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank, "above": self.above, "below": self.below, "gap": round(self.gap, 5),
            "se": round(self.se, 5), "p_kept": round(self.p_kept, 4), "settled": self.settled,
            "ratings": self.ratings, "ratings_needed": self.ratings_needed,
            "ratings_missing": None if self.ratings_needed is None else max(0, self.ratings_needed - self.ratings),
        }


@dataclass(frozen=True)
class Settledness:
    """How settled the ranking is, what settling it would still cost, and the saving against uniform."""

    order: list[str]  # systems, best first (systems with no rating are left out)
    pairs: list[PairSettledness]
    ratings: int
    level: float
    n_boot: int
    seed: int
    expected_discordant: float  # sum over adjacent pairs of 1 - P(kept)
    tau_expected: float | None  # the model's expected Kendall tau with the true order, today's ratings
    ratings_needed_top1: int | None  # more ratings for P(top system stays on top) >= level; None: > FACTOR_MAX
    ratings_needed_tau: int | None  # more ratings for expected tau >= TAU_TARGET; None: > FACTOR_MAX
    near_ties: int
    uniform_ratings: int | None  # ratings uniform allocation needs for today's expected discordant pairs
    ratings_saved: int | None  # uniform_ratings - ratings; 0 by definition for a uniform campaign
    uniform: bool

    @property
    def settled_pairs(self) -> int:
        return sum(p.settled for p in self.pairs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "order": self.order, "ratings": self.ratings, "level": self.level, "n_boot": self.n_boot,
            "seed": self.seed, "adjacent_pairs": len(self.pairs), "settled_pairs": self.settled_pairs,
            "expected_discordant": round(self.expected_discordant, 3),
            "tau_expected": None if self.tau_expected is None else round(self.tau_expected, 4),
            "tau_target": TAU_TARGET, "factor_max": FACTOR_MAX,
            "ratings_needed_top1": self.ratings_needed_top1, "ratings_needed_tau": self.ratings_needed_tau,
            "near_ties": self.near_ties,
            "uniform_ratings": self.uniform_ratings, "ratings_saved": self.ratings_saved,
            "uniform": self.uniform, "pairs": [p.as_dict() for p in self.pairs],
        }


def _z(level: float) -> float:
    return float(ndtri(level))


def check_n_boot(n_boot: int) -> int:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 10 <= n_boot <= N_BOOT_MAX:
        raise ValueError(f"n_boot must be an integer from 10 to {N_BOOT_MAX} (got {n_boot!r})")
    return n_boot


def settledness(
    study: Study, *, n_boot: int = N_BOOT_DEFAULT, seed: int = 0, level: float = SETTLED_LEVEL,
    uniform: bool = False, population: int | None = None, slots: int | None = None,
) -> Settledness:
    """The stop rule's figures for the ratings in ``study`` (see the module's docstring); ``population``: the
    sources the campaign holds (default: the study's), over which uniform allocation would spread, and
    ``slots`` the ratings each output may get (default: the study's rater slots)."""
    check_n_boot(n_boot)
    if not 0.5 < level < 1:
        raise ValueError(f"level must be between 0.5 and 1 (got {level!r})")
    state = Revealed(study)
    state.mask[:] = study.present
    means = state.system_means()
    seen = np.flatnonzero(np.isfinite(means))
    order = seen[np.argsort(-means[seen], kind="stable")]
    per_system = study.present.sum(axis=(0, 1)).astype(np.int64)
    outputs = np.array([sum(1 for row in study.outputs if row[k]) for k in range(study.shape[2])], dtype=np.float64)
    total = int(per_system.sum())
    n_sources = study.shape[0]
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_sources, np.full(n_sources, 1.0 / n_sources), size=n_boot).astype(np.float64)
    boot = bootstrap_means(state, weights) if len(order) >= 2 else np.zeros((n_boot, study.shape[2]))
    z = _z(level)
    pairs: list[PairSettledness] = []
    for rank, (a, b) in enumerate(itertools.pairwise(order), start=1):
        diff = boot[:, a] - boot[:, b]
        p_kept = float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))
        gap = float(means[a] - means[b])
        se = float(np.std(diff, ddof=1)) if n_boot > 1 else 0.0
        n_pair = int(per_system[a] + per_system[b])
        factor = _factor(gap, se, z)
        needed = None if factor > NEAR_TIE_FACTOR else int(np.ceil(n_pair * max(factor, 1.0)))
        pairs.append(PairSettledness(rank=rank, above=study.systems[a], below=study.systems[b], gap=gap, se=se,
                                     p_kept=p_kept, ratings=n_pair, ratings_needed=needed))
    gaps, sds, tops = _all_pairs(boot, means, order)
    tau_expected = need_top1 = need_tau = None  # fewer than two systems: no order to settle
    if gaps.size:
        tau_expected = _expected_tau(gaps, sds, 1.0)
        need_top1 = _ratings_needed(total, lambda f: 1.0 - _wrong(gaps[tops], sds[tops], f).sum() >= level)
        need_tau = _ratings_needed(total, lambda f: _expected_tau(gaps, sds, f) >= TAU_TARGET)
    if uniform:
        uniform_ratings: int | None = total
    else:
        design = _pair_designs(state, order, population or n_sources, slots or study.shape[1])
        uniform_ratings = None if design is None else uniform_equivalent(
            design, np.array([p.gap for p in pairs]), outputs / max(outputs.sum(), 1.0), total)
    return Settledness(
        order=[study.systems[k] for k in order], pairs=pairs, ratings=total, level=level, n_boot=n_boot,
        seed=seed, expected_discordant=float(sum(1.0 - p.p_kept for p in pairs)),
        tau_expected=tau_expected, ratings_needed_top1=need_top1, ratings_needed_tau=need_tau,
        near_ties=sum(p.ratings_needed is None for p in pairs),
        uniform_ratings=uniform_ratings,
        ratings_saved=None if uniform_ratings is None else uniform_ratings - total, uniform=uniform,
    )


def _all_pairs(boot: FloatArray, means: FloatArray, order: IntArray
               ) -> tuple[FloatArray, FloatArray, npt.NDArray[np.bool_]]:
    """Every pair of the current order: gap (>= 0), the bootstrap's standard deviation of the difference, and
    whether the pair holds the top system."""
    first, second = np.triu_indices(order.size, k=1)
    a, b = order[first], order[second]
    gaps = means[a] - means[b]
    sds = np.std(boot[:, a] - boot[:, b], axis=0, ddof=1) if boot.shape[0] > 1 else np.zeros(a.size)
    return gaps, sds, first == 0


def _wrong(gaps: FloatArray, sds: FloatArray, factor: float) -> FloatArray:
    """Each pair's probability of coming out the wrong way round with ``factor`` times the ratings (a zero
    gap: one half; no spread and a positive gap: 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(sds > 0, sds, 1.0)
        ratio = np.where(sds > 0, gaps * np.sqrt(factor) / spread, np.where(gaps > 0, np.inf, 0.0))
    out: FloatArray = ndtr(-ratio)
    return out


def _expected_tau(gaps: FloatArray, sds: FloatArray, factor: float) -> float:
    return float(1.0 - 2.0 * _wrong(gaps, sds, factor).sum() / gaps.size) if gaps.size else 1.0


def _ratings_needed(total: int, met: Callable[[float], bool]) -> int | None:
    """``ceil((f - 1) total)`` for the smallest factor ``f`` in [1, FACTOR_MAX] meeting ``met`` (monotone in
    ``f``), by bisection; 0 when today's ratings meet it, None when ``FACTOR_MAX`` times them would not."""
    if met(1.0):
        return 0
    if not met(FACTOR_MAX):
        return None
    low, high = 1.0, FACTOR_MAX
    while high - low > 1e-4 * low:
        mid = math.sqrt(low * high)
        low, high = (low, mid) if met(mid) else (mid, high)
    return math.ceil((high - 1.0) * total)


def _factor(gap: float, se: float, z: float) -> float:
    """``(z se / gap)^2``: how many times its current ratings a pair needs to be settled (inf: no gap)."""
    if se <= 0:
        return 0.0 if gap > 0 else float("inf")
    if gap <= 0:
        return float("inf")
    return float((z * se / gap) ** 2)


@dataclass(frozen=True)
class PairDesigns:
    """Per adjacent pair: the systems, ``sb^2``, today's variance of the gap, and the pooled ``sr^2``."""

    systems: list[tuple[int, int]]
    between: FloatArray
    variance: FloatArray
    rater: float
    sources: int
    slots: int


def _pair_designs(state: Revealed, order: IntArray, population: int, slots: int) -> PairDesigns | None:
    study = state.study
    z = study.zscores(state.mask)
    has = np.isfinite(z)
    count = has.sum(axis=1)  # (S, K)
    om = state.output_means()
    dev = np.where(has, z - np.where(np.isfinite(om), om, 0.0)[:, None, :], 0.0)
    dof = float(np.maximum(count - 1, 0).sum())
    # rater noise: pooled within outputs once 20 repeat ratings estimate it; before, the allocation
    # policies' prior (SimpEval_past's)
    rater = float((dev**2).sum() / dof) if dof >= REPEATS_MIN else RATER_VARIANCE
    systems, between, variance = [], [], []
    for a, b in itertools.pairwise(order.tolist()):
        both = (count[:, a] > 0) & (count[:, b] > 0)
        m = int(both.sum())
        if m < 2:
            return None
        inverse = 1.0 / count[both, a] + 1.0 / count[both, b]
        diff = om[both, a] - om[both, b]
        sb = max(float(np.var(diff, ddof=1)) - rater * float(inverse.mean()), 0.0)
        systems.append((a, b))
        between.append(sb)
        variance.append((sb + rater * float(inverse.mean())) / m)
    return PairDesigns(systems=systems, between=np.array(between), variance=np.array(variance), rater=rater,
                       sources=max(population, 1), slots=max(slots, 1))


def _discordant(gaps: FloatArray, variance: FloatArray) -> float:
    sd = np.sqrt(np.maximum(variance, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong = np.where(sd > 0, ndtr(-gaps / np.where(sd > 0, sd, 1.0)), np.where(gaps > 0, 0.0, 0.5))
    return float(np.sum(wrong))


def uniform_variance(design: PairDesigns, share: FloatArray, total: float) -> FloatArray:
    """Each pair's gap variance under uniform allocation of ``total`` ratings (``share``: each system's share)."""
    out = np.empty(len(design.systems))
    for i, (a, b) in enumerate(design.systems):
        n = max(total * (share[a] + share[b]) / 2, 1e-9)
        m, inverse = coverage(n, design.sources, design.slots)
        out[i] = (design.between[i] + design.rater * 2.0 * inverse) / m
    return out


def coverage(n: float, sources: int, slots: int) -> tuple[float, float]:
    """Uniform allocation's ``n`` ratings of one system as random screens without repeats (each of its
    ``sources`` outputs can be rated by ``slots`` raters): the expected distinct sources covered and
    ``E[1/c | c >= 1]``, ``c`` an output's ratings (binomial, ``slots`` draws at ``n / (sources slots)``)."""
    q = min(max(n / (sources * slots), 1e-12), 1.0)
    k = np.arange(1, slots + 1, dtype=np.float64)
    if q >= 1.0:
        p = (k == slots).astype(np.float64)
    else:
        p = np.exp(gammaln(slots + 1) - gammaln(k + 1) - gammaln(slots - k + 1) + k * np.log(q)
                   + (slots - k) * np.log1p(-q))
    covered = float(p.sum())
    if covered <= 0:
        return 1e-9, 1.0
    return sources * covered, float(np.sum(p / k) / covered)


def uniform_equivalent(design: PairDesigns, gaps: FloatArray, share: FloatArray, total: int,
                       *, cap: float = 1000.0) -> int | None:
    """The total ratings with which uniform allocation reaches the campaign's expected discordant adjacent
    pairs under the variance model (see the module), by bisection; None beyond ``cap`` times ``total``."""
    target = _discordant(gaps, design.variance)
    if total <= 0 or len(gaps) == 0 or target < SATURATED:
        return None

    def worse(n: float) -> bool:
        return _discordant(gaps, uniform_variance(design, share, n)) > target * (1 + 1e-12)

    low, high = 0.0, float(total)
    while worse(high):
        low, high = high, high * 2
        if high > cap * total:
            return None
    for _ in range(80):
        if high - low < 0.25:
            break
        mid = (low + high) / 2
        if worse(mid):
            low = mid
        else:
            high = mid
    return round(high)
