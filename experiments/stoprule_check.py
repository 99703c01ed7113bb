"""Adaptive allocation (issue 45): the dashboard's stop rule along simulated campaigns on a released study.

    .venv/bin/python -m experiments.stoprule_check --dataset past --seeds 5

Each policy (``uniform`` and ``adaptive``) replays the study (``evaluation.allocation.simulate``'s
policies); at 10, 20, 30 and 50% of the ratings the stop rule (``evaluation.allocation.stoprule``) runs on
what has been revealed, as the dashboard would on a live campaign. Printed per policy and share (median over
seeds): adjacent pairs settled, expected adjacent pairs the wrong way round, the model's ratings still
needed for the top system and for expected tau >= 0.95, ratings saved against uniform allocation, and
Kendall's tau with the full data (what the stop rule cannot see).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

from evaluation.allocation import Revealed, Study, make_policy
from evaluation.allocation.released import RELEASED, released_study
from evaluation.allocation.simulate import Truth, kendall_tau_b
from evaluation.allocation.stoprule import settledness

SHARES = (0.1, 0.2, 0.3, 0.5)


def revealed_study(state: Revealed) -> Study:
    """The study with only the revealed cells holding ratings."""
    study = state.study
    return replace(study, raw=np.where(state.mask, study.raw, np.nan), z=np.where(state.mask, study.z, np.nan))


def run(study: Study, policy: str, seed: int) -> list[dict[str, float]]:
    truth = Truth.of(study)
    state = Revealed(study)
    chosen = make_policy(policy)
    chosen.start(study, np.random.default_rng(seed))
    pending = list(SHARES)
    rows = []
    while pending and state.open_screens().any():
        screen = chosen.choose(state)
        if screen is None:
            break
        state.reveal(screen)
        if state.cost >= pending[0] * study.full_ratings:
            share = pending.pop(0)
            figures = settledness(revealed_study(state), seed=seed)
            rows.append({"share": share, "ratings": state.cost, "settled": figures.settled_pairs,
                         "discordant": figures.expected_discordant,
                         "top1": np.nan if figures.ratings_needed_top1 is None else figures.ratings_needed_top1,
                         "needed": np.nan if figures.ratings_needed_tau is None else figures.ratings_needed_tau,
                         "saved": figures.ratings_saved if figures.ratings_saved is not None else np.nan,
                         "tau": kendall_tau_b(state.system_means(), truth.means)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(RELEASED), default="past")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("SIMPEVAL_DATA_DIR", "../shared/data")))
    args = parser.parse_args(argv)
    if not 1 <= args.seeds <= 100:
        parser.error("--seeds must be 1..100")
    study = released_study(args.dataset, args.data_dir)
    print(f"{study.name}: {study.full_ratings} ratings; {len(study.systems) - 1} adjacent pairs")
    print("| policy | share | ratings | pairs settled | E[wrong way] | needed top-1 | needed tau 0.95 "
          "| saved vs uniform | tau |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for policy in ("uniform", "adaptive"):
        runs = [run(study, policy, seed) for seed in range(args.seeds)]
        for i, share in enumerate(SHARES):
            rows = [r[i] for r in runs if len(r) > i]
            med = {key: float(np.nanmedian([row[key] for row in rows])) for key in rows[0] if key != "share"}
            print(f"| {policy} | {share:.0%} | {med['ratings']:.0f} | {med['settled']:.0f} | {med['discordant']:.2f} | "
                  f"{med['top1']:.0f} | {med['needed']:.0f} | {med['saved']:.0f} | {med['tau']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
