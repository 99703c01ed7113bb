from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Campaign
from core.budgets import n_boot_check
from core.commands import ProjectCommand
from core.errors import ServiceError
from evaluation.services.report import campaign_report_build


def _num(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _alpha(block: dict[str, float | None]) -> str:
    return f"{_num(block['value'], 3)} [{_num(block['ci_low'], 3)}, {_num(block['ci_high'], 3)}]"


def report_as_text(report: dict[str, Any]) -> str:
    """A readable summary: the leaderboard, alpha, per-category z means, annotators and warnings."""
    counts = report["counts"]
    lines = [
        f"Campaign {report['campaign']['name']} ({report['campaign']['slug']}): {counts['ratings']} ratings of "
        f"{counts['outputs']} outputs, {counts['sources']} sources, {counts['systems']} systems, "
        f"{counts['raters']} raters. Ranked by {report['ranked_by']}; 95% bootstrap CIs over sources "
        f"({report['n_boot']} resamples).",
        "",
    ]
    width = max([len("System"), *(len(r["system"]) for r in report["systems"])])
    lines.append(f"{'#':>3}  {'System':<{width}}  {'n':>6}  {'Raw':>6}  {'Z':>7}  {'95% CI (z)':>17}  Cluster")
    for row in report["systems"]:
        ci = f"[{_num(row['ci_low'], 3)}, {_num(row['ci_high'], 3)}]"
        lines.append(
            f"{row['rank']:>3}  {row['system']:<{width}}  {row['n']:>6}  {_num(row['raw_mean'], 2):>6}  "
            f"{_num(row['z_mean'], 3):>7}  {ci:>17}  {row['cluster']:>7}"
        )
    lines += ["", f"Krippendorff's alpha (interval): raw {_alpha(report['alpha']['raw'])}, "
                  f"z {_alpha(report['alpha']['z'])}"]
    if report["categories"]:
        lines += ["", "Mean z-score per category:"]
        for name, table in report["categories"].items():
            cells = ", ".join(f"{r['system']} {_num(r['z_mean'], 3)}" for r in table["systems"])
            lines.append(f"  {name} ({table['counts']['outputs']} outputs, alpha z "
                         f"{_num(table['alpha']['z']['value'], 3)}): {cells}")
    if report["annotators"]:
        lines += ["", "Annotators (pseudonyms or imported rating slots):"]
        for row in report["annotators"]:
            flag = "  OUTLIER" if row["outlier"] else ""
            lines.append(
                f"  {row['rater']}: {row['n']} ratings, {row['n_sources']} sources, r with others "
                f"{_num(row['corr_with_others'], 3)}, alpha z without {_num(row['alpha_without_z'], 3)}{flag}"
            )
    lines += aspects_as_text(report.get("aspects") or [])
    warnings = [*report["warnings"], *(w for table in report.get("aspects") or [] for w in table["warnings"])]
    if warnings:
        lines += ["", "Warnings:", *(f"  - {w}" for w in warnings)]
    return "\n".join(lines)


def aspects_as_text(tables: list[dict[str, Any]]) -> list[str]:
    """Per aspect of a multi-aspect campaign: mean raw and mean z per system with their 95% CIs."""
    lines: list[str] = []
    for table in tables:
        counts = table["counts"]
        lines += [
            "",
            f"Aspect {table['aspect']} (scale {table['scale']}, z {table['z']}): {counts['ratings']} ratings of "
            f"{counts['outputs']} outputs by {counts['raters']} raters",
        ]
        width = max([len("System"), *(len(r["system"]) for r in table["systems"])])
        lines.append(f"{'#':>3}  {'System':<{width}}  {'Raw':>7}  {'95% CI (raw)':>17}  {'Z':>7}  {'95% CI (z)':>17}")
        for row in table["systems"]:
            raw_ci = f"[{_num(row['raw_ci_low'], 2)}, {_num(row['raw_ci_high'], 2)}]"
            z_ci = f"[{_num(row['ci_low'], 3)}, {_num(row['ci_high'], 3)}]"
            lines.append(
                f"{row['rank']:>3}  {row['system']:<{width}}  {_num(row['raw_mean'], 2):>7}  {raw_ci:>17}  "
                f"{_num(row['z_mean'], 3):>7}  {z_ci:>17}"
            )
    return lines


class Command(ProjectCommand):
    help = (
        "Leaderboard with bootstrap CIs and significance clusters, Krippendorff's alpha (raw and z), "
        "per-category tables, annotator quality and per-system features of a campaign; for multi-aspect "
        "campaigns, mean raw and z per system and aspect with CIs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
        parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            campaign = Campaign.objects.get(slug=options["campaign"])
        except Campaign.DoesNotExist:
            raise CommandError(f"no campaign with slug {options['campaign']!r}") from None
        try:
            n_boot_check(options["n_boot"], field="--n-boot")
            report = campaign_report_build(campaign=campaign, n_boot=options["n_boot"], seed=options["seed"])
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
        else:
            self.stdout.write(report_as_text(report))
