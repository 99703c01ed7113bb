"""Adaptive allocation (issue 45): replay a released study under each policy, over seeds.

    .venv/bin/python -m experiments.allocation_experiment --dataset past --seeds 50 --out var/allocation/past

writes ``summary.json`` (one row per policy: dataset, policy, seeds, full_ratings, ratings_to_tau95
{median, p90, never, median_90: the median's 5-95% bootstrap interval over seeds}, top1_accuracy
{"0.1", "0.2", "0.3", "0.5"}, significant_pairs_recovered),
``curves.json`` (per policy: median and 5-95% band of Kendall's tau, top-system accuracy, against ratings
revealed) and ``curves.svg`` (tau and top-system accuracy against the share of the full ratings).

Datasets (from ``--data-dir``, default ``../shared/data``): ``past`` (SimpEval_past, 100 x 24 x 5 slots),
``2022`` (SimpEval_2022, 60 x 6 x 3) and ``simpda`` (SimpDA_2022's simplicity ratings, 11 named workers:
z-scores recomputed from what each has rated so far). The metric-guided policies read SARI, BLEU and FKGL
(metrics.suite; ASSET's ten references for SimpEval_past, the released "Human 1 Writing" reference for
the 2022 sets), scored once and cached in ``--cache`` (default /work/alloc-cache or var/alloc-cache).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.allocation import POLICIES, Study, Trace, Truth, curves, make_policy, simulate, summarise
from evaluation.allocation.plot import svg_plot
from evaluation.allocation.policies import METRIC_AWARE
from evaluation.allocation.released import RELEASED, released_path, released_study
from experiments.datasets import REFERENCE_SYSTEM, asset_references
from metrics.suite import Item, create_metric

DATASETS = RELEASED
METRICS = ("sari", "bleu", "fkgl")  # fkgl: lower is simpler, negated below
DEFAULT_POLICIES = tuple(POLICIES)
SEEDS_MAX = 500


def _norm(text: str) -> str:
    return " ".join(text.split())


def load_study(name: str, root: Path) -> tuple[Study, dict[tuple[str, str], Item]]:
    """The study's ratings (:func:`evaluation.allocation.released.released_study`, the product's reader)
    and, per (source, system), the item its metrics score."""
    folder = root / "simpeval"
    study = released_study(name, root)
    items: dict[tuple[str, str], Item] = {}
    if name in ("past", "2022"):
        with released_path(name, root).open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        if name == "past":
            refs = asset_references(root)
            for row in rows:
                output = row.get("processed_generation") or row["generation"]
                items[(row["original_id"].strip(), row["system"].strip())] = Item(
                    row["original"], output, refs[_norm(row["original"])])
        else:
            items = _items_2022(rows, "original_id", "original", "generation", "system")
    else:
        with (folder / "simpDA_2022.csv").open(newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.DictReader(handle) if row["Answer.simplicity"].strip()]
        items = _items_2022(rows, "Input.id", "Input.original", "Input.simplified", "Input.system")
    return study, items


def _items_2022(
    rows: Sequence[dict[str, str]], sid: str, src: str, out: str, system: str
) -> dict[tuple[str, str], Item]:
    reference = {row[sid].strip(): row[out] for row in rows if row[system].strip() == REFERENCE_SYSTEM}
    return {(row[sid].strip(), row[system].strip()): Item(row[src], row[out], (reference[row[sid].strip()],))
            for row in rows}


def metric_scores(study: Study, items: dict[tuple[str, str], Item], cache: Path) -> np.ndarray:
    """``(metric, source, system)`` scores, higher is better, cached by the study's texts."""
    keys = [(source, system) for source in study.sources for system in study.systems]
    digest = hashlib.sha256(json.dumps(
        [[*k, items[k].complex, items[k].output, list(items[k].references)] if k in items else list(k) for k in keys]
        + list(METRICS)).encode()).hexdigest()[:16]
    path = cache / f"{study.name}-{digest}.npy"
    if path.is_file():
        return np.asarray(np.load(path), dtype=np.float64)
    s, _, k = study.shape
    out = np.full((len(METRICS), s * k), np.nan)
    have = [i for i, key in enumerate(keys) if key in items and items[key].output.strip()]  # empty: no score
    for m, name in enumerate(METRICS):
        started = time.time()
        scores = create_metric(name).score_batch([items[keys[i]] for i in have])
        values = np.array([score.value for score in scores], dtype=np.float64)
        out[m, have] = -values if name == "fkgl" else values
        print(f"  {study.name}: {name} on {len(have)} outputs in {time.time() - started:.0f} s", file=sys.stderr)
    grid = out.reshape(len(METRICS), s, k)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, grid)
    return grid


def run(study: Study, policies: Sequence[str], seeds: int, budget_share: float) -> tuple[list[dict[str, Any]],
                                                                                        dict[str, Any]]:
    truth = Truth.of(study)
    budget = round(budget_share * study.full_ratings)
    rows, curve = [], {}
    for name in policies:
        started = time.time()
        traces: list[Trace] = [simulate(study, make_policy(name), seed=seed, budget=budget, truth=truth)
                               for seed in range(seeds)]
        row = summarise(study, name, traces)
        row["budget"] = budget
        rows.append(row)
        curve[name] = curves(study, traces, upto=budget_share)
        print(f"{study.name} {name}: tau95 {row['ratings_to_tau95']} top1 {row['top1_accuracy']} "
              f"({time.time() - started:.0f} s)", file=sys.stderr, flush=True)
    return rows, curve


def _table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| dataset | policy | ratings to tau>=0.95 median / p90 (never) | top-1 at 10/20/30/50% | "
             "significant pairs recovered at 10/20/30/50% |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        need = row["ratings_to_tau95"]
        top = " / ".join(f"{row['top1_accuracy'][k]:.2f}" for k in ("0.1", "0.2", "0.3", "0.5"))
        pairs = " / ".join("-" if (v := row["significant_pairs_recovered"][k]) is None else f"{v:.3f}"
                           for k in ("0.1", "0.2", "0.3", "0.5"))
        lines.append(f"| {row['dataset']} | {row['policy']} | {need['median']} / {need['p90']} ({need['never']}) | "
                     f"{top} | {pairs} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="past")
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES),
                        help=f"comma list of {', '.join(POLICIES)}")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--budget-share", type=float, default=0.6,
                        help="stop every run at this share of the full ratings (default 0.6: past every checkpoint)")
    parser.add_argument("--data-dir", type=Path, default=Path(os.environ.get("SIMPEVAL_DATA_DIR", "../shared/data")))
    parser.add_argument("--cache", type=Path,
                        default=Path("/work/alloc-cache") if Path("/work").is_dir() else Path("var/alloc-cache"))
    parser.add_argument("--out", type=Path, default=None, help="default var/allocation/<dataset>")
    args = parser.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = [p for p in policies if p not in POLICIES]
    if unknown or not policies:
        parser.error(f"--policies: unknown {unknown}; known: {', '.join(POLICIES)}")
    if not 1 <= args.seeds <= SEEDS_MAX:
        parser.error(f"--seeds must be 1..{SEEDS_MAX}")
    if not 0 < args.budget_share <= 1:
        parser.error("--budget-share must be in (0, 1]")
    study, items = load_study(args.dataset, args.data_dir)
    if METRIC_AWARE & set(policies):
        study = replace(study, metric_scores=metric_scores(study, items, args.cache), metric_names=list(METRICS))
    rows, curve = run(study, policies, args.seeds, args.budget_share)
    out = args.out or Path("var/allocation") / args.dataset
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    (out / "curves.json").write_text(json.dumps({"dataset": study.name, "full_ratings": study.full_ratings,
                                                 "policies": curve}) + "\n", encoding="utf-8")
    (out / "curves.svg").write_text(svg_plot(study.name, study.full_ratings, curve), encoding="utf-8")
    print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
