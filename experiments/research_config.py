"""The research configuration of LENS, REFEREE or SIERA (issue 47), chosen cleanly and evaluated once.

Two steps, straight from the released files (no database), with the kinds' own training and scoring
(``metrics.learned.kinds``):

``cv``    Inside :func:`experiments.selection.selection_guard` (reading a test-set file fails): for each
          value of one ``--choice`` (e.g. ``rank_weight=0,10``), train the research configuration on each
          fold of SimpEval_past grouped by source (:func:`experiments.selection.past_source_folds`;
          checkpoint selection on a held-out share of the fold's training sources) and take the tau-like
          (all) of the fold's held-out sources. Prints each value's mean over the folds and the chosen one.
``test``  After selection: train the chosen configuration on SimpEval_past (one run per ``--seeds``) and
          evaluate it once on SimpEval_2022 (τ_para / τ_spl / τ_all, τ_all's 95% bootstrap interval over
          sources, τ_all without "Human 1 Writing", the system level: pairwise accuracy over the 15 pairs of
          the six systems and Pearson of their means; every output's score as [source id, system, score]),
          Simplicity-DA's 434 outputs on sources SimpEval_past lacks and SimpDA_2022 (Pearson per aspect).

Both print per-epoch seconds (``--max-sources`` trains on the first N SimpEval_past sources only: a timing or
a smoke run). REFEREE and SIERA read ASSET's validation set as their corpus (``--corpus-rows`` caps it).

    LENS_ENCODERS_DIR=var/encoders nice .venv/bin/python -m experiments.research_config cv --kind lens \\
        --choice rank_weight=0,10 --folds 5 --seed 0 --threads 2
    nice .venv/bin/python -m experiments.research_config test --kind lens --option rank_weight=0 --seeds 0 1 2

``--device cuda`` trains on a GPU with the research configuration's larger batches and bf16
(:func:`metrics.learned.research.on_device`). Options given with ``--option KEY=JSON`` override the research
settings (e.g. ``--option 'encoder="/path/to/tiny"'`` for a smoke run).
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from experiments import datasets
from experiments.figures import system_figures, tau_all_ci
from experiments.selection import past_source_folds, selection_guard, simplicity_da_heldout
from metrics.learned.callbacks import Callback, ProgressEvent
from metrics.learned.config import Json, LearnedConfig, options_json
from metrics.learned.kinds import TrainingInputs, get_kind
from metrics.learned.research import PROFILES, RESEARCH_PROFILE, on_device
from metrics.lens.types import Sample

KINDS = ("lens", "referee", "siera")
CHECKPOINT_HELDOUT = 0.1
"""Share of a training set's sources that selects the checkpoint (the platform's default)."""


def asset_valid_corpus(root: Path, rows: int = 0) -> list[tuple[str, str, list[str]]]:
    """ASSET validation (source id, complex, ten references): REFEREE's and SIERA's corpus (0: all rows)."""
    folder = root / "asset"
    originals = (folder / "asset.valid.orig").read_text(encoding="utf-8").rstrip("\n").split("\n")
    simps = [(folder / f"asset.valid.simp.{i}").read_text(encoding="utf-8").rstrip("\n").split("\n")
             for i in range(10)]
    corpus = [(f"asset-valid/{i}", text, [s[i] for s in simps]) for i, text in enumerate(originals)]
    return corpus[:rows] if rows else corpus


def research_config(kind: str, options: dict[str, Json], device: str,
                    profile: str = RESEARCH_PROFILE) -> LearnedConfig:
    """The kind's research configuration (or another ``profile``'s) with ``options`` over it, as a run on
    ``device`` trains it."""
    config = get_kind(kind).config({**options, "profile": profile})
    return on_device(kind, replace(config, device=device), device.split(":")[0])


class EpochClock(Callback):
    """Prints each epoch's steps, wall seconds and this process's CPU seconds (on a shared machine the CPU
    seconds divided by the threads estimate the wall time the epoch would take with the cores to itself)."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def on_progress(self, event: ProgressEvent) -> None:
        if event.kind != "epoch":
            return
        wall, cpu = time.perf_counter(), time.process_time()
        tau_all = event.heldout.tau.get("all") if event.heldout is not None else None
        print(f"  epoch {event.epoch}: {event.total_steps} steps, {wall - self.wall:.0f} s wall, "
              f"{cpu - self.cpu:.0f} s CPU, loss {event.loss:.4f}, held-out tau_all {tau_all}", flush=True)
        self.wall, self.cpu = wall, cpu


def fit(kind: str, config: LearnedConfig, train: Sequence[Sample], corpus: Sequence[tuple[str, str, list[str]]],
        out: Path) -> tuple[Any, list[float]]:
    """Train on ``train`` (a held-out share of its sources selects the checkpoint); (scorer, epoch seconds)."""
    fit_train, fit_held = datasets.split_heldout(train, CHECKPOINT_HELDOUT, config.first_seed) if train else ([], [])
    family = get_kind(kind)
    inputs = TrainingInputs(train=fit_train, heldout=fit_held, corpus=corpus if family.uses_corpora else ())
    result = family.train(config, inputs, out_dir=out, callbacks=[EpochClock()])
    seconds = [float(h["seconds"]) for h in result.history if "seconds" in h]
    return family.load(result.best_checkpoint, device=config.device), seconds


def scores(scorer: Any, samples: Sequence[Sample]) -> list[float]:
    return [value for value, _ in scorer.score(list(samples))]


def tau(samples: Sequence[Sample], values: Sequence[float]) -> dict[str, float | None]:
    from annotation.rules import TAU_THRESHOLD
    from metrics.lens.training import heldout_tau

    return heldout_tau(samples, values, TAU_THRESHOLD)


def first_sources(samples: Sequence[Sample], n: int) -> list[Sample]:
    """The samples of the first ``n`` sources (0: all)."""
    if not n:
        return list(samples)
    keep = set(sorted({s.source_id for s in samples})[:n])
    return [s for s in samples if s.source_id in keep]


def cross_validation(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    key, _, values = args.choice.partition("=")
    candidates = [options_json(v, key=key) for v in values.split(",")] if key else [None]
    report: dict[str, Any] = {"kind": args.kind, "choice": key or None, "folds": args.folds, "seed": args.seed,
                              "candidates": {}}
    with selection_guard(root) as log, tempfile.TemporaryDirectory(prefix="research-cv-") as tmp:
        past = first_sources(datasets.load_simpeval_past(root), args.max_sources)
        corpus = asset_valid_corpus(root, args.corpus_rows) if get_kind(args.kind).uses_corpora else []
        for candidate in candidates:
            options = {**args.options, "seed": args.seed, **({key: candidate} if key else {})}
            config = research_config(args.kind, options, args.device, args.profile)
            figures, seconds = [], []
            once: tuple[Any, list[float]] | None = None  # a kind that reads no ratings trains once for all folds
            for fold, (train, held) in enumerate(past_source_folds(past, args.folds, args.seed)):
                if get_kind(args.kind).needs_campaigns:
                    scorer, epoch_seconds = fit(args.kind, config, train, corpus, Path(tmp) / f"{candidate}-{fold}")
                else:
                    once = once or fit(args.kind, config, [], corpus, Path(tmp) / f"{candidate}")
                    scorer, epoch_seconds = once[0], (once[1] if fold == 0 else [])
                figures.append(tau(held, scores(scorer, held)).get("all"))
                seconds += epoch_seconds
                pace = f"{statistics.fmean(epoch_seconds):.0f} s/epoch" if epoch_seconds else "trained once"
                print(f"{key or 'research'}={candidate} fold {fold}: tau_all {figures[-1]} ({pace})", flush=True)
            defined = [f for f in figures if f is not None]
            report["candidates"][json.dumps(candidate)] = {
                "tau_all_folds": figures, "mean": statistics.fmean(defined) if defined else None,
                "sd": statistics.stdev(defined) if len(defined) > 1 else None,
                "seconds_per_epoch": statistics.fmean(seconds) if seconds else None}
        report["read"] = sorted({Path(p).name for p in log.opened})
    means = {c: r["mean"] for c, r in report["candidates"].items() if r["mean"] is not None}
    report["chosen"] = max(means, key=lambda c: means[c]) if means else None
    return report


def simpda_2022(root: Path) -> list[tuple[Sample, dict[str, float]]]:
    """SimpDA_2022's 360 outputs (mean rating per aspect) with SimpEval_2022's reference of their source."""
    folder = root / "simpeval"
    sources = (folder / "simpeval_2022_references.src").read_text(encoding="utf-8").rstrip("\n").split("\n")
    targets = (folder / "simpeval_2022_references.dst").read_text(encoding="utf-8").rstrip("\n").split("\n")
    by_letters = {datasets._letters(src): dst for src, dst in zip(sources, targets, strict=True)}

    def reference_of(text: str) -> str:
        # one source is spelt two ways in SimpDA_2022 ("also his have" / SimpEval_2022's "also having")
        found = by_letters.get(datasets._letters(text))
        if found is None:
            nearest = difflib.get_close_matches(text, sources, n=1, cutoff=0.9)
            if not nearest:
                raise ValueError(f"SimpDA_2022 source without a SimpEval_2022 reference: {text[:80]!r}")
            found = targets[sources.index(nearest[0])]
        return found

    ratings: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(folder / "simpDA_2022.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for aspect in ("adequacy", "fluency", "simplicity"):
                if row[f"Answer.{aspect}"].strip():
                    ratings[(row["Input.original"], row["Input.simplified"])][aspect].append(
                        float(row[f"Answer.{aspect}"]))
    return [(Sample(source_id=f"da22:{datasets._norm(c)}", output_id=f"da22:{i}", complex=c, output=o,
                    references=(reference_of(c),), z=0.0),
             {a: statistics.fmean(v) for a, v in by.items()}) for i, ((c, o), by) in enumerate(ratings.items())]


def evaluate_once(scorer: Any, root: Path, past: Sequence[Sample]) -> dict[str, Any]:
    from evaluation.stats.correlation import pearson

    s22 = datasets.load_simpeval_2022(root)
    samples = [s for s, _ in s22]
    values = scores(scorer, samples)
    kept = [(s, v) for (s, system), v in zip(s22, values, strict=True) if system != datasets.REFERENCE_SYSTEM]
    figures: dict[str, Any] = {"simpeval_2022": tau(samples, values),
                               "simpeval_2022_ci": tau_all_ci(samples, values),
                               "simpeval_2022_without_human1": tau([s for s, _ in kept], [v for _, v in kept]),
                               "simpeval_2022_system": system_figures(s22, values),
                               "simpeval_2022_scores": [[s.source_id, system, float(v)]
                                                        for (s, system), v in zip(s22, values, strict=True)]}
    da = simplicity_da_heldout(root, past)
    da_values = scores(scorer, [Sample(source_id=r.source_id, output_id=str(i), complex=r.complex, output=r.output,
                                       references=r.references, z=0.0) for i, r in enumerate(da)])
    figures["simplicity_da_434"] = {a: pearson(da_values, [r.z[a] for r in da]) for a in datasets.SIMPLICITY_DA_ASPECTS}
    da22 = simpda_2022(root)
    da22_values = scores(scorer, [s for s, _ in da22])
    figures["simpda_2022"] = {a: pearson(da22_values, [r.get(a, float("nan")) for _, r in da22])
                              for a in ("adequacy", "fluency", "simplicity")}
    return figures


def test(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    runs = []
    past = datasets.load_simpeval_past(root)
    datasets.check_disjoint(past, datasets.test_texts(root))
    train = first_sources(past, args.max_sources)
    corpus = asset_valid_corpus(root, args.corpus_rows) if get_kind(args.kind).uses_corpora else []
    for seed in args.seeds:
        config = research_config(args.kind, {**args.options, "seed": seed}, args.device, args.profile)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="research-test-") as tmp:
            scorer, seconds = fit(args.kind, config, train if get_kind(args.kind).needs_campaigns else [], corpus,
                                  Path(tmp))
            figures = evaluate_once(scorer, root, past)
        runs.append({"seed": seed, "train_seconds": time.perf_counter() - started, "seconds_per_epoch": seconds,
                     "config": config.to_dict(), **figures})
        print(json.dumps(runs[-1]["simpeval_2022"]), flush=True)
    tau_all = [r["simpeval_2022"].get("all") for r in runs if r["simpeval_2022"].get("all") is not None]
    return {"kind": args.kind, "profile": args.profile, "device": args.device, "device_name": device_name(args.device),
            "runs": runs,
            "tau_all_mean": statistics.fmean(tau_all) if tau_all else None,
            "tau_all_sd": statistics.stdev(tau_all) if len(tau_all) > 1 else None}


def device_name(device: str) -> str:
    """The accelerator's name for a CUDA device (e.g. "NVIDIA H200"), else the device as given."""
    if not device.startswith("cuda"):
        return device
    import torch

    return str(torch.cuda.get_device_name(torch.device(device)))


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=("cv", "test"))
    p.add_argument("--kind", choices=KINDS, required=True)
    p.add_argument("--choice", default="", help="cv: KEY=V1,V2 (JSON values) chosen by cross-validation")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0, help="cv: the seed of the folds and of each run")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="test: one run per seed")
    p.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                   help="an option over the research settings (repeatable)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--profile", choices=PROFILES, default=RESEARCH_PROFILE,
                   help="the research configuration (default) or the CPU default, e.g. to time it on a GPU")
    p.add_argument("--max-sources", type=int, default=0, help="train on the first N SimpEval_past sources (0: all)")
    p.add_argument("--corpus-rows", type=int, default=0, help="ASSET validation rows REFEREE/SIERA read (0: all)")
    p.add_argument("--threads", type=int)
    p.add_argument("--data", type=Path, help="the data folder (default SIMPEVAL_DATA_DIR)")
    p.add_argument("--out", type=Path, help="write the report as JSON here")
    args = p.parse_args(argv)
    args.options = {}
    for item in args.option:
        key, _, value = item.partition("=")
        args.options[key] = options_json(value, key=key)
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.data is None:
        from config.datasets import simpeval_data_dir

        args.data = simpeval_data_dir()
    report = cross_validation(args, args.data) if args.step == "cv" else test(args, args.data)
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
