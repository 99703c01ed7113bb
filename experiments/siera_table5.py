"""SIERA trained on Simplicity-DA's ratings, as the SIERA paper's Table 5 (Yamanaka & Tokunaga, 2024).

From each of the six systems of Simplicity-DA, 80 of its 100 outputs (chosen with ``--split-seed``) train and
the other 20 (120 in all) are the test set. Training pairs are labelled by the human simplicity ratings
(``metrics.siera.rated_pairs``: an output rated below the training mean counts as less simple than its
source, and outputs of one source are paired with each other); the ranker trains once per seed and the
test outputs' scores, P(output simpler than its source), are correlated with their simplicity ratings.
Prints Pearson and Spearman per seed and their mean ± sd beside the paper's (bert-base, 10 seeds), and the
same correlations for SARI, BLEU and FKGL on the same test outputs (ASSET test's ten references, matched by
source text) beside the paper's rows for them. Those rows move with the split as much as any ranker does
(over split seeds 0-5, BLEU's Pearson 0.44-0.62), so compare rankers on one split.

The paper's setting is bert-base with its top layer trained; the offline encoder of that size is
all-mpnet-base-v2 (``manage.py install_encoder mpnet``), and it reproduces the table with all 12 of its
layers trained (the embeddings stay frozen):

    .venv/bin/python -m experiments.siera_table5 --encoder all-mpnet-base-v2 --trainable-layers 12 --lr 5e-5
    .venv/bin/python -m experiments.siera_table5 --seeds 0 1 2 --epochs 3 --threads 2    # MiniLM, top layer
    .venv/bin/python -m experiments.siera_table5 --seeds          # the baselines only (seconds)
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
from scipy.stats import pearsonr, spearmanr

from config.datasets import simpeval_data_dir
from metrics.lens import DEFAULT_ENCODER
from metrics.siera import SieraConfig, SieraScorer, rated_pairs, train_on_pairs

PAPER_BASE = {"pearson": (0.623, 0.028), "spearman": (0.639, 0.018)}
PAPER_BASELINES = {"sari": (0.324, 0.293), "bleu": (0.573, 0.511), "fkgl": (0.076, 0.082)}  # Pearson, Spearman
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


def asset_test_references(root: Path) -> dict[str, tuple[str, ...]]:
    """ASSET test source -> its ten references (Simplicity-DA's sources are ASSET test sentences)."""
    folder = root / "asset"
    sources = (folder / "asset.test.orig").read_text(encoding="utf-8").splitlines()
    columns = [(folder / f"asset.test.simp.{k}").read_text(encoding="utf-8").splitlines() for k in range(10)]
    return {source.strip(): tuple(column[i] for column in columns) for i, source in enumerate(sources)}


def baselines(root: Path, test_rows: list[dict[str, str]], gold: list[float]) -> None:
    """Pearson and Spearman of SARI, BLEU and FKGL with simplicity on the test outputs, beside the paper's."""
    from metrics.suite import Item, create_metrics

    references = asset_test_references(root)
    items = [Item(complex=r["orig_sent"], output=r["simp_sent"], references=references[r["orig_sent"].strip()])
             for r in test_rows]
    for metric in create_metrics(PAPER_BASELINES):
        values = [score.value for score in metric.score_batch(items, allow_empty=True)]
        sign = 1.0 if metric.higher_is_better else -1.0  # FKGL (lower is simpler): signed so higher = simpler
        r, rho = float(pearsonr(values, gold)[0]) * sign, float(spearmanr(values, gold)[0]) * sign
        paper_r, paper_rho = PAPER_BASELINES[metric.name]
        print(f"{metric.name:8s} Pearson {r:.3f} Spearman {rho:.3f}; paper {paper_r:.3f} / {paper_rho:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default=DEFAULT_ENCODER)
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2], help="none: the baselines only")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--trainable-layers", type=int, default=SieraConfig.trainable_layers,
                        help="top encoder layers trained (the paper: 1; as many as it has: all, the embeddings frozen)")
    parser.add_argument("--lr", type=float, default=SieraConfig.lr)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = load_simplicity_da(Path(simpeval_data_dir()))
    train_rows, test_rows = split_by_system(rows, args.split_seed)
    pairs = rated_pairs([(r["sent_id"], r["orig_sent"], r["simp_sent"], float(r["simplicity"])) for r in train_rows])
    print(f"Simplicity-DA: {len(train_rows)} training outputs -> {sum(map(len, pairs.values())) // 2} pairs "
          f"(both orders: {sum(map(len, pairs.values()))}); {len(test_rows)} test outputs; encoder {args.encoder}; "
          f"{args.epochs} epochs; top {args.trainable_layers} layer(s) trained, lr {args.lr:g}; {args.threads} threads",
          flush=True)
    gold = [float(r["simplicity"]) for r in test_rows]
    baselines(Path(simpeval_data_dir()), test_rows, gold)
    if not args.seeds:
        return
    results: dict[str, list[float]] = {"pearson": [], "spearman": []}
    for seed in args.seeds:
        config = SieraConfig(encoder=args.encoder, epochs=args.epochs, seeds=(seed,), device=args.device,
                             trainable_layers=args.trainable_layers, lr=args.lr)
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
