"""The LENS paper's experiment with the pure package: train on SimpEval_past, test on SimpEval_2022.

Training data: ``simpeval/simpeval_past.csv`` (target = mean of the five released z-scores; references = the
ten ASSET test references of the source), ~10% of the sources held out for checkpoint selection (tau_all).
Test: ``simpeval/simpeval_2022.csv`` scored against its single reference (``simpeval_2022_references``),
Kendall tau-like per category from the raw ``rating_1..3``. The reference is the "Human 1 Writing" output,
so the main figures leave that system out (the paper uses the other human simplification as the oracle
system); figures over all six systems are printed too.

    nice -n 10 .venv/bin/python -m experiments.lens_experiment --epochs 8 --threads 1 --out var/lens_exp
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

import torch

from config.datasets import simpeval_data_dir
from evaluation.stats.correlation import TauItem, kendall_tau_like
from metrics.learned.callbacks import ProgressEvent
from metrics.lens import DEFAULT_ENCODER, LensConfig, LensScorer, Sample, TrainConfig, train

REPO = Path(__file__).resolve().parent.parent

CATEGORY = {"Splittings": "split", "Paraphrases": "paraphrase", "Deletions": "deletion"}
REFERENCE_SYSTEM = "Human 1 Writing"
PAPER = {"MiniLM": (0.143, 0.310, 0.277), "RoBERTa-large": (0.429, 0.333, 0.331)}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def load_past(root: Path) -> list[Sample]:
    originals = _lines(root / "asset" / "asset.test.orig")
    simps = [_lines(root / "asset" / f"asset.test.simp.{i}") for i in range(10)]
    line_of = {text.strip(): i for i, text in enumerate(originals)}
    samples = []
    with open(root / "simpeval" / "simpeval_past.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            line = line_of[row["original"].strip()]
            zs = [float(row[f"rating_{k}_z_score"]) for k in range(1, 6)]
            samples.append(
                Sample(
                    source_id=row["original_id"],
                    output_id=row["id"],
                    complex=row["original"],
                    output=row["processed_generation"] or row["generation"],
                    references=tuple(simp[line] for simp in simps),
                    z=sum(zs) / len(zs),
                    ratings={f"slot{k}": float(row[f"rating_{k}"]) for k in range(1, 6)},
                )
            )
    return samples


def load_2022(root: Path) -> list[tuple[Sample, str]]:
    folder = root / "simpeval"
    reference = dict(
        zip(
            (s.strip() for s in _lines(folder / "simpeval_2022_references.src")),
            _lines(folder / "simpeval_2022_references.dst"),
            strict=True,
        )
    )
    rows = []
    with open(folder / "simpeval_2022.csv", newline="", encoding="utf-8") as handle:
        for i, row in enumerate(csv.DictReader(handle)):
            sample = Sample(
                source_id=row["original_id"],
                output_id=str(i),
                complex=row["original"],
                output=row["generation"],
                references=(reference[row["original"].strip()],),
                z=0.0,
                category=CATEGORY[row["sentence_type"]],
                ratings={f"slot{k}": float(row[f"rating_{k}"]) for k in range(1, 4)},
            )
            rows.append((sample, row["system"]))
    return rows


def split_sources(samples: list[Sample], fraction: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    sources = sorted({s.source_id for s in samples}, key=int)
    random.Random(seed).shuffle(sources)
    held = set(sources[: max(1, round(fraction * len(sources)))])
    return [s for s in samples if s.source_id not in held], [s for s in samples if s.source_id in held]


def tau_table(samples: list[Sample], metric: list[float], *, unanimous: bool) -> dict[str, float | None]:
    items = [
        TauItem(s.source_id, s.output_id, s.category or "", m, s.ratings) for s, m in zip(samples, metric, strict=True)
    ]
    return kendall_tau_like(items, threshold=5.0, unanimous=unanimous).value


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--encoder", default=DEFAULT_ENCODER)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "var" / "lens_experiment")
    parser.add_argument("--device", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heldout", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--encoder-lr", type=float, default=3e-5)
    parser.add_argument("--head-lr", type=float, default=1e-5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    root = simpeval_data_dir()
    train_samples, heldout = split_sources(load_past(root), args.heldout, args.seed)
    test = load_2022(root)
    print(
        f"data {root}: train {len(train_samples)} samples / heldout {len(heldout)} "
        f"({len({s.source_id for s in heldout})} sources) / test {len(test)}",
        flush=True,
    )
    config = TrainConfig(
        model=LensConfig(encoder=args.encoder),
        k=args.k,
        epochs=args.epochs,
        batch_size=args.batch_size,
        encoder_lr=args.encoder_lr,
        head_lr=args.head_lr,
        seed=args.seed,
        device=args.device,
        progress_every=50,
    )
    started = time.perf_counter()

    def report(event: ProgressEvent) -> None:
        elapsed = time.perf_counter() - started
        line = f"[{elapsed:7.0f}s] epoch {event.epoch} step {event.step}/{event.total_steps}"
        line += f" loss {event.loss:.4f}"
        if event.heldout is not None:
            tau = event.heldout.tau.get("all")
            line += (
                f" | heldout loss {event.heldout.loss:.4f} tau_all {_fmt(tau)}"
                f" pearson {_fmt(event.heldout.pearson)}{' *best*' if event.is_best else ''}"
            )
        print(line, flush=True)

    result = train(config, train_samples, heldout, out_dir=args.out, on_progress=report)
    print(
        f"trained {len(result.history)} epochs in {result.train_seconds:.0f}s on {result.device}; "
        f"best epoch {result.best_epoch}",
        flush=True,
    )

    scorer = LensScorer.load(result.best_checkpoint, device=args.device)
    scoring_started = time.perf_counter()
    samples = [s for s, _ in test]
    predictions = scorer.predict([(s.complex, s.output, s.references) for s in samples], batch_size=32)
    scoring_seconds = time.perf_counter() - scoring_started
    metric = [p.z for p in predictions]
    systems = [system for _, system in test]
    keep = [i for i, system in enumerate(systems) if system != REFERENCE_SYSTEM]
    tables = {}
    for label, rows in (
        ("5 systems (reference system excluded)", keep),
        ("all 6 systems", list(range(len(test)))),
    ):
        for unanimous in (False, True):
            chosen = [samples[i] for i in rows]
            tables[f"{label}, {'unanimous' if unanimous else 'majority'} raters"] = tau_table(
                chosen, [metric[i] for i in rows], unanimous=unanimous
            )
    print(f"\nSimpEval_2022 ({len(samples)} outputs scored in {scoring_seconds:.1f}s), Kendall tau-like:")
    print(f"{'':58s} tau_para tau_spl  tau_all")
    for label, table in tables.items():
        print(f"{label:58s} {_fmt(table['paraphrase'])}    {_fmt(table['split'])}    {_fmt(table['all'])}")
    for name, (para, spl, tau_all) in PAPER.items():
        print(f"{'paper, LENS ' + name:58s} {para:.3f}    {spl:.3f}    {tau_all:.3f}")
    summary = {
        "args": {key: str(value) for key, value in vars(args).items()},
        "best_epoch": result.best_epoch,
        "heldout": result.heldout,
        "history": result.history,
        "train_seconds": result.train_seconds,
        "device": result.device,
        "simpeval_2022_tau": tables,
    }
    (args.out / "experiment.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
