"""Adaptive allocation (issue 45): how many ratings SimpEval_past's ranking needs, by a normal model.

    .venv/bin/python -m experiments.allocation_bound

Each system's revealed mean is modelled against the full data's: with ``n`` ratings spread over the
``S`` sources, below one rating per output its error is rater noise ``0.8 sr^2 / n`` plus the pair's
coverage error ``(1 - n/S) sb^2 / n`` (``sb^2``: the spread over sources of the pair's full output-mean
differences); with ``m = n / S`` ratings per output it is rater noise on the slots not revealed,
``sr^2 (1/m - 1/R) / S``. A pair ``gap`` apart is misordered with probability ``Phi(-gap / sd)``. The
script prints the expected discordant pairs and the chance the top system is right for ratings spread
evenly over the systems, then a greedy oracle allocation (told the full data's gaps) that adds 25
ratings at a time to the system that most lowers ``E[discordant] + weight * P(top wrong)``, until the
expected discordant pairs are at most 6.9 (median tau about 0.95) and/or P(top right) >= 0.95.
The screens' minimum size, the sources' differences and the "stays at 0.95" rule are left out, so the
oracle's counts are optimistic.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from scipy.special import ndtr

from evaluation.stats.bootstrap import FloatArray
from experiments.allocation_experiment import load_study

TARGET_DISCORDANT = 6.9  # tau-b >= 0.95 with 24 systems: at most 6 of 276 pairs the wrong way round


def main() -> int:
    study, _ = load_study("past", Path(os.environ.get("SIMPEVAL_DATA_DIR", "../shared/data")))
    z = study.z
    n_sources, n_slots, n_systems = z.shape
    output = np.nanmean(z, axis=1)
    means = output.mean(axis=0)
    rater = np.nanmean(np.nanvar(z, axis=1, ddof=1), axis=0)
    spread = (output[:, :, None] - output[:, None, :]).var(axis=0, ddof=1)
    gap = np.abs(means[:, None] - means[None, :])
    top = int(np.argmax(means))
    upper = np.triu_indices(n_systems, 1)

    def model(n: FloatArray) -> tuple[float, float]:
        n = np.maximum(n, 1e-9)
        var = np.where(n <= n_sources, rater * 0.8 / n, rater * (n_sources / n - 1 / n_slots) / n_sources)
        least = np.minimum(n[:, None], n[None, :])
        cover = (1 - np.minimum(least / n_sources, 1)) * spread / least
        p = ndtr(-gap / np.sqrt(var[:, None] + var[None, :] + cover))
        right = float(np.prod([1 - p[top, j] for j in range(n_systems) if j != top]))
        return float(p[upper].sum()), right

    for total in (1200, 1800, 1944, 2400, 3000, 3888, 4800, 6000):
        discordant, right = model(np.full(n_systems, total / n_systems))
        print(f"even {total:5d}: E[discordant] {discordant:4.1f} (tau ~ {1 - 2 * discordant / len(upper[0]):.3f}), "
              f"P(top right) {right:.2f}")

    def oracle(weight: float, tau: bool, top1: bool, step: float = 25.0) -> None:
        n = np.full(n_systems, 50.0)
        while True:
            discordant, right = model(n)
            if ((not tau or discordant <= TARGET_DISCORDANT) and (not top1 or right >= 0.95)) or n.sum() >= 12000:
                break
            best, pick = -np.inf, 0
            for k in range(n_systems):
                if n[k] + step > n_sources * n_slots:
                    continue
                more = n.copy()
                more[k] += step
                d2, r2 = model(more)
                value = (discordant - d2) + weight * (r2 - right)
                if value > best:
                    best, pick = value, k
            n[pick] += step
        wanted = " and ".join(w for w, on in (("tau", tau), ("top-1", top1)) if on)
        print(f"oracle for {wanted}: {n.sum():.0f} ratings, E[discordant] {discordant:.1f}, P(top right) {right:.2f}")

    oracle(0.0, tau=True, top1=False)
    oracle(50.0, tau=False, top1=True)
    oracle(5.0, tau=True, top1=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
