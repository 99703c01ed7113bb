"""Meta-evaluate a metric on a campaign's human ratings (Kendall tau-like, Pearson, Spearman, with CIs)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Campaign
from metrics.models import LensModelVersion
from metrics.selectors import lens_active_version, lens_latest_version
from metrics.services.meta_evaluation import lens_meta_evaluate


def version_from_metric(metric: str) -> LensModelVersion:
    """``lens`` = the active version, ``lens:latest`` = the newest succeeded one, ``lens:<id>`` = that one."""
    name, _, which = metric.partition(":")
    if name != "lens":
        raise CommandError(f"unknown metric {name!r} (supported: lens, lens:latest, lens:<version id>)")
    if not which:
        version = lens_active_version()
        if version is None:
            raise CommandError("no active LENS version (promote one, or use lens:latest / lens:<id>)")
    elif which == "latest":
        version = lens_latest_version()
        if version is None:
            raise CommandError("no succeeded LENS version")
    elif which.isdigit():
        version = LensModelVersion.objects.filter(pk=int(which)).first()
        if version is None:
            raise CommandError(f"no LENS version {which}")
    else:
        raise CommandError(f"bad version {which!r} in {metric!r}")
    if version.status != LensModelVersion.Status.SUCCEEDED:
        raise CommandError(f"LENS v{version.pk} is {version.status}")
    return version


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:6.3f}"


class Command(BaseCommand):
    help = (
        "Correlation of LENS with a campaign's ratings: Kendall tau-like on raw ratings per rater (all and "
        "per category) and Pearson/Spearman against the mean z-score, each with a 95% bootstrap interval "
        "over sources (sibling keys kendall_ci, pearson_ci, spearman_ci: [low, high])."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--metric", default="lens", help="lens | lens:latest | lens:<version id>")
        parser.add_argument("--exclude-system", action="append", default=[],
                            help="leave a system out, e.g. the one whose outputs are the references (repeatable)")
        parser.add_argument("--threshold", type=float, default=5.0)
        parser.add_argument("--n-boot", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"no campaign with slug {options['campaign']!r}")
        version = version_from_metric(options["metric"])
        result = lens_meta_evaluate(
            campaign=campaign, version=version, exclude_systems=options["exclude_system"],
            threshold=options["threshold"], n_boot=options["n_boot"], seed=options["seed"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        self.stdout.write(f"LENS v{version.pk} on {campaign.slug} ({result['outputs']} outputs)")
        for key, value in result["kendall"].items():
            low, high = result["kendall_ci"][key]
            pairs = result["pairs"][key]
            self.stdout.write(f"  tau_{key:<11} {_fmt(value)}  [{_fmt(low)}, {_fmt(high)}]  "
                              f"{pairs['concordant']}+/{pairs['discordant']}- pairs")
        for key in ("pearson", "spearman"):
            low, high = result[f"{key}_ci"]
            self.stdout.write(f"  {key:<15} {_fmt(result[key])}  [{_fmt(low)}, {_fmt(high)}]")
