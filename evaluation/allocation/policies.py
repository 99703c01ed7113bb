"""Allocation policies: which screen (source, rater slot, outputs shown) a campaign asks for next.

Every policy sees only what has been revealed (:class:`~evaluation.allocation.study.Revealed`) and, if it
is metric-guided, the study's automatic metric scores. A screen must show at least
:data:`MIN_SCREEN` outputs (or every output the source has, when it has fewer): SimpEval's ratings are
list-wise (a rater places a source's outputs on one 0-100 scale side by side) and its smaller study,
SimpEval_2022, showed six outputs per screen; fewer than that leaves a rater too few anchors to place an
output against, and the released z-scores come from screens at least that full.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

from evaluation.allocation.study import BoolArray, Revealed, Screen, Study
from evaluation.stats.bootstrap import FloatArray

MIN_SCREEN = 6
PRIORITY_FLOOR = 1e-9  # added to every source priority: one the metrics cannot tell apart still gets a turn
RATER_VARIANCE = 0.21  # SimpEval_past's rater noise (sd 0.46), until 20 repeat ratings estimate it


class Policy(ABC):
    """Chooses the next screen; ``start`` is called once per simulated campaign with its random generator."""

    name = ""

    def start(self, study: Study, rng: np.random.Generator) -> None:
        self.study = study
        self.rng = rng

    @abstractmethod
    def choose(self, state: Revealed) -> Screen | None:
        """The next screen, or None to stop."""

    # --- helpers shared by the policies ---------------------------------------------------------------

    def all_systems(self, source: int, slot: int) -> tuple[int, ...]:
        return tuple(np.flatnonzero(self.study.present[source, slot]).tolist())

    def random_slot(self, state: Revealed, source: int) -> int:
        slots = np.flatnonzero(state.open_screens()[source])
        return int(self.rng.choice(slots))

    def least_covered_source(self, state: Revealed, systems: tuple[int, ...] | None = None) -> int | None:
        """A source with an open screen whose outputs of ``systems`` (all when None) have the fewest
        revealed ratings; ties are broken at random."""
        open_sources = state.open_screens().any(axis=1)
        if not open_sources.any():
            return None
        counts = state.counts()
        load = (counts if systems is None else counts[:, list(systems)]).sum(axis=1).astype(np.float64)
        load = np.where(open_sources, load + self.rng.random(load.shape) * 0.5, np.inf)
        return int(np.argmin(load))


class Uniform(Policy):
    """Today's allocation: whole screens, source and rater slot at random."""

    name = "uniform"

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        screens = np.argwhere(study.present.any(axis=2))
        self.queue = [tuple(int(v) for v in screens[i]) for i in rng.permutation(len(screens))]

    def choose(self, state: Revealed) -> Screen | None:
        if not self.queue:
            return None
        source, slot = self.queue.pop()
        return Screen(source, slot, self.all_systems(source, slot))


class RoundRobin(Policy):
    """Whole screens, one rater slot of every source before a second of any (source order shuffled)."""

    name = "round_robin"

    def choose(self, state: Revealed) -> Screen | None:
        source = self.least_covered_source(state)
        if source is None:
            return None
        slot = self.random_slot(state, source)
        return Screen(source, slot, self.all_systems(source, slot))


class SourcePriority(Policy):
    """Whole screens; the next source is the one with the highest ``priority / (1 + screens shown)``."""

    def priorities(self, study: Study) -> FloatArray:
        raise NotImplementedError

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        if study.metric_scores is None or study.metric_scores.shape[0] < 1:
            raise ValueError(f"policy {self.name!r} needs automatic metric scores for study {study.name!r}")
        priority = self.priorities(study)
        self.priority = np.nan_to_num(priority, nan=0.0) + PRIORITY_FLOOR

    def choose(self, state: Revealed) -> Screen | None:
        open_screens = state.open_screens()
        if not open_screens.any():
            return None
        shown = state.used.sum(axis=1)
        score = np.where(open_screens.any(axis=1), self.priority / (1.0 + shown), -np.inf)
        score = score + self.rng.random(score.shape) * 1e-12
        source = int(np.argmax(score))
        slot = self.random_slot(state, source)
        return Screen(source, slot, self.all_systems(source, slot))


def _standardised(scores: FloatArray) -> FloatArray:
    """Each metric's scores over the whole study on one scale (mean 0, sd 1)."""
    out = np.empty_like(scores)
    for m in range(scores.shape[0]):
        values = scores[m]
        sd = np.nanstd(values)
        out[m] = (values - np.nanmean(values)) / (sd if sd > 0 else 1.0)
    return out


def metric_variance_priority(scores: FloatArray, *, power: float = 1.0) -> FloatArray:
    """Each source's priority from automatic metric scores shaped ``(metrics, sources, systems)`` (NaN: not
    scored): the mean over metrics of the variance across systems of the source's scores, each metric first
    put on one scale over the whole study (mean 0, sd 1), raised to ``power``; 0 for a source with no two
    scores of one metric. The one rule of the adaptive policy's source order, used by the simulator
    (:class:`ItemVariance`, :class:`Adaptive`) and by live campaigns (``metrics.services.allocation``)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 3:
        raise ValueError(f"metric scores must be shaped (metrics, sources, systems), got {scores.shape}")
    if scores.shape[0] == 0 or scores.shape[1] == 0:
        return np.zeros(scores.shape[1])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no score, priority 0
        standard = _standardised(scores)
        spread = np.asarray(np.nanmean(np.nanvar(standard, axis=2), axis=0), dtype=np.float64)
    return np.asarray(np.nan_to_num(spread, nan=0.0) ** power, dtype=np.float64)


def _ranks(values: FloatArray) -> FloatArray:
    order = np.argsort(np.argsort(values, axis=-1, kind="stable"), axis=-1, kind="stable")
    return order.astype(np.float64)


class MetricDisagreement(SourcePriority):
    """Sources on which the automatic metrics disagree most about the order of the systems first
    (Active Evaluation's metric-assisted selection, per source): the priority is the mean over metric pairs
    of the share of system pairs the two metrics order differently."""

    name = "metric_guided"

    def priorities(self, study: Study) -> FloatArray:
        assert study.metric_scores is not None
        scores = study.metric_scores
        n_metrics, n_sources, _ = scores.shape
        if n_metrics < 2:
            return ItemVariance().priorities(study)
        out = np.zeros(n_sources)
        for s in range(n_sources):
            have = np.isfinite(scores[:, s, :]).all(axis=0)
            cols = scores[:, s, have]
            if cols.shape[1] < 2:
                continue
            signs = np.sign(cols[:, :, None] - cols[:, None, :])  # (M, K, K)
            upper = np.triu_indices(cols.shape[1], k=1)
            flat = signs[:, upper[0], upper[1]]
            disagree = [np.mean(flat[a] * flat[b] < 0) for a in range(n_metrics) for b in range(a + 1, n_metrics)]
            out[s] = float(np.mean(disagree))
        return out


class ItemVariance(SourcePriority):
    """Sources whose outputs the metrics score most differently first: the mean over metrics of the
    variance of the (standardised) metric scores across systems (subset2evaluate's "metric variance"),
    raised to ``power``."""

    name = "item_variance"

    def __init__(self, *, power: float = 1.0, learn: float = 0.0) -> None:
        self.power = power
        self.learn = learn

    def priorities(self, study: Study) -> FloatArray:
        assert study.metric_scores is not None
        return metric_variance_priority(study.metric_scores, power=self.power)

    def choose(self, state: Revealed) -> Screen | None:
        if self.learn > 0:
            # once a source has revealed ratings, its observed spread across systems takes over (scaled to
            # the prior's units over the sources seen), weighted by ``learn`` per screen shown
            out = state.output_means()
            seen = np.isfinite(out).sum(axis=1) >= 2
            if seen.any():
                with np.errstate(all="ignore"):
                    observed = np.nanvar(out[seen], axis=1) ** self.power
                prior = self.priority[seen]
                scale = float(np.mean(prior) / np.mean(observed)) if np.mean(observed) > 0 else 1.0
                n = state.used.sum(axis=1)[seen] * self.learn
                blended = (prior + n * observed * scale) / (1 + n)
                saved = self.priority.copy()
                self.priority = saved.copy()
                self.priority[seen] = blended
                screen = super().choose(state)
                self.priority = saved
                return screen
        return super().choose(state)



class Adaptive(ItemVariance):
    """The recommended policy, chosen on SimpEval_past (``experiments/allocation_experiment.py``): whole
    screens; every source is shown once before any is shown twice, and sources whose outputs the automatic
    metrics score most differently get their next screen sooner (``metric variance / (1 + screens
    shown)``). Sources whose outputs hardly differ carry little of the ranking and can wait. Without
    metric scores it is round-robin by source. Showing fewer outputs per screen (elimination, uncertainty,
    the bootstrap or finite-population gain) measured no better on SimpEval_past."""

    name = "adaptive"

    def __init__(self, *, power: float = 1.0, focus_after: float | None = None, focus: int = MIN_SCREEN) -> None:
        super().__init__(power=power)
        self.focus_after = focus_after
        self.focus = focus

    def choose(self, state: Revealed) -> Screen | None:
        screen = super().choose(state)
        if screen is None or self.focus_after is None or state.cost < self.focus_after * self.study.full_ratings:
            return screen
        means = state.system_means()
        leaders = np.argsort(-np.where(np.isfinite(means), means, -np.inf), kind="stable")[: self.focus]
        source = self.least_covered_source(state, tuple(int(i) for i in leaders))
        if source is None:
            return None
        slot = self.random_slot(state, source)
        shown = tuple(sorted(int(k) for k in leaders if self.study.present[source, slot, k]))
        return Screen(source, slot, shown or self.all_systems(source, slot))

    def start(self, study: Study, rng: np.random.Generator) -> None:
        if study.metric_scores is None or study.metric_scores.shape[0] < 1:
            Policy.start(self, study, rng)
            self.priority = np.ones(study.shape[0])
            return
        super().start(study, rng)


def bootstrap_means(state: Revealed, weights: FloatArray) -> FloatArray:
    """``(B, K)`` system means in each bootstrap resample of sources (``weights``: draw counts per source);
    a system unobserved in a resample gets its overall revealed mean."""
    output_means = state.output_means()
    has = np.isfinite(output_means).astype(np.float64)
    total = np.where(has > 0, output_means, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (weights @ total) / (weights @ has)
    overall = np.nan_to_num(state.system_means(), nan=0.0)
    return np.where(np.isfinite(boot), boot, overall[None, :])


def order_probabilities(state: Revealed, weights: FloatArray) -> FloatArray:
    """``P[i, j]``: the share of bootstrap resamples in which system i's mean is above j's (ties count
    half; 0.5 for a system never revealed)."""
    boot = bootstrap_means(state, weights)
    diff = boot[:, :, None] - boot[:, None, :]
    above = (diff > 0).mean(axis=0) + 0.5 * (diff == 0).mean(axis=0)
    unseen = ~np.isfinite(state.system_means())
    above[unseen, :] = 0.5
    above[:, unseen] = 0.5
    return np.asarray(above, dtype=np.float64)


class _Bootstrapped(Policy):
    """Shared by the policies that read how settled the order is: whole round-robin screens for a burn-in,
    then a small bootstrap of sources (the same ``n_boot`` resamples throughout) after every screen."""

    def __init__(
        self, *, burn_in: float = 0.04, n_boot: int = 100, settled: float = 0.02, metric_sources: float = 0.0
    ) -> None:
        self.burn_in = burn_in
        self.n_boot = n_boot
        self.settled = settled
        self.metric_sources = metric_sources

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        n_sources = study.shape[0]
        self.weights = rng.multinomial(n_sources, np.full(n_sources, 1.0 / n_sources), size=self.n_boot).astype(
            np.float64
        )
        self.source_order: Policy = RoundRobin()
        if self.metric_sources > 0 and study.metric_scores is not None:
            self.source_order = ItemVariance(power=self.metric_sources)
        self.source_order.start(study, rng)
        self.round_robin = self.source_order

    def in_burn_in(self, state: Revealed) -> bool:
        return state.cost < self.burn_in * self.study.full_ratings

    def flip(self, state: Revealed) -> tuple[FloatArray, FloatArray]:
        """System means and ``U[i, j] = min(P[i>j], P[j>i])``: how likely the pair's order still flips."""
        above = order_probabilities(state, self.weights)
        means = state.system_means()
        flip = np.minimum(above, 1.0 - above)
        np.fill_diagonal(flip, 0.0)
        return means, flip

    def screen_for(self, state: Revealed, systems: tuple[int, ...]) -> Screen | None:
        if isinstance(self.source_order, SourcePriority):
            whole = self.source_order.choose(state)
            source = None if whole is None else whole.source
        else:
            source = self.least_covered_source(state, systems)
        if source is None:
            return None
        slot = self.random_slot(state, source)
        shown = tuple(k for k in systems if self.study.present[source, slot, k])
        if not shown:
            shown = self.all_systems(source, slot)
        return Screen(source, slot, shown)


def pad_screen(active: list[int], means: FloatArray, size: int) -> tuple[int, ...]:
    """``active`` plus the systems nearest in mean to any of them, up to ``size``."""
    k = len(means)
    if len(active) >= size or len(active) >= k:
        return tuple(sorted(active))
    chosen = list(active)
    finite = np.where(np.isfinite(means), means, 0.0)
    rest = [j for j in range(k) if j not in chosen]
    gap = np.array([min(abs(finite[j] - finite[i]) for i in chosen) for j in rest]) if chosen else np.zeros(len(rest))
    for index in np.argsort(gap, kind="stable")[: size - len(chosen)]:
        chosen.append(rest[int(index)])
    return tuple(sorted(chosen))


class Uncertainty(_Bootstrapped):
    """Screens of the systems whose order is least settled: each system's weight is the summed flip
    probability of its pairs; the screen shows every system above ``settled`` of it (at least
    :data:`MIN_SCREEN`, the heaviest first), on the source where they have the fewest ratings."""

    name = "uncertainty"

    def choose(self, state: Revealed) -> Screen | None:
        if self.in_burn_in(state):
            return self.round_robin.choose(state)
        _, flip = self.flip(state)
        weight = flip.sum(axis=1)
        order = np.argsort(-weight, kind="stable")
        active = [int(i) for i in order if weight[i] > self.settled]
        if len(active) < MIN_SCREEN:
            active = [int(i) for i in order[:MIN_SCREEN]]
        return self.screen_for(state, tuple(sorted(active)))


class Elimination(_Bootstrapped):
    """Successive elimination: a system leaves the screens for good once every pair it is in is settled
    (flip probability at most ``settled``); screens show the systems left, padded with their nearest
    neighbours to :data:`MIN_SCREEN`; the policy stops when every system is settled."""

    name = "elimination"

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        self.active: BoolArray = np.ones(study.shape[2], dtype=bool)

    def choose(self, state: Revealed) -> Screen | None:
        if self.in_burn_in(state):
            return self.round_robin.choose(state)
        means, flip = self.flip(state)
        self.active &= (flip > self.settled).any(axis=1)
        active = [int(i) for i in np.flatnonzero(self.active)]
        if not active:
            return None
        return self.screen_for(state, pad_screen(active, means, MIN_SCREEN))


class BootstrapGain(_Bootstrapped):
    """Rate next the systems where one more rating most lowers the chance that a
    pair of systems ends up in the wrong order.

    For each pair the bootstrap of sources gives the revealed gap ``d`` and its spread ``sd``; with
    ``t = |d| / sd`` the pair's chance of being misordered is about ``Phi(-t)``, and one more rating of
    system i lowers it by about ``phi(t) * t / n_i`` (``n_i``: ratings of i so far): nothing for pairs far
    apart (settled) and nothing for near-ties (no affordable number of ratings orders them), most for pairs
    about one spread apart. Pairs with the current leader weigh ``top_weight`` times more (the top system
    is what a study is most often read for). A screen shows every system whose gain is at least ``share``
    of the largest (at least :data:`MIN_SCREEN`), on the source where they have the fewest ratings.
    """

    name = "bootstrap_gain"

    def __init__(
        self,
        *,
        burn_in: float = 0.04,
        n_boot: int = 100,
        share: float = 0.3,
        top_weight: float = 3.0,
        always_top: int = 0,
        metric_sources: float = 0.0,
    ) -> None:
        super().__init__(burn_in=burn_in, n_boot=n_boot, metric_sources=metric_sources)
        self.share = share
        self.top_weight = top_weight
        self.always_top = always_top

    def gains(self, state: Revealed) -> FloatArray:
        boot = bootstrap_means(state, self.weights)
        means = state.system_means()
        gap = np.abs(means[:, None] - means[None, :])
        spread = (boot[:, :, None] - boot[:, None, :]).std(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(spread > 0, gap / spread, 0.0)
        value = np.exp(-0.5 * t**2) * t
        np.fill_diagonal(value, 0.0)
        leader = int(np.argmax(np.where(np.isfinite(means), means, -np.inf)))
        value[leader, :] *= self.top_weight
        value[:, leader] *= self.top_weight
        ratings = state.mask.sum(axis=(0, 1)).astype(np.float64)
        gain = np.nan_to_num(value.sum(axis=1)) / np.maximum(ratings, 1.0)
        gain[~np.isfinite(means)] = np.inf  # a system never rated comes first
        return np.asarray(gain, dtype=np.float64)

    def choose(self, state: Revealed) -> Screen | None:
        if self.in_burn_in(state):
            return self.round_robin.choose(state)
        gain = self.gains(state)
        order = np.argsort(-gain, kind="stable")
        top = gain[order[0]]
        chosen = [int(i) for i in order if gain[i] >= self.share * top] if np.isfinite(top) else []
        if self.always_top:
            means = state.system_means()
            leaders = np.argsort(-np.where(np.isfinite(means), means, -np.inf), kind="stable")[: self.always_top]
            chosen = list(dict.fromkeys([int(i) for i in leaders] + chosen))
        if len(chosen) < MIN_SCREEN:
            chosen = list(dict.fromkeys(chosen + [int(i) for i in order]))[:MIN_SCREEN]
        return self.screen_for(state, tuple(sorted(chosen)))


class FinitePopulation(Policy):
    """Adaptive allocation against the full data of *this* study (a finite population).

    The target is the ranking the full ratings would give, so what is uncertain about a pair of systems is
    (a) the sources whose outputs have no revealed rating yet (between-output spread, shrinking to nothing
    as coverage nears every source: a finite-population correction a bootstrap of sources lacks) and (b)
    the rater noise of the slots not yet revealed on covered outputs. With ``t = |gap| / sd`` the pair is
    misordered with probability about ``Phi(-t)``. A pair that one rating of every output would still not
    order (``|gap|`` under ``hopeless`` of that pass's spread) is a near-tie and is given up. A system
    stays on the screens while its pairs' summed misorder probability (pairs with the leader weighing
    ``top_weight``) exceeds ``active``; screens show the active systems (at least :data:`MIN_SCREEN`, the
    most uncertain first), on the source where they have the fewest ratings, so every output is rated once
    before any is rated twice.
    """

    name = "finite_population"

    def __init__(self, *, burn_in: float = 0.03, active: float = 0.05, top_weight: float = 3.0,
                 hopeless: float = 1.0) -> None:
        self.burn_in = burn_in
        self.active = active
        self.top_weight = top_weight
        self.hopeless = hopeless

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        self.round_robin = RoundRobin()
        self.round_robin.start(study, rng)
        self.slots = study.present.sum(axis=1).astype(np.float64)  # (S, K) ratings each output has

    def misorder(self, state: Revealed) -> tuple[FloatArray, FloatArray]:
        """System means and ``Q[i, j]``, the chance that the revealed order of i and j differs from the
        full data's (0 for pairs given up as near-ties)."""
        n_sources = self.study.shape[0]
        out = state.output_means()
        has = np.isfinite(out)
        counts = state.counts().astype(np.float64)
        z = self.study.zscores(state.mask)
        rated = np.isfinite(z)
        deviation = np.where(rated, z - np.where(has, out, 0.0)[:, None, :], 0.0)
        dof = float(np.maximum(counts - 1, 0).sum())
        means = state.system_means()
        joint = has[:, :, None] & has[:, None, :]
        c = joint.sum(axis=0).astype(np.float64)
        diff = np.where(joint, np.nan_to_num(out)[:, :, None] - np.nan_to_num(out)[:, None, :], 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            centre = diff.sum(axis=0) / c
            spread = np.where(joint, (diff - centre[None]) ** 2, 0.0).sum(axis=0) / (c - 1)
            noise = float((deviation**2).sum() / dof) if dof > 0 else float(np.nanmean(spread)) / 2
            left = np.where(has, 1.0 / np.maximum(counts, 1) - 1.0 / np.maximum(self.slots, 1), 0.0)
            rater_part = noise * (left.T @ has + has.T @ left) / c**2
            cover_part = (1 - c / n_sources) * spread / c
            sd = np.sqrt(np.maximum(cover_part, 0) + np.maximum(rater_part, 0))
            gap = np.abs(means[:, None] - means[None, :])
            t = np.where(sd > 0, gap / sd, np.inf)
            near_tie = gap < self.hopeless * np.sqrt(spread / n_sources)
        flip = ndtr(-np.nan_to_num(t, nan=0.0, posinf=50.0))
        flip = np.where(c < 2, 0.5, np.where(near_tie, 0.0, flip))
        np.fill_diagonal(flip, 0.0)
        leader = int(np.argmax(np.where(np.isfinite(means), means, -np.inf)))
        flip[leader, :] *= self.top_weight
        flip[:, leader] *= self.top_weight
        return means, flip

    def choose(self, state: Revealed) -> Screen | None:
        if state.cost < self.burn_in * self.study.full_ratings:
            return self.round_robin.choose(state)
        _, flip = self.misorder(state)
        weight = flip.sum(axis=1)
        order = np.argsort(-weight, kind="stable")
        chosen = [int(i) for i in order if weight[i] > self.active]
        if len(chosen) < MIN_SCREEN:
            chosen = [int(i) for i in order[:MIN_SCREEN]]
        source = self.least_covered_source(state, tuple(chosen))
        if source is None:
            return None
        slot = self.random_slot(state, source)
        shown = tuple(sorted(k for k in chosen if self.study.present[source, slot, k]))
        return Screen(source, slot, shown or self.all_systems(source, slot))


class MixedObjective(Policy):
    """Issue 45's mixed objective: rate next the systems whose next ratings most lower the expected
    number of discordant pairs plus ``top_weight`` times the expected misorders of the leader.

    Each system's revealed mean is modelled against the full data's (a finite population): with ``n``
    ratings spread over the sources, below one per output the error is rater noise ``0.8 sr^2 / n`` plus
    the pair's coverage error ``(1 - n/S) sb^2 / n`` (``sb^2``: the spread over sources of the pair's
    output-mean differences); above it, rater noise on the ``5 - m`` slots not yet revealed
    (``sr^2 (1/m - 1/R) / S``). A pair ``gap`` apart is misordered with probability ``Phi(-gap / sd)``.
    After a burn-in of metric-ordered whole screens, a screen shows every system whose gain (per rating)
    is at least ``share`` of the largest (at least :data:`MIN_SCREEN`), on the source with the highest
    ``metric variance / (1 + their mean ratings there)``.
    """

    name = "mixed_objective"

    def __init__(self, *, top_weight: float = 5.0, share: float = 0.5, burn_in: float = 0.05) -> None:
        self.top_weight = top_weight
        self.share = share
        self.burn_in = burn_in

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        self.order = ItemVariance()
        self.order.start(study, rng)

    def estimates(self, state: Revealed) -> tuple[FloatArray, FloatArray, FloatArray]:
        """System means, rater variance per system and ``sb^2`` per pair, from the revealed ratings."""
        z = self.study.zscores(state.mask)
        rated = np.isfinite(z)
        count = rated.sum(axis=1)
        out = state.output_means()
        deviation = np.where(rated, z - np.where(np.isfinite(out), out, 0.0)[:, None, :], 0.0)
        dof = float(np.maximum(count - 1, 0).sum())
        pooled = float((deviation**2).sum() / dof) if dof > 20 else RATER_VARIANCE
        rater = np.full(self.study.shape[2], pooled)
        with np.errstate(all="ignore"):
            diff = out[:, :, None] - out[:, None, :]
            has = np.isfinite(diff)
            n = has.sum(axis=0)
            centre = np.where(has, diff, 0.0).sum(axis=0) / n
            spread = np.where(has, (diff - centre) ** 2, 0.0).sum(axis=0) / (n - 1)
        spread = np.where(n >= 3, spread, 1.0)
        return state.system_means(), rater, np.nan_to_num(spread, nan=1.0)

    def objective(self, means: FloatArray, rater: FloatArray, spread: FloatArray, n: FloatArray) -> float:
        n_sources, n_slots, _ = self.study.shape
        n = np.maximum(n, 1.0)
        m = n / n_sources
        var = np.where(n <= n_sources, rater * (1 - 1 / n_slots) / n,
                       rater * np.maximum(1 / m - 1 / n_slots, 0.0) / n_sources)
        least = np.minimum(n[:, None], n[None, :])
        cover = (1 - np.minimum(least / n_sources, 1.0)) * spread / least
        sd = np.sqrt(var[:, None] + var[None, :] + cover)
        finite = np.where(np.isfinite(means), means, 0.0)
        gap = np.abs(finite[:, None] - finite[None, :])
        with np.errstate(all="ignore"):
            p = ndtr(-np.where(sd > 0, gap / sd, 50.0))
        np.fill_diagonal(p, 0.0)
        leader = int(np.argmax(np.where(np.isfinite(means), means, -np.inf)))
        return float(p.sum() / 2 + self.top_weight * p[leader].sum())

    def gains(self, state: Revealed) -> FloatArray:
        """Per system: how much the objective drops per rating for ten more of its ratings."""
        means, rater, spread = self.estimates(state)
        n = state.mask.sum(axis=(0, 1)).astype(np.float64)
        base = self.objective(means, rater, spread, n)
        step = 10.0
        out = np.empty(len(n))
        for k in range(len(n)):
            more = n.copy()
            more[k] += step
            out[k] = (base - self.objective(means, rater, spread, more)) / step
        return out

    def choose(self, state: Revealed) -> Screen | None:
        if state.cost < self.burn_in * self.study.full_ratings:
            return self.order.choose(state)
        open_sources = state.open_screens().any(axis=1)
        if not open_sources.any():
            return None
        gain = self.gains(state)
        order = np.argsort(-gain, kind="stable")
        chosen = [int(k) for k in order if gain[k] >= self.share * gain[order[0]]]
        if len(chosen) < MIN_SCREEN:
            chosen = [int(k) for k in order[:MIN_SCREEN]]
        load = state.counts()[:, chosen].mean(axis=1)
        score = np.where(open_sources, self.order.priority / (1.0 + load), -np.inf)
        source = int(np.argmax(score + self.rng.random(score.shape) * 1e-12))
        slot = self.random_slot(state, source)
        shown = tuple(sorted(k for k in chosen if self.study.present[source, slot, k]))
        return Screen(source, slot, shown or self.all_systems(source, slot))


class OracleBound(MixedObjective):
    """Not a policy a campaign can run: :class:`MixedObjective` told the full data's system means, rater
    variance and pair spreads (and with ``top_weight`` 0 by default: the discordant pairs alone). It
    bounds what allocating ratings among systems can gain over the metric order of the sources."""

    name = "oracle_bound"

    def __init__(self, *, top_weight: float = 0.0, share: float = 0.5, burn_in: float = 0.05) -> None:
        super().__init__(top_weight=top_weight, share=share, burn_in=burn_in)

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        full = Revealed(study)
        full.mask[:] = study.present
        self.full = MixedObjective.estimates(self, full)

    def estimates(self, state: Revealed) -> tuple[FloatArray, FloatArray, FloatArray]:
        return self.full


class LeaderShare(ItemVariance):
    """``item_variance``'s whole screens (ordered by whole screens shown), plus screens of the current
    top :data:`MIN_SCREEN` systems on another slot of sources already covered, whenever those have had
    less than ``share`` of the ratings (after ``burn_in``): the top-1 criterion's extra ratings."""

    name = "leader_share"

    def __init__(self, *, share: float = 0.05, burn_in: float = 0.05) -> None:
        super().__init__()
        self.share = share
        self.burn_in = burn_in

    def start(self, study: Study, rng: np.random.Generator) -> None:
        super().start(study, rng)
        self.spent = 0
        self.whole = np.zeros(study.shape[0])

    def choose(self, state: Revealed) -> Screen | None:
        open_sources = state.open_screens().any(axis=1)
        if not open_sources.any():
            return None
        if state.cost >= self.burn_in * self.study.full_ratings and self.spent < self.share * state.cost:
            means = state.system_means()
            ranked = np.argsort(-np.where(np.isfinite(means), means, -np.inf), kind="stable")
            leaders = [int(k) for k in ranked[:MIN_SCREEN]]
            covered = open_sources & (self.whole > 0)
            if covered.any():
                load = state.counts()[:, leaders].sum(axis=1).astype(np.float64)
                score = np.where(covered, self.priority / (1.0 + load), -np.inf)
                source = int(np.argmax(score + self.rng.random(score.shape) * 1e-12))
                slot = self.random_slot(state, source)
                shown = tuple(sorted(k for k in leaders if self.study.present[source, slot, k]))
                if shown:
                    screen = Screen(source, slot, shown)
                    self.spent += state.screen_cost(screen)
                    return screen
        score = np.where(open_sources, self.priority / (1.0 + self.whole), -np.inf)
        source = int(np.argmax(score + self.rng.random(score.shape) * 1e-12))
        self.whole[source] += 1
        slot = self.random_slot(state, source)
        return Screen(source, slot, self.all_systems(source, slot))


POLICIES: dict[str, Callable[[], Policy]] = {
    "uniform": Uniform,
    "round_robin": RoundRobin,
    "metric_guided": MetricDisagreement,
    "item_variance": ItemVariance,
    "uncertainty": Uncertainty,
    "elimination": Elimination,
    "bootstrap_gain": BootstrapGain,
    "finite_population": FinitePopulation,
    "mixed_objective": MixedObjective,
    "leader_share": LeaderShare,
    "oracle_bound": OracleBound,
    "oracle_bound_top": lambda: OracleBound(top_weight=5.0),  # the bound with the leader weighed as well
    "adaptive": Adaptive,
}
# What each policy does, in a researcher's words, for the pages (the simulation form's choices; its class says how).
POLICY_DESCRIPTIONS: dict[str, str] = {
    "uniform": "today's allocation: whole screens, source and rater at random",
    "round_robin": "whole screens, every source once before any twice",
    "metric_guided": "whole screens, first the sources on which the automatic metrics disagree most about "
                     "the order of the systems (Active Evaluation)",
    "item_variance": "whole screens, first the sources whose outputs the automatic metrics score most "
                     "differently (subset2evaluate's metric variance)",
    "uncertainty": "shorter screens: the systems whose order is least settled so far",
    "elimination": "shorter screens: a system leaves once its place is settled (successive elimination)",
    "bootstrap_gain": "shorter screens: the systems where one more rating most lowers the chance of a "
                      "pair in the wrong order",
    "finite_population": "shorter screens: like bootstrap_gain, measured against this study's full data",
    "mixed_objective": "shorter screens: the systems whose ratings most lower the expected pairs in the "
                       "wrong order, the top system weighed more",
    "leader_share": "item_variance, plus extra screens of the current top systems",
    "oracle_bound": "not a policy a campaign can run: mixed_objective told the full data's answers, a bound "
                    "on what allocation can gain",
    "oracle_bound_top": "oracle_bound with the top system weighed more",
    "adaptive": "the recommended policy: item_variance's order, every source once before any twice "
                "(round-robin without metric scores)",
}

# refuse to run without metric scores
METRIC_POLICIES = frozenset(
    {"metric_guided", "item_variance", "mixed_objective", "leader_share", "oracle_bound", "oracle_bound_top"}
)
METRIC_AWARE = METRIC_POLICIES | {"adaptive"}  # read metric scores when the study has them


def make_policy(name: str) -> Policy:
    """A fresh policy by name (``POLICIES``); a clear error names the unknown one."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown allocation policy {name!r}; known: {', '.join(POLICIES)}") from None
