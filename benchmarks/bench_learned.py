"""REFEREE and SIERA: training time per stage (small CPU settings) and scoring throughput, on the real data.

Pairs are read whole (each kind's default ``max_length``), as the product reads them.

Reads ASSET validation (the synthetic data / SIERA pairs) and SimpEval_past (REFEREE's fine-tuning) from
``SIMPEVAL_DATA_DIR`` with the pure cores only (no database), then scores SimpEval_2022 outputs with each
trained model and prints pairs per second.

    nice -n 10 .venv/bin/python benchmarks/bench_learned.py --threads 2
    python benchmarks/bench_learned.py --device cuda --sources 400 --pairs 20000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from config.datasets import simpeval_data_dir
from experiments.lens_experiment import load_2022, load_past, split_sources
from metrics.lens import DEFAULT_ENCODER
from metrics.referee import RefereeConfig, RefereeScorer
from metrics.referee import train as train_referee
from metrics.siera import SieraConfig, SieraScorer
from metrics.siera import train as train_siera


def asset_valid(data: Path, limit: int) -> list[tuple[str, str, list[str]]]:
    folder = data / "asset"
    sources = (folder / "asset.valid.orig").read_text(encoding="utf-8").splitlines()
    refs = [(folder / f"asset.valid.simp.{j}").read_text(encoding="utf-8").splitlines() for j in range(10)]
    return [(f"asset-valid/{i}", s, [r[i] for r in refs]) for i, s in enumerate(sources[:limit])]


def throughput(predict: object, pairs: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    predict(pairs)  # type: ignore[operator]
    return len(pairs) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--encoder", default=DEFAULT_ENCODER)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sources", type=int, default=20, help="ASSET validation sources for synthetic data")
    parser.add_argument("--past-sources", type=int, default=10, help="SimpEval_past sources to fine-tune on")
    parser.add_argument("--pairs", type=int, default=400, help="SIERA (source, reference) pairs")
    parser.add_argument("--score", type=int, default=256, help="SimpEval_2022 outputs to score")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = simpeval_data_dir()
    corpus = asset_valid(Path(data), max(args.sources, args.pairs // 10 + 1))
    past = load_past(data)
    chosen = {s.source_id for s in past[: 24 * args.past_sources]}
    finetune, heldout = split_sources([s for s in past if s.source_id in chosen], 0.2, 0)
    to_score = [(s.complex, s.output) for s, _ in load_2022(data)][: args.score]
    print(f"device {args.device}, {args.threads} thread(s), encoder {args.encoder}")
    with tempfile.TemporaryDirectory() as tmp:
        config = RefereeConfig(encoder=args.encoder, device=args.device, max_sources=args.sources,
                               finetune_epochs=1, trainable_layers=2)
        result = train_referee(config, corpus, finetune, heldout, out_dir=Path(tmp) / "referee")
        stages = result.heldout["stage_seconds"]
        print(f"REFEREE: {result.heldout['synthetic_outputs']} synthetic outputs from {args.sources} sources, "
              f"{len(finetune)} rated outputs")
        for stage, seconds in stages.items():
            print(f"  {stage:8s} {seconds:8.1f} s")
        scorer = RefereeScorer.load(result.best_checkpoint, device=args.device)
        print(f"  scoring: {throughput(scorer.predict, to_score):.1f} outputs/s ({len(to_score)} outputs)")

        for label, silver, silver_filter in (("Base", False, "token_f1"), ("+Silver", True, "token_f1"),
                                             ("+Silver (BERTScore filter)", True, "bertscore")):
            config_s = SieraConfig(encoder=args.encoder, device=args.device, epochs=1, max_pairs=args.pairs,
                                   silver=silver, silver_filter=silver_filter)
            started = time.perf_counter()
            result_s = train_siera(config_s, corpus, out_dir=Path(tmp) / f"siera-{label}")
            print(f"SIERA {label}: {result_s.heldout['train_pairs']} train pairs, "
                  f"1 epoch in {time.perf_counter() - started:.1f} s, pairs built included "
                  f"(validation accuracy {result_s.heldout['accuracy']:.3f})")
        siera = SieraScorer.load(result_s.best_checkpoint, device=args.device)
        print(f"  scoring (two-way, 1 seed): {throughput(siera.predict, to_score):.1f} outputs/s")


if __name__ == "__main__":
    main()
