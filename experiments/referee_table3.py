"""REFEREE fine-tuned on each aspect of Simplicity-DA, as the REFEREE paper's Table 3 (Huang & Kochmar, 2024).

The paper fine-tunes REFEREE separately on adequacy, fluency and simplicity (Simplicity-DA's "meaning" is
its adequacy), splitting the sources into training, validation and test sets in a 4-1-1 ratio, and reports
the mean ± sd of Pearson's r over five runs with non-overlapping test sets. Here the 302 sources are
shuffled (``--split-seed``) into six parts; run i tests on part i, chooses the fine-tuning epoch on part
i + 1 (REFEREE's held-out loss: aspect ratings have no tau-like) and trains on the other four, as
``train_metric --kind referee --option aspect=...`` does on a campaign. The human value is each output's
released z-score on the aspect (the product's WIKI-DA rows use the same); r with the mean raw rating is
printed beside it. The suite metrics are scored on the same test parts, with ASSET test's ten references,
beside the paper's rows for them (FKGL unsigned, as there; the paper does not say which references it
used, and its folds are its own); ``--lens DIR`` adds a LENS checkpoint trained on SimpEval_past and not
fine-tuned, as the paper's LENS row.

REFEREE here is fine-tuned only (``stages=[3]``) unless ``--option`` says otherwise: the paper fine-tunes
its pre-trained model, and pre-training once per run is hours on a CPU. Each run takes ``--option`` values
as ``train_metric`` does:

    .venv/bin/python -m experiments.referee_table3 --runs 0 1 2 3 4 --threads 2          # MiniLM, 6 epochs
    .venv/bin/python -m experiments.referee_table3 --runs                                # the baselines only
    .venv/bin/python -m experiments.referee_table3 --option 'encoder="all-mpnet-base-v2"' --option encoder_lr=2e-5

Each REFEREE run's figures are appended as a JSON line to ``--log``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from evaluation.stats.correlation import pearson
from experiments.datasets import AspectRated, load_simplicity_da_aspects

ASPECTS = {"adequacy": "meaning", "fluency": "fluency", "simplicity": "simplicity"}
"""The paper's name -> Simplicity-DA's column."""
PAPER: dict[str, tuple[tuple[float, float], ...]] = {  # Table 3: r (mean ± sd) for adequacy, fluency, simplicity
    "fkgl": ((0.064, 0.164), (0.083, 0.207), (0.099, 0.117)),
    "bleu": ((0.354, 0.153), (0.317, 0.144), (0.221, 0.145)),
    "sari": ((0.258, 0.066), (0.164, 0.077), (0.180, 0.094)),
    "bertscore": ((0.569, 0.075), (0.462, 0.108), (0.362, 0.066)),
    "bertscore:precision": ((0.513, 0.095), (0.480, 0.111), (0.426, 0.074)),
    "self-bertscore": ((0.727, 0.044), (0.528, 0.083), (0.390, 0.045)),
    "self-bertscore:precision": ((0.687, 0.069), (0.566, 0.054), (0.481, 0.041)),
    "lens": ((0.636, 0.069), (0.758, 0.059), (0.732, 0.094)),
    "referee": ((0.622, 0.079), (0.478, 0.045), (0.366, 0.126)),
}
PARTS = 6


def partition(rows: Sequence[AspectRated], seed: int) -> list[set[str]]:
    """The sources in ``PARTS`` shuffled parts of (nearly) equal size."""
    sources = sorted({r.source_id for r in rows})
    random.Random(seed).shuffle(sources)
    return [set(sources[k::PARTS]) for k in range(PARTS)]


def run_split(parts: Sequence[set[str]], run: int) -> tuple[set[str], set[str], set[str]]:
    """(train, validation, test) sources of run ``run``: test part ``run``, validation the next part."""
    test, validation = parts[run], parts[(run + 1) % PARTS]
    train = set().union(*parts) - test - validation
    return train, validation, test


def correlations(values: Sequence[float], rows: Sequence[AspectRated], column: str) -> tuple[float, float]:
    """Pearson's r of ``values`` with the rows' z-scores and mean raw ratings on ``column``."""
    r_z = pearson(list(values), [row.z[column] for row in rows])
    r_raw = pearson(list(values), [row.raw[column] for row in rows])
    return float("nan") if r_z is None else r_z, float("nan") if r_raw is None else r_raw


def _cell(values: Sequence[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {sd:.3f}"


def print_row(name: str, per_aspect: dict[str, list[tuple[float, float]]], note: str = "") -> None:
    cells = [f"{_cell([z for z, _ in per_aspect[a]])} (raw {_cell([r for _, r in per_aspect[a]])})"
             if per_aspect.get(a) else "not run" for a in ASPECTS]
    paper = PAPER.get(name)
    paper_cells = "  paper " + " / ".join(f"{m:.3f} ± {s:.3f}" for m, s in paper) if paper else ""
    print(f"{name:26s} " + " | ".join(cells) + paper_cells + note, flush=True)


def baseline_rows(rows: Sequence[AspectRated], splits: Sequence[tuple[set[str], set[str], set[str]]],
                  names: Sequence[str], lens_dir: str | None) -> None:
    from metrics.suite import Item, create_metric

    items = [Item(r.complex, r.output, r.references) for r in rows]
    scored: dict[str, list[float]] = {}
    for name in names:  # each metric's own value, FKGL's too (higher = harder), as the paper's table gives them
        scored[name] = [s.value for s in create_metric(name).score_batch(items, allow_empty=True)]
    if lens_dir:
        from metrics.lens import LensScorer

        scorer = LensScorer.load(lens_dir, device="cpu", precision="fp32")
        scored["lens"] = [p.score for p in scorer.predict([(r.complex, r.output, r.references) for r in rows])]
    for name, values in scored.items():
        per_aspect: dict[str, list[tuple[float, float]]] = {a: [] for a in ASPECTS}
        for _, _, test in splits:
            chosen = [i for i, r in enumerate(rows) if r.source_id in test]
            for aspect, column in ASPECTS.items():
                per_aspect[aspect].append(correlations([values[i] for i in chosen], [rows[i] for i in chosen],
                                                       column))
        print_row(name, per_aspect)


def referee_run(rows: Sequence[AspectRated], split: tuple[set[str], set[str], set[str]], column: str,
                options: dict[str, Any], seed: int) -> dict[str, Any]:
    from metrics.lens import Sample
    from metrics.referee import RefereeConfig, RefereeScorer
    from metrics.referee import train as train_referee

    def samples(sources: set[str]) -> list[Sample]:
        return [Sample(source_id=r.source_id, output_id=r.system, complex=r.complex, output=r.output,
                       references=r.references, z=r.z[column], ratings={}) for r in rows if r.source_id in sources]

    train, validation, test = split
    config = RefereeConfig.from_dict({"stages": [3], **options, "aspect": column, "seed": seed})
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        training = samples(train)
        result = train_referee(config, [], training, samples(validation), out_dir=Path(tmp))
        scorer = RefereeScorer.load(result.best_checkpoint, device=result.device)  # where it trained
        tested = [r for r in rows if r.source_id in test]
        values = scorer.predict([(r.complex, r.output) for r in tested])
    r_z, r_raw = correlations(values, tested, column)
    return {"aspect": column, "pearson_z": r_z, "pearson_raw": r_raw, "best_epoch": result.best_epoch,
            "validation_loss": result.heldout.get("loss"), "train_seconds": time.perf_counter() - started,
            "config": config.to_dict(), "outputs": {"train": len(training), "test": len(tested)}}


def summarise(logs: Sequence[Path]) -> None:
    """The REFEREE row of each setting (encoder, learning rate, split seed) in JSON-lines logs, e.g. one per
    aspect written on several machines."""
    column_to_aspect = {column: aspect for aspect, column in ASPECTS.items()}
    groups: dict[tuple[str, float, int], dict[str, list[tuple[float, float]]]] = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            key = (str(record["config"]["encoder"]), float(record["config"]["encoder_lr"]), int(record["split_seed"]))
            per_aspect = groups.setdefault(key, {a: [] for a in ASPECTS})
            per_aspect[column_to_aspect[record["aspect"]]].append((record["pearson_z"], record["pearson_raw"]))
    for (encoder, lr, split_seed), per_aspect in sorted(groups.items()):
        runs = "/".join(str(len(per_aspect[a])) for a in ASPECTS)
        print_row("referee", per_aspect, note=f"  [{encoder}, encoder lr {lr:g}, split seed {split_seed}, {runs} runs]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="*", type=int, default=[0, 1, 2, 3, 4],
                        help="the runs (test parts) REFEREE trains for; none: the baselines only")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--aspects", nargs="+", choices=list(ASPECTS), default=list(ASPECTS),
                        help="the aspects REFEREE fine-tunes on (default: all three)")
    parser.add_argument("--seed", type=int, default=0, help="REFEREE's seed in every run")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                        help="a REFEREE option, as train_metric's --option (e.g. finetune_epochs=3)")
    parser.add_argument("--baselines", default=",".join(name for name in PAPER if name not in ("lens", "referee")),
                        help="suite metrics scored on the same test parts (comma-separated; empty: none)")
    parser.add_argument("--lens", metavar="DIR", help="a LENS checkpoint (trained on SimpEval_past) to score too")
    parser.add_argument("--data-dir", type=Path, help="the released datasets (default: SIMPEVAL_DATA_DIR's); given, "
                        "the script imports nothing of the web stack (for a machine with torch alone)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log", type=Path, default=Path("var/referee_table3.jsonl"))
    parser.add_argument("--summarise", nargs="+", type=Path, metavar="LOG",
                        help="print the REFEREE rows of these --log files (e.g. one per aspect) and stop")
    args = parser.parse_args()
    if args.summarise:
        summarise(args.summarise)
        return
    torch.set_num_threads(args.threads)
    options = {key: json.loads(value) for key, _, value in (o.partition("=") for o in args.option)}

    if args.data_dir is None:
        from config.datasets import simpeval_data_dir  # the `config` package loads Celery

        args.data_dir = simpeval_data_dir()
    rows = load_simplicity_da_aspects(args.data_dir)
    parts = partition(rows, args.split_seed)
    splits = [run_split(parts, run) for run in range(PARTS - 1)]
    print(f"Simplicity-DA: {len(rows)} outputs of {len(set().union(*parts))} sources in {PARTS} parts "
          f"(split seed {args.split_seed}); per run {[len(s[0]) for s in splits]} training sources; "
          f"r with the z-score (raw: with the mean raw rating) on adequacy | fluency | simplicity", flush=True)
    names = [n for n in args.baselines.split(",") if n.strip()]
    if names or args.lens:
        baseline_rows(rows, splits, names, args.lens)
    if not args.runs:
        return
    args.log.parent.mkdir(parents=True, exist_ok=True)
    per_aspect: dict[str, list[tuple[float, float]]] = {a: [] for a in ASPECTS}
    seconds = 0.0
    for run in args.runs:
        for aspect in args.aspects:
            column = ASPECTS[aspect]
            record = {"run": run, "split_seed": args.split_seed,
                      **referee_run(rows, splits[run], column, options, args.seed)}
            with args.log.open("a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            per_aspect[aspect].append((record["pearson_z"], record["pearson_raw"]))
            seconds += record["train_seconds"]
            print(f"  run {run} {aspect:10s} r {record['pearson_z']:.3f} (raw {record['pearson_raw']:.3f}), "
                  f"best epoch {record['best_epoch']}, {record['train_seconds']:.0f} s", flush=True)
    encoder = options.get("encoder", "MiniLM (default)")
    print_row("referee", {a: v for a, v in per_aspect.items()},
              note=f"  [{len(args.runs)} runs, {encoder}, {seconds / 60:.0f} min]")


if __name__ == "__main__":
    main()
