"""APPLS perturbation testbed on an imported corpus: slopes, line plots and the LENS Figure 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.perturb.sanity import sanity_text
from metrics.perturb.testbed import SIMPLIFICATION_NOTE, skipped_sentence
from metrics.services.testbed import parse_magnitudes, testbed_run


def _options(pairs: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        family, dot, name = key.partition(".")
        if not sep or not dot:
            raise CommandError(f"--option {pair!r}: use FAMILY.NAME=VALUE (e.g. bertscore.model=PATH)")
        out.setdefault(family, {})[name] = value
    return out


class Command(ProjectCommand):
    help = (
        "Perturb the references of an imported corpus at graded magnitudes (APPLS), score them with the "
        "metric suite, and write OUT/slopes.json, slopes.tsv, summary.json, plots/*.svg and lens_figure2.svg."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--metrics", required=True, help="'all' or comma-separated names (fkgl,sari,pomme...)")
        parser.add_argument("--dataset", required=True, help="an imported corpus (import_corpus --name ...)")
        parser.add_argument("--magnitudes", default="0,10,...,100", help="percentages (default 0,10,...,100)")
        parser.add_argument("--sample", type=int, help="number of sources (default: all)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--rows", help="START:END lines of the corpus to sample from (e.g. 1500:2000)")
        parser.add_argument("--perturbations", help="comma-separated subset (default: all twelve)")
        parser.add_argument("--option", action="append", default=[], metavar="FAMILY.NAME=VALUE")
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["sample"] is not None and options["sample"] < 1:
            raise CommandError("--sample must be at least 1")
        names = [n.strip() for n in options["metrics"].split(",") if n.strip()]
        if not names:
            raise CommandError("--metrics: give 'all' or at least one metric name")
        perturbations = [p.strip() for p in (options["perturbations"] or "").split(",") if p.strip()] or None

        def progress(stage: str, done: int, total: int) -> None:
            if options["verbosity"] >= 1:
                sys.stderr.write(f"\r{stage}: {done}/{total}")
                if done == total:
                    sys.stderr.write("\n")

        try:
            run = testbed_run(
                dataset=options["dataset"],
                metric_names=names,
                out_dir=options["out"],
                magnitudes=parse_magnitudes(options["magnitudes"], field="--magnitudes"),
                sample=options["sample"],
                seed=options["seed"],
                rows=options["rows"],
                perturbations=perturbations,
                options=_options(options["option"]),
                progress=progress,
            )
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        result = run.result
        self.stdout.write(f"{len(result.rows)} sources, {result.perturbations_applied} perturbed texts, "
                          f"{result.seconds['total']:.1f} s; note: {SIMPLIFICATION_NOTE}")
        if skipped := skipped_sentence(result.skipped):
            self.stdout.write(skipped)
        self.stdout.write("sanity checks (an output identical to its source or a reference gets the best score, an "
                          "unrelated sentence the worst; sources passed/checked):")
        for name, report in result.sanity.items():
            self.stdout.write(f"  {name}: {sanity_text(report)}")
        for name, seen in run.seen_in_training.items():
            if seen:
                self.stderr.write(f"warning: {name} trained on {seen} of the {len(result.rows)} sampled sources: "
                                  "its slopes there are measured on sentences it has seen (choose other --rows)")
        for path in run.files:
            self.stdout.write(f"wrote {path}")
