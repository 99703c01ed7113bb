"""Train a learned metric (LENS, REFEREE or SIERA) synchronously, with the service the Celery task uses."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from annotation.models import Campaign
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.learned.kinds import kind_names
from metrics.management.commands.train_lens import parse_option, progress_printer
from metrics.models import LearnedVersion
from metrics.services.learned import DEFAULT_CORPUS
from metrics.services.training import learned_version_create, learned_version_promote, learned_version_train


class Command(ProjectCommand):
    help = (
        "Train a learned metric in this process (not on the gpu queue): --kind lens (rated campaigns), referee "
        f"(rated campaigns + a corpus, default {DEFAULT_CORPUS}) or siera (a corpus, default {DEFAULT_CORPUS}). "
        "Prints the version id and its held-out results; --activate promotes it when it succeeded."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--kind", required=True, choices=kind_names())
        parser.add_argument("--campaign", action="append", default=[], help="campaign slug (repeatable)")
        parser.add_argument("--corpus", action="append", default=[],
                            help=f"named corpus (repeatable; REFEREE and SIERA, default {DEFAULT_CORPUS})")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--encoder", help="HF name (local cache), path, or the bundled alias")
        parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                            help="any other training option of the kind, e.g. --option stages=[1,3] (repeatable)")
        parser.add_argument("--threads", type=int, help="torch CPU threads")
        parser.add_argument("--activate", action="store_true", help="promote the new version if it succeeded")
        parser.add_argument("--note", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        kind = options["kind"]
        slugs = options["campaign"]
        campaigns = list(Campaign.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {c.slug for c in campaigns})
        if missing:
            raise CommandError(f"no campaign with slug(s): {', '.join(missing)}")
        chosen: dict[str, Any] = {}
        for key in ("seed", "encoder"):
            if options[key] is not None:
                chosen[key] = options[key]
        for item in options["option"]:
            key, value = parse_option(item)
            if key in chosen:
                raise CommandError(f"{key} is given twice (a flag and --option, or two --option)")
            chosen[key] = value
        if options["threads"]:
            import torch

            torch.set_num_threads(options["threads"])
        try:
            version = learned_version_create(kind=kind, options=chosen, campaigns=campaigns,
                                             corpora=options["corpus"], started_by=None,
                                             note=options["note"] or "train_metric command", enqueue=False)
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        on = ", ".join([*sorted(slugs), *version.corpora])
        self.stdout.write(f"{version.label} v{version.pk}: training on {on} with {version.encoder}")
        report = progress_printer(self, options["verbosity"])
        version = learned_version_train(version=version, listener=report)
        for warning in version.data_warnings:
            self.stderr.write(f"warning: {warning}")
        if version.status != LearnedVersion.Status.SUCCEEDED:
            raise CommandError(f"{version.label} v{version.pk} {version.status}: {version.error}")
        self.stdout.write(f"{version.label} v{version.pk} succeeded in {version.train_seconds:.0f}s on "
                          f"{version.device}; best epoch {version.best_epoch}")
        if options["activate"]:
            try:
                learned_version_promote(version=version)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"{version.label} v{version.pk} is now active")
        self.stdout.write(json.dumps({"kind": kind, "version": version.pk, "status": version.status,
                                      "data": version.data_counts, "heldout": version.heldout_results,
                                      "active": options["activate"]}))
