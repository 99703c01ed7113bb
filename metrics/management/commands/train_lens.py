"""Train a LENS version synchronously, with the same service the Celery task uses."""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.lens import ProgressEvent, TrainConfig
from metrics.lens.config import OPTION_RULES
from metrics.models import LearnedVersion
from metrics.services.training import (
    learned_version_promote,
    learned_version_train,
    lens_train_config,
    lens_version_create,
)

DEFAULTS = TrainConfig()
# Flag (argparse dest) -> training option, for the options with a flag of their own.
FLAG_OPTIONS = {"encoder": "encoder", "k": "k", "epochs": "epochs", "heldout": "heldout_fraction", "seed": "seed",
                "batch_size": "batch_size", "encoder_lr": "encoder_lr", "head_lr": "head_lr", "patience": "patience"}


def parse_option(item: str) -> tuple[str, Any]:
    """``KEY=JSON`` -> (key, value); a value that is not JSON is an error, never the raw string."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CommandError(f"--option {item!r}: expected KEY=JSON")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError as exc:
        raise CommandError(
            f"--option {item!r}: the value is not JSON ({exc.msg}); quote strings, e.g. {key}='\"text\"'"
        ) from None


def progress_printer(command: BaseCommand, verbosity: int) -> Callable[[ProgressEvent], None]:
    """A training listener that prints one line per epoch (per step too at verbosity 2): loss and the
    held-out figures the run has (tau_all, Pearson, loss). Shared by ``train_lens`` and ``train_metric``."""
    started = time.perf_counter()

    def report(event: ProgressEvent) -> None:
        if event.kind == "step" and verbosity < 2:
            return
        line = f"[{time.perf_counter() - started:7.0f}s] epoch {event.epoch} step {event.step}/{event.total_steps}"
        line += f" loss {event.loss:.4f}"
        if event.heldout is not None:
            figures = {"tau_all": event.heldout.tau.get("all"), "pearson": event.heldout.pearson,
                       "loss": event.heldout.loss}
            line += " | held-out " + " ".join(
                f"{name} {'n/a' if value is None else f'{value:.3f}'}" for name, value in figures.items())
            line += " *best*" if event.is_best else ""
        command.stdout.write(line)
        command.stdout.flush()

    return report


class Command(ProjectCommand):
    help = (
        "Train LENS on the ratings of one or more campaigns (in this process, not on the gpu queue), print "
        "the new version id and its held-out results; --activate promotes it when training succeeded."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", action="append", required=True, help="campaign slug (repeatable)")
        parser.add_argument("--encoder",
                            help=f"HF name (local cache), path, or alias (default {DEFAULTS.model.encoder})")
        parser.add_argument("--k", type=int, help=f"default {DEFAULTS.k}")
        parser.add_argument("--epochs", type=int, help=f"default {DEFAULTS.epochs}")
        parser.add_argument("--heldout", type=float,
                            help=f"share of sources held out (default {DEFAULTS.heldout_fraction})")
        parser.add_argument("--seed", type=int, help=f"default {DEFAULTS.seed}")
        parser.add_argument("--batch-size", type=int)
        parser.add_argument("--encoder-lr", type=float)
        parser.add_argument("--head-lr", type=float)
        parser.add_argument("--patience", type=int)
        parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                            help="any other training option, e.g. --option hidden_sizes=[64] (repeatable); one of "
                                 + ", ".join(sorted(set(OPTION_RULES) - set(FLAG_OPTIONS.values()))))
        parser.add_argument("--threads", type=int, help="torch CPU threads")
        parser.add_argument("--activate", action="store_true", help="promote the new version if it succeeded")
        parser.add_argument("--note", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        slugs = options["campaign"]
        campaigns = list(Campaign.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {c.slug for c in campaigns})
        if missing:
            raise CommandError(f"no campaign with slug(s): {', '.join(missing)}")
        chosen = {option: options[dest] for dest, option in FLAG_OPTIONS.items() if options[dest] is not None}
        for item in options["option"]:
            key, value = parse_option(item)
            if key in chosen:
                raise CommandError(f"{key} is given twice (a flag and --option, or two --option)")
            chosen[key] = value
        try:
            config = lens_train_config(chosen)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        if options["threads"]:
            import torch

            torch.set_num_threads(options["threads"])
        try:
            version = lens_version_create(config=config, campaigns=campaigns, started_by=None,
                                          note=options["note"] or "train_lens command", enqueue=False)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"LENS v{version.pk}: training on {', '.join(sorted(slugs))} with {version.encoder}")

        report = progress_printer(self, options["verbosity"])
        version = learned_version_train(version=version, listener=report)
        counts = version.data_counts
        self.stdout.write(
            f"data {version.data_sha256}: {counts.get('train_samples')} train / {counts.get('heldout_samples')} "
            f"held-out outputs ({counts.get('heldout_sources')} held-out sources)"
        )
        for warning in version.data_warnings:
            self.stderr.write(f"warning: {warning}")
        if version.status != LearnedVersion.Status.SUCCEEDED:
            raise CommandError(f"LENS v{version.pk} {version.status}: {version.error}")
        results = version.heldout_results
        taus = " ".join(
            f"tau_{key}={value:.3f}" if value is not None else f"tau_{key}=n/a"
            for key, value in (results.get("tau") or {}).items()
        )
        pearson = results.get("pearson")
        self.stdout.write(
            f"LENS v{version.pk} succeeded in {version.train_seconds:.0f}s on {version.device}; best epoch "
            f"{version.best_epoch}; held-out {taus} pearson={'n/a' if pearson is None else f'{pearson:.3f}'}"
        )
        if options["activate"]:
            try:
                learned_version_promote(version=version)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"LENS v{version.pk} is now active")
        self.stdout.write(json.dumps({"version": version.pk, "status": version.status,
                                      "heldout": version.heldout_results, "active": options["activate"]}))
