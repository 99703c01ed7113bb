"""SIERA trained on Simplicity-DA's ratings, as the SIERA paper's Table 5 (Yamanaka & Tokunaga, 2024).

From each of the six systems of Simplicity-DA, 80 outputs (chosen with ``--split-seed``) train and the
other 120 outputs are the test set. Training pairs are labelled by the human simplicity ratings
(``metrics.siera.rated_pairs``: an output rated below the training mean counts as less simple than its
source, and outputs of one source are paired with each other); the ranker trains once per seed and the
test outputs' scores, P(output simpler than its source), are correlated with their simplicity ratings.
Prints Pearson and Spearman per seed and their mean ± sd beside the paper's (bert-base, 10 seeds).

    .venv/bin/python benchmarks/siera_table5.py --seeds 0 1 2 --epochs 3 --threads 2
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch
from scipy.stats import pearsonr, spearmanr

from config.datasets import simpeval_data_dir
from metrics.lens import DEFAULT_ENCODER
from metrics.siera import SieraConfig, SieraScorer, rated_pairs, train_on_pairs

PAPER_BASE = {"pearson": (0.623, 0.028), "spearman": (0.639, 0.018)}
TRAIN_PER_SYSTEM = 80


def load_simplicity_da(root: Path) -> list[dict[str, str]]:
    with open(root / "simplicity_da" / "simplicity_DA.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def split_by_system(rows: list[dict[str, str]], seed: int) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``TRAIN_PER_SYSTEM`` outputs of every system to train, the rest to test (seeded)."""
    rng = random.Random(seed)
    train: list[dict[str, str]] = []
    test: list[dict[str, str]] = []
    for system in sorted({r["sys_name"] for r in rows}):
        outputs = [r for r in rows if r["sys_name"] == system]
        rng.shuffle(outputs)
        train += outputs[:TRAIN_PER_SYSTEM]
        test += outputs[TRAIN_PER_SYSTEM:]
    return train, test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default=DEFAULT_ENCODER)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = load_simplicity_da(Path(simpeval_data_dir()))
    train_rows, test_rows = split_by_system(rows, args.split_seed)
    pairs = rated_pairs([(r["sent_id"], r["orig_sent"], r["simp_sent"], float(r["simplicity"])) for r in train_rows])
    print(f"Simplicity-DA: {len(train_rows)} training outputs -> {sum(map(len, pairs.values())) // 2} pairs "
          f"(both orders: {sum(map(len, pairs.values()))}); {len(test_rows)} test outputs; encoder {args.encoder}; "
          f"{args.epochs} epochs; {args.threads} threads", flush=True)
    gold = [float(r["simplicity"]) for r in test_rows]
    results: dict[str, list[float]] = {"pearson": [], "spearman": []}
    for seed in args.seeds:
        config = SieraConfig(encoder=args.encoder, epochs=args.epochs, seeds=(seed,), device=args.device)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            result = train_on_pairs(config, pairs, out_dir=Path(tmp))
            scorer = SieraScorer.load(result.best_checkpoint, device=args.device)
            scores = scorer.predict([(r["orig_sent"], r["simp_sent"]) for r in test_rows])
        r, rho = float(pearsonr(scores, gold)[0]), float(spearmanr(scores, gold)[0])
        results["pearson"].append(r)
        results["spearman"].append(rho)
        print(f"seed {seed}: Pearson {r:.3f} Spearman {rho:.3f} (best epoch {result.best_epoch}, "
              f"validation accuracy {result.heldout['accuracy']:.3f}, {time.perf_counter() - started:.0f}s)",
              flush=True)
    for name, values in results.items():
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        paper, paper_sd = PAPER_BASE[name]
        print(f"{name:8s} {statistics.mean(values):.3f} ± {sd:.3f} over {len(values)} seed(s); "
              f"paper, Base (bert-base): {paper:.3f} ± {paper_sd:.3f}")


if __name__ == "__main__":
    main()
