"""A stop rule for a campaign: how settled its system ranking is, what settling it would still cost, and
what its allocation has saved against uniform allocation.

Everything is computed on the ratings collected so far (a :class:`~evaluation.allocation.study.Study`
whose cells are the collected ratings), with the leaderboard's rule (mean z per output, then per system).

* **Settledness.** The systems are put in their current order and each *adjacent* pair ``(a, b)`` (a above
  b) gets ``P(order kept)``: the share of ``n_boot`` seeded bootstrap resamples of the sources
  (:func:`~evaluation.allocation.policies.bootstrap_means`) in which a's mean stays above b's (ties count
  half). Overall figures: the expected number of adjacent pairs the wrong way round
  (``sum(1 - P)``) and how many adjacent pairs are settled (``P >= level``, default 0.95).
* **Ratings still needed.** A normal model per adjacent pair (as in ``experiments/allocation_bound.py``):
  its gap ``d`` (current mean difference) has standard error ``se`` (the bootstrap's standard deviation of
  the difference), and ``se`` shrinks as ``1/sqrt(n)`` with ``n``, the ratings of the two systems so far.
  The pair is settled at level ``p`` once ``d / se >= z_p`` (``z_0.95 = 1.645``), i.e. with
  ``n * (z_p * se / d)^2`` ratings of the two. Each system needs the largest factor ``(z_p se / d)^2`` of
  its (at most two) adjacent pairs times its current ratings; the figure is the sum over systems of what is
  missing. It assumes the extra ratings go where they are needed (an adaptive campaign) and that the gap
  stays as it is. A pair that would need more than ``NEAR_TIE_FACTOR`` times its current ratings is a
  *near tie*: it is listed with no figure and left out of the sum (no affordable study would order it).
* **Ratings saved against uniform.** Uniform allocation gives every output the same number of ratings, so
  system k gets the share ``outputs_k / outputs`` of the ratings. By the same normal model (each pair's
  ``se`` scales with its ratings), :func:`uniform_equivalent` finds the total ``N_u`` with which uniform
  allocation reaches the *current* expected number of discordant adjacent pairs (model version,
  ``sum Phi(-d / se)``); the ratings saved are ``N_u - N`` (``N``: ratings collected). A campaign whose
  systems hold ratings in proportion to their outputs gets exactly 0 (its ``se`` already are uniform's);
  one whose ratings went to the close pairs gets a positive figure; one that wasted ratings a negative one.
  A campaign run with uniform allocation reports 0 by definition (the caller says so: ``uniform=True``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from evaluation.allocation.policies import bootstrap_means
from evaluation.allocation.study import Revealed, Study
from evaluation.stats.bootstrap import FloatArray

SETTLED_LEVEL = 0.95
N_BOOT_DEFAULT = 200
N_BOOT_MAX = 2000
NEAR_TIE_FACTOR = 100.0  # a pair needing more than 100x its current ratings is a near tie


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
    ratings_still_needed: int  # sum over systems of the missing ratings (near ties left out)
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
            "ratings_still_needed": self.ratings_still_needed, "near_ties": self.near_ties,
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
    uniform: bool = False,
) -> Settledness:
    """The stop rule's figures for the ratings in ``study`` (see the module's docstring)."""
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
    factors = np.zeros(study.shape[2])
    for rank, (a, b) in enumerate(itertools.pairwise(order), start=1):
        diff = boot[:, a] - boot[:, b]
        p_kept = float(np.mean(diff > 0) + 0.5 * np.mean(diff == 0))
        gap = float(means[a] - means[b])
        se = float(np.std(diff, ddof=1)) if n_boot > 1 else 0.0
        n_pair = int(per_system[a] + per_system[b])
        factor = _factor(gap, se, z)
        needed = None if factor > NEAR_TIE_FACTOR else int(np.ceil(n_pair * max(factor, 1.0)))
        if factor <= NEAR_TIE_FACTOR:
            factors[a] = max(factors[a], factor)
            factors[b] = max(factors[b], factor)
        pairs.append(PairSettledness(rank=rank, above=study.systems[a], below=study.systems[b], gap=gap, se=se,
                                     p_kept=p_kept, ratings=n_pair, ratings_needed=needed))
    still = int(np.ceil(np.sum(np.maximum(factors - 1.0, 0.0) * per_system)))
    gaps = np.array([p.gap for p in pairs])
    ses = np.array([p.se for p in pairs])
    share = np.array([(per_system[a] + per_system[b]) for a, b in itertools.pairwise(order)],
                     dtype=np.float64)
    uniform_share = np.array([(outputs[a] + outputs[b]) for a, b in itertools.pairwise(order)],
                             dtype=np.float64) / max(outputs.sum(), 1.0)
    if uniform:
        uniform_ratings: int | None = total
    else:
        uniform_ratings = uniform_equivalent(gaps, ses, share, uniform_share, total)
    return Settledness(
        order=[study.systems[k] for k in order], pairs=pairs, ratings=total, level=level, n_boot=n_boot,
        seed=seed, expected_discordant=float(sum(1.0 - p.p_kept for p in pairs)),
        ratings_still_needed=still, near_ties=sum(p.ratings_needed is None for p in pairs),
        uniform_ratings=uniform_ratings,
        ratings_saved=None if uniform_ratings is None else uniform_ratings - total, uniform=uniform,
    )


def _factor(gap: float, se: float, z: float) -> float:
    """``(z se / gap)^2``: how many times its current ratings a pair needs to be settled (inf: no gap)."""
    if se <= 0:
        return 0.0 if gap > 0 else float("inf")
    if gap <= 0:
        return float("inf")
    return float((z * se / gap) ** 2)


def model_discordant(gaps: FloatArray, ses: FloatArray, ratings: FloatArray, new_ratings: FloatArray) -> float:
    """Expected discordant pairs by the normal model when each pair's ratings go from ``ratings`` to
    ``new_ratings`` (its standard error scaling as ``1/sqrt(ratings)``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = ses * np.sqrt(ratings / np.maximum(new_ratings, 1e-12))
        p_wrong = np.where(scaled > 0, ndtr(-gaps / np.where(scaled > 0, scaled, 1.0)),
                           np.where(gaps > 0, 0.0, 0.5))
    return float(np.sum(p_wrong))


def uniform_equivalent(
    gaps: FloatArray, ses: FloatArray, ratings: FloatArray, uniform_share: FloatArray, total: int,
    *, cap: float = 1000.0,
) -> int | None:
    """The total ratings with which uniform allocation (pair i gets ``uniform_share[i] * N``) reaches
    the expected discordant pairs of the current ratings, by bisection; None when it needs more than
    ``cap`` times ``total`` (or there are no pairs or ratings)."""
    if len(gaps) == 0 or total <= 0:
        return None if total <= 0 else total
    target = model_discordant(gaps, ses, ratings, ratings)
    tolerance = 1e-12 * target

    def at(n: float) -> float:
        return model_discordant(gaps, ses, ratings, uniform_share * n)

    low, high = 0.0, float(total)
    while at(high) > target + tolerance:
        low, high = high, high * 2
        if high > cap * total:
            return None
    for _ in range(60):
        mid = (low + high) / 2
        if at(mid) > target + tolerance:
            low = mid
        else:
            high = mid
        if high - low < 0.25:
            break
    return round(high)
