"""SIERA's seeds at the paper's settings on another machine: train_metric's inputs out, scores back in.

At the paper's settings (20,000 pairs, 10 epochs, batch 16) one SIERA seed takes about 2 hours on 2 CPU
cores for Base and three times that for +Silver. A GPU machine often has torch and transformers but not the
web stack or the database, so this splits the product's run (`train_metric --kind siera --seed S`, then
`meta_evaluate --metric siera:<id>` on each test campaign) in three:

    # 1. here, on the database holding the campaigns: the corpus rows train_metric trains on and the test
    #    campaigns' (complex, output) pairs
    .venv/bin/python -m experiments.siera_seeds export --out /tmp/siera-inputs.json
    # 2. on the GPU machine (pure cores only: torch and transformers); one job per seed, each one model as
    #    `train_metric --kind siera --seed S` trains; --option as train_metric's (e.g. silver=true);
    #    --deadline S ends each job's training after the epoch that would run past S seconds, keeping its best
    python -m experiments.siera_seeds train --inputs /tmp/siera-inputs.json --out results 0 1 2
    # 3. here again: the scores through the meta-evaluation core, as meta_evaluate computes them
    .venv/bin/python -m experiments.siera_seeds evaluate 'results/siera_*.json'

`export` reads the corpus `asset-valid` and the campaigns `s22`, `wiki-da` and `simpda-2022` (the names of
the README's reference database). `evaluate` prints, per run, SimpEval_2022's tau-like (all six systems and
without "Human 1 Writing"), and Pearson and Spearman with the simplicity z-scores of WIKI-DA (Simplicity-DA,
all 600 outputs) and SimpDA_2022; then, for the runs of each setting (Base, +Silver and its filter), the mean
and sd of every column beside the SIERA paper's Table 1.
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path
from typing import Any

from experiments.referee_seeds import TEST_CAMPAIGNS, score_tests, setup_django, summarise
from metrics.learned.callbacks import Callback, ProgressEvent

# The SIERA paper's Table 1 (simplicity r and rho on Simplicity-DA and SimpDA_2022, mean and sd over ten seeds)
PAPER: dict[str, dict[str, tuple[float, float]]] = {
    "base": {"wiki r": (0.029, 0.015), "wiki rho": (0.016, 0.011),
             "simpda r": (0.394, 0.025), "simpda rho": (0.387, 0.018)},
    "silver": {"wiki r": (0.049, 0.017), "wiki rho": (0.027, 0.016),
               "simpda r": (0.366, 0.026), "simpda rho": (0.401, 0.028)},
}
COLUMNS = ("all", "w/o H1", "wiki r", "wiki rho", "simpda r", "simpda rho")


class Deadline(Callback):
    """Ends training (normally, keeping the best epoch) once another epoch would run past ``seconds`` from
    the job's start, judged by the longest epoch so far (timed from its first steps, so building the pairs
    does not count as an epoch); prints each epoch's validation figures."""

    def __init__(self, seconds: float | None, label: str) -> None:
        self.seconds = seconds
        self.label = label
        self.started = self.last = time.perf_counter()
        self.longest = 0.0
        self.stopped_early = False

    def on_progress(self, event: ProgressEvent) -> None:
        now = time.perf_counter()
        if event.kind == "step" and self.last == self.started:
            self.last = now  # the first epoch's clock starts with its steps
        if event.kind != "epoch":
            return
        self.longest, self.last = max(self.longest, now - self.last), now
        loss = event.heldout.loss if event.heldout else None
        print(f"  {self.label}: epoch {event.epoch}, train loss {event.loss:.4f}, validation loss {loss:.4f}, "
              f"{now - self.started:.0f} s", flush=True)

    def should_stop(self) -> bool:
        if self.seconds is None:
            return False
        if time.perf_counter() - self.started + self.longest > self.seconds:
            self.stopped_early = True
        return self.stopped_early


def export(out: Path, corpus: str) -> None:
    setup_django()
    from annotation.models import Campaign
    from metrics.services.learned import corpus_training_rows
    from metrics.services.metric_scores import campaign_metric_items

    rows, _ = corpus_training_rows([corpus])
    tests = {slug: [[pk, item.complex, item.output]
                    for pk, item in campaign_metric_items(Campaign.objects.get(slug=slug))]
             for slug in TEST_CAMPAIGNS}
    out.write_text(json.dumps({"corpus": corpus, "rows": rows, "tests": tests}))
    print(f"{out}: {len(rows)} corpus sources, test pairs {({k: len(v) for k, v in tests.items()})}")


def train(inputs: Path, out: Path, seeds: list[int], device: str | None, options: dict[str, Any],
          deadline: float | None) -> None:
    import torch

    from metrics.siera import SieraConfig, SieraScorer
    from metrics.siera import train as train_siera

    doc = json.loads(inputs.read_text())
    out.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        config = SieraConfig.from_dict({**options, "seeds": [seed], "device": device})
        label = f"seed {seed}{' +silver (' + config.silver_filter + ')' if config.silver else ''}"
        clock = Deadline(deadline, label)
        result = train_siera(config, doc["rows"], out_dir=out / f"ckpt_{_tag(config, seed)}", callbacks=[clock])
        where = torch.cuda.get_device_name(0) if result.device.startswith("cuda") else result.device
        scorer = SieraScorer.load(result.best_checkpoint, device=result.device)  # scored where it trained
        scores = score_tests(scorer.predict, doc["tests"])
        record = {"seed": seed, "setting": _setting(config), "train_seconds": result.train_seconds,
                  "heldout": result.heldout, "best_epoch": result.best_epoch, "history": result.history,
                  "epochs_run": len(result.history), "stopped_by_deadline": clock.stopped_early,
                  "config": config.to_dict(), "device": where, "torch": torch.__version__, "scores": scores}
        (out / f"siera_{_tag(config, seed)}.json").write_text(json.dumps(record, default=str))
        print(f"{label}: {result.train_seconds:.0f} s on {where}, {result.heldout['train_pairs']} training pairs, "
              f"best epoch {result.best_epoch} of {len(result.history)}"
              f"{' (deadline)' if clock.stopped_early else ''}, validation accuracy "
              f"{result.heldout['accuracy']:.3f}", flush=True)


def _setting(config: Any) -> str:
    return f"silver-{config.silver_filter}" if config.silver else "base"


def _tag(config: Any, seed: int) -> str:
    return f"{_setting(config)}_{seed}"


VIEWS: dict[str, tuple[str, dict[str, Any]]] = {
    "s22": ("s22", {}), "s22 w/o H1": ("s22", {"exclude_systems": ["Human 1 Writing"]}),
    "wiki-da": ("wiki-da", {}), "simpda-2022": ("simpda-2022", {}),
}


def _rated_views() -> dict[str, Any]:
    """The rated outputs of each view the table reads (SimpEval_2022 with and without "Human 1 Writing")."""
    from annotation.models import Campaign
    from metrics.selectors import campaign_rated_outputs
    from metrics.services.meta_evaluation import rated_outputs_filter

    return {name: (slug, rated_outputs_filter(campaign_rated_outputs(Campaign.objects.get(slug=slug)), **kw))
            for name, (slug, kw) in VIEWS.items()}


def _run_figures(run: dict[str, Any], rated: dict[str, Any]) -> dict[str, float | None]:
    """One result file's columns, through the meta-evaluation core as meta_evaluate computes them."""
    from metrics.services.meta_evaluation import rated_meta_evaluate

    found = {}
    for name, (slug, outputs) in rated.items():
        scores = {int(pk): float(v) for pk, v in run["scores"][slug].items()}
        found[name] = rated_meta_evaluate(outputs, {"siera": scores}, n_boot=0)["metrics"]["siera"]
    return {
        "all": found["s22"]["kendall"]["all"], "w/o H1": found["s22 w/o H1"]["kendall"]["all"],
        "wiki r": found["wiki-da"]["pearson"].get("simplicity"),
        "wiki rho": found["wiki-da"]["spearman"].get("simplicity"),
        "simpda r": found["simpda-2022"]["pearson"].get("simplicity"),
        "simpda rho": found["simpda-2022"]["spearman"].get("simplicity"),
    }


def evaluate(pattern: str) -> None:
    setup_django()
    rated = _rated_views()
    print(f"{'run':26s} {'device':18s} {'s':>6s} {'epochs':>7s} | " + " ".join(f"{c:>10s}" for c in COLUMNS))
    by_setting: dict[str, list[dict[str, float | None]]] = {}
    for path in sorted(glob.glob(pattern)):
        run = json.loads(Path(path).read_text())
        figures = _run_figures(run, rated)
        by_setting.setdefault(run["setting"], []).append(figures)
        epochs = f"{run['best_epoch']}/{run['epochs_run']}{'*' if run['stopped_by_deadline'] else ''}"
        print(f"{run['setting'] + ' seed ' + str(run['seed']):26s} {run['device'][:18]:18s} "
              f"{run['train_seconds']:6.0f} {epochs:>7s} | {_row(figures)}")
    for setting, runs in sorted(by_setting.items()):
        print(f"{'mean, ' + setting:26s} {f'n = {len(runs)}':18s} {'':6s} {'':7s} | {_row(summarise(runs))}")
        print(f"{'  sd':26s} {'':18s} {'':6s} {'':7s} | {_row(summarise(runs, spread=True))}")
        paper = PAPER["silver" if setting.startswith("silver") else "base"]
        print(f"{'  paper':26s} {'bert-base, Newsela':18s} {'':6s} {'':7s} | "
              + _row({c: paper[c][0] if c in paper else None for c in COLUMNS}))
    print("epochs: best/run (* ended by --deadline)")


def _row(figures: dict[str, float | None]) -> str:
    return " ".join("       n/a" if figures.get(c) is None else f"{figures[c]:10.3f}" for c in COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export", help="the corpus rows and the test pairs, from the database")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--corpus", default="asset-valid")
    p = sub.add_parser("train", help="train one SIERA per seed and score the test pairs (no database)")
    p.add_argument("--inputs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default=None, help="cpu, cuda... (default: CUDA when available)")
    p.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                   help="a SIERA option, as train_metric's --option (e.g. silver=true)")
    p.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                   help="end a job's training after the epoch that would run past SECONDS (its best epoch kept)")
    p.add_argument("seeds", type=int, nargs="+")
    p = sub.add_parser("evaluate", help="meta-evaluate the scores of train's result files (from the database)")
    p.add_argument("pattern", help="a glob of train's result files, e.g. 'results/siera_*.json'")
    args = parser.parse_args()
    if args.command == "export":
        export(args.out, args.corpus)
    elif args.command == "train":
        options = {key: json.loads(value) for key, _, value in (o.partition("=") for o in args.option)}
        train(args.inputs, args.out, args.seeds, args.device, options, args.deadline)
    else:
        evaluate(args.pattern)


if __name__ == "__main__":
    main()
