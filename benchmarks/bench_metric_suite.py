"""Timings of the metric suite on SimpEval_past (2,400 outputs, ten ASSET references each).

Usage: ``python benchmarks/bench_metric_suite.py [--metrics sari,gleu,...] [--skip-bertscore]``
(data folder from ``SIMPEVAL_DATA_DIR``, default ``../shared/data``).  For every metric: the time to
score all outputs from cold caches (tokenisation caches cleared, BERTScore's encoder loaded but no
text encoded yet), outputs per second, and the meta-evaluation time (tau-like over the 24 systems'
within-source pairs and Pearson/Spearman against the mean z-score, each with 1,000 bootstrap
resamples).  Targets: SARI, GLEU, BLEU, FKGL under 2 s; BERTScore (MiniLM, CPU) at least 200
outputs/s; meta-evaluation under 1 s per metric.  Prints figures; asserts nothing.  The machine's
cores may be shared with other jobs: run it twice and keep the better figure.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from config.datasets import simpeval_data_dir  # noqa: E402
from evaluation.stats.correlation import metric_correlation_ci  # noqa: E402
from metrics.suite import clear_caches, create_metric  # noqa: E402
from metrics.suite.datasets import load_simpeval_past  # noqa: E402
from metrics.suite.meta import tau_like, tau_pairs  # noqa: E402

DATA_DIR = simpeval_data_dir()
TARGET_SECONDS = {"sari": 2.0, "sari:lens": 2.0, "gleu": 2.0, "bleu": 2.0, "fkgl": 2.0}
BERTSCORE_TARGET = 200.0  # outputs per second
N_BOOT = 1000


def mean_z(data_dir: Path) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    with (data_dir / "simpeval" / "simpeval_past.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            zs = [float(row[f"rating_{k}_z_score"]) for k in range(1, 6) if row.get(f"rating_{k}_z_score")]
            out[(row["original_id"].strip(), row["system"].strip())] = sum(zs) / len(zs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", default="fkgl,bleu,gleu,sari,sari:lens,bertscore,self-bertscore")
    parser.add_argument("--skip-bertscore", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not (DATA_DIR / "simpeval").is_dir():
        print(f"released data not found in {DATA_DIR}")
        return
    outputs = load_simpeval_past(DATA_DIR)
    items = [o.item for o in outputs]
    z = mean_z(DATA_DIR)
    human = [z[(o.source, o.system)] for o in outputs]
    sources = [o.source for o in outputs]
    print(
        f"SimpEval_past: {len(items)} outputs, {len({o.source for o in outputs})} sources, "
        f"{sum(len(i.references) for i in items) // len(items)} references each; "
        f"{os.cpu_count()} CPU cores visible, torch threads {torch.get_num_threads()}"
    )
    start = time.perf_counter()
    pairs = tau_pairs(outputs)
    print(
        f"finding the {len(pairs.human)} human-ordered pairs (once per rating set): {time.perf_counter() - start:.3f} s"
    )
    names = [n for n in args.metrics.split(",") if n and not (args.skip_bertscore and "bertscore" in n)]
    for name in names:
        metric = create_metric(name)
        if "bertscore" in name:
            metric.matcher.clear()  # type: ignore[attr-defined]  # encoder loaded outside the timing, no text cached
        clear_caches()
        start = time.perf_counter()
        scores = [s.value for s in metric.score_batch(items, allow_empty=True)]
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        tau = tau_like(outputs, scores, n_boot=N_BOOT, pairs=pairs)
        corr = metric_correlation_ci(sources, scores, human, n_boot=N_BOOT)
        meta = time.perf_counter() - start
        target = TARGET_SECONDS.get(name)
        rate = len(items) / seconds
        verdict = ""
        if target is not None:
            verdict = "ok" if seconds < target else f"SLOWER than {target:.0f} s"
        elif "bertscore" in name:
            verdict = "ok" if rate >= BERTSCORE_TARGET else f"BELOW {BERTSCORE_TARGET:.0f}/s"
        print(
            f"  {name:<16s} score {seconds:7.3f} s  {rate:9.0f} outputs/s  {verdict:<18s}"
            f" meta-eval {meta:6.3f} s ({'ok' if meta < 1 else 'SLOW'})  "
            f"tau_all {tau['all']['value']:+.3f}  pearson(z) {corr['pearson']['value']:+.3f}"
        )
        print(f"  {'':<16s} {metric.signature}")


if __name__ == "__main__":
    main()
