"""Replay a campaign's collected ratings under allocation policies (issue 45) and write the summary and plots."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Campaign
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.services.allocation import ALWAYS_POLICIES, SEEDS_MAX, allocation_write, campaign_allocation_simulate

OPTIONS = {"policy": "--policy", "seeds": "--seeds", "budget": "--budget", "campaign": "--campaign"}


class Command(ProjectCommand):
    help = (
        "Replay a campaign's collected ratings as if each allocation policy had chosen what to rate next, over "
        "seeds, and write OUT/summary.json (one row per policy: ratings to Kendall tau >= 0.95 with the full "
        "ranking, top-system accuracy at 10/20/30/50% of the ratings), details.json, curves.json and curves.svg. "
        f"{' and '.join(ALWAYS_POLICIES)} are always among the policies."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="the campaign's slug")
        parser.add_argument("--policy", default=",".join(ALWAYS_POLICIES),
                            help="NAME[,NAME]: policies of evaluation.allocation.POLICIES "
                                 f"({', '.join(ALWAYS_POLICIES)} are added when missing)")
        parser.add_argument("--seeds", type=int, default=50, help=f"seeds per policy, 1 to {SEEDS_MAX} (default 50)")
        parser.add_argument("--budget", type=int, default=None,
                            help="ratings each simulated campaign may reveal (default: all the campaign has)")
        parser.add_argument("--out", type=Path, required=True, help="folder to write the files to")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = Campaign.objects.filter(slug=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign {options['campaign']!r}")

        def progress(done: int, total: int) -> None:
            if options["verbosity"] >= 1:
                sys.stderr.write(f"\rsimulated {done}/{total} runs")
                if done == total:
                    sys.stderr.write("\n")

        try:
            result = campaign_allocation_simulate(campaign, policies=options["policy"], seeds=options["seeds"],
                                                  budget=options["budget"], progress=progress)
        except ServiceError as exc:
            option = OPTIONS.get(exc.field or "", "")
            message = exc.message.removeprefix(f"{exc.field}: ")
            raise CommandError(f"{option}: {message}" if option else message) from None
        files = allocation_write(result, options["out"])
        self.stdout.write(f"{result.dataset}: {result.full_ratings} ratings, budget {result.budget}, "
                          f"{len(result.summary)} policies x {options['seeds']} seeds")
        for row in result.summary:
            need = row["ratings_to_tau95"]
            top = " / ".join(f"{v:.2f}" for v in row["top1_accuracy"].values())
            self.stdout.write(f"  {row['policy']}: tau>=0.95 after {need['median']} (median), {need['p90']} (p90) "
                              f"ratings; top-1 at 10/20/30/50%: {top}")
        self.stdout.write("wrote " + ", ".join(str(p) for p in files))
