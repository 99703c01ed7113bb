"""Replay a study under a policy and measure how fast the revealed ranking approaches the full data's.

After every screen the simulator records the cost (ratings revealed so far), Kendall's tau-b between the
revealed and the full-data system means, and whether the revealed top system is the full data's. At a few
shares of the full ratings it also records the share of the full data's significant pairs (one-sided
Mann-Whitney U on per-output means at p < 0.05, the leaderboard's cluster test) that the revealed ratings
also find significant, in the same direction.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.allocation.policies import Policy
from evaluation.allocation.study import Revealed, Study, system_means
from evaluation.stats.bootstrap import FloatArray
from evaluation.stats.leaderboard import SIGNIFICANCE, mann_whitney_greater_p

CHECKPOINTS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5)
TAU_TARGET = 0.95


def kendall_tau_b(x: FloatArray, y: FloatArray) -> float:
    """Kendall's tau-b of two score vectors (a NaN score ranks below every number, tied with other NaNs)."""
    x = np.where(np.isfinite(x), x, -np.inf)
    y = np.where(np.isfinite(y), y, -np.inf)
    with np.errstate(invalid="ignore"):
        dx = np.sign(x[:, None] - x[None, :])
        dy = np.sign(y[:, None] - y[None, :])
    dx = np.nan_to_num(dx)  # -inf - -inf: tied
    dy = np.nan_to_num(dy)
    upper = np.triu_indices(len(x), k=1)
    a, b = dx[upper], dy[upper]
    denom = np.sqrt(float(np.count_nonzero(a)) * float(np.count_nonzero(b)))
    return float(np.sum(a * b) / denom) if denom > 0 else 0.0


def top_system(means: FloatArray) -> int:
    """The best system (NaN ranks last; ties go to the lower index)."""
    return int(np.argmax(np.where(np.isfinite(means), means, -np.inf)))


def significant_pairs(output_means: FloatArray, *, alpha: float = SIGNIFICANCE) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``: system i's per-output means significantly exceed j's (one-sided Mann-Whitney U)."""
    k = output_means.shape[1]
    columns = [output_means[:, j][np.isfinite(output_means[:, j])] for j in range(k)]
    means = system_means(output_means)
    order = [j for j in np.argsort(-np.where(np.isfinite(means), means, -np.inf), kind="stable").tolist()]
    found: set[tuple[int, int]] = set()
    for a, i in enumerate(order):
        for j in order[a + 1:]:
            better, worse = columns[i], columns[j]
            if better.size == 0 or worse.size == 0 or np.ptp(np.concatenate([better, worse])) == 0:
                continue
            if mann_whitney_greater_p(better, worse) < alpha:
                found.add((i, j))
    return found


@dataclass
class Trace:
    """One seed's run: per screen the cost, tau and top-system hit; per checkpoint the pairs recovered."""

    policy: str
    seed: int
    cost: list[int] = field(default_factory=list)
    tau: list[float] = field(default_factory=list)
    top1: list[bool] = field(default_factory=list)
    pairs_recovered: dict[str, float] = field(default_factory=dict)

    def at(self, budget: float) -> int | None:
        """Index of the last screen whose cost is within ``budget`` (None: none)."""
        index = int(np.searchsorted(np.asarray(self.cost), budget, side="right")) - 1
        return index if index >= 0 else None

    def cost_to_tau(self, target: float = TAU_TARGET) -> int | None:
        """Ratings after which tau stays at or above ``target`` for the rest of the run (None: it never does)."""
        tau = np.asarray(self.tau)
        below = np.flatnonzero(tau < target)
        start = 0 if below.size == 0 else int(below[-1]) + 1
        return self.cost[start] if start < len(self.cost) else None


@dataclass(frozen=True)
class Truth:
    """The full data's system means, top system and significant pairs."""

    means: FloatArray
    top: int
    significant: frozenset[tuple[int, int]]

    @classmethod
    def of(cls, study: Study) -> Truth:
        output_means = study.output_means(study.present)
        means = system_means(output_means)
        return cls(means=means, top=top_system(means), significant=frozenset(significant_pairs(output_means)))


def simulate(
    study: Study,
    policy: Policy,
    *,
    seed: int,
    budget: int | None = None,
    truth: Truth | None = None,
    checkpoints: Sequence[float] = CHECKPOINTS,
) -> Trace:
    """Run ``policy`` on ``study`` until it stops, no screen is left, or the next screen exceeds ``budget``."""
    truth = truth or Truth.of(study)
    full = study.full_ratings
    limit = full if budget is None else min(budget, full)
    state = Revealed(study)
    rng = np.random.default_rng(seed)
    policy.start(study, rng)
    trace = Trace(policy=policy.name, seed=seed)
    pending = sorted(checkpoints)
    while state.open_screens().any():
        screen = policy.choose(state)
        if screen is None or state.cost + state.screen_cost(screen) > limit:
            break
        before = state.output_means() if pending else None
        previous_cost = state.cost
        state.reveal(screen)
        while pending and state.cost > pending[0] * full:
            # the state just before this screen is the last one within the checkpoint's budget
            share = pending.pop(0)
            if previous_cost > 0 and before is not None:
                trace.pairs_recovered[str(share)] = _recovered(before, truth)
        means = state.system_means()
        trace.cost.append(state.cost)
        trace.tau.append(kendall_tau_b(means, truth.means))
        trace.top1.append(top_system(means) == truth.top)
    for share in pending:
        if state.cost <= share * full:
            trace.pairs_recovered[str(share)] = _recovered(state.output_means(), truth)
    return trace


def _recovered(output_means: FloatArray, truth: Truth) -> float:
    if not truth.significant:
        return 1.0
    return len(significant_pairs(output_means) & truth.significant) / len(truth.significant)


def _quantile(values: Sequence[float], q: float) -> float | None:
    return float(np.quantile(np.asarray(values, dtype=np.float64), q)) if values else None


def median_interval(values: Sequence[float], *, n_boot: int = 2000, seed: int = 0) -> tuple[float, float] | None:
    """5-95% bootstrap interval of the median over seeds: how far a policy's median could move with
    another set of seeds (None for fewer than 2 values)."""
    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(data), size=(n_boot, len(data)))
    medians = np.median(data[draws], axis=1)
    return float(np.quantile(medians, 0.05)), float(np.quantile(medians, 0.95))


def summarise(study: Study, policy: str, traces: Sequence[Trace]) -> dict[str, Any]:
    """One summary row: ratings to tau >= 0.95 (median, p90, the median's 5-95% bootstrap interval over
    seeds; a seed that never stays there counts as the full ratings plus one, and ``never`` says how
    many), top-system accuracy and significant pairs recovered at each checkpoint share of the full
    ratings."""
    full = study.full_ratings
    needs = [t.cost_to_tau() for t in traces]
    never = sum(n is None for n in needs)
    filled = [float(n) if n is not None else float(full + 1) for n in needs]
    top1: dict[str, float] = {}
    recovered: dict[str, float | None] = {}
    for share in CHECKPOINTS:
        hits = []
        for trace in traces:
            index = trace.at(share * full)
            hits.append(bool(trace.top1[index]) if index is not None else False)
        top1[str(share)] = sum(hits) / len(hits) if hits else 0.0
        values = [t.pairs_recovered[str(share)] for t in traces if str(share) in t.pairs_recovered]
        recovered[str(share)] = float(np.mean(values)) if values else None
    median = _quantile(filled, 0.5)
    p90 = _quantile(filled, 0.9)
    interval = median_interval(filled)
    return {
        "dataset": study.name,
        "policy": policy,
        "seeds": len(traces),
        "full_ratings": full,
        "ratings_to_tau95": {
            "median": None if median is None or median > full else round(median, 1),
            "p90": None if p90 is None or p90 > full else round(p90, 1),
            "never": never,
            "median_90": None if interval is None or interval[1] > full else [round(v, 1) for v in interval],
        },
        "top1_accuracy": top1,
        "significant_pairs_recovered": recovered,
    }


def curves(study: Study, traces: Sequence[Trace], *, steps: int = 100, upto: float = 1.0) -> dict[str, Any]:
    """Median and 5-95% band of tau, and top-system accuracy, over seeds at ``steps`` equal shares of
    ``upto`` times the full ratings (a seed that has stopped keeps its last state)."""
    full = study.full_ratings
    grid = [round(full * upto * (i + 1) / steps) for i in range(steps)]
    tau_rows, top_rows = [], []
    for budget in grid:
        taus, tops = [], []
        for trace in traces:
            index = trace.at(budget)
            taus.append(trace.tau[index] if index is not None else np.nan)
            tops.append(float(trace.top1[index]) if index is not None else 0.0)
        tau_rows.append(taus)
        top_rows.append(tops)
    tau = np.asarray(tau_rows)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a budget before any seed's first screen: all NaN
        band = np.nanquantile(tau, [0.05, 0.5, 0.95], axis=1) if tau.size else np.zeros((3, 0))
    return {
        "cost": grid,
        "tau_median": [_clean(v) for v in band[1]],
        "tau_p05": [_clean(v) for v in band[0]],
        "tau_p95": [_clean(v) for v in band[2]],
        "top1_accuracy": [float(np.mean(row)) for row in top_rows],
    }


def _clean(value: float) -> float | None:
    return round(float(value), 5) if np.isfinite(value) else None
