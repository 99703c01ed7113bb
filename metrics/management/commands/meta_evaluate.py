"""Meta-evaluate suite metrics on a campaign's human ratings (tau-like per category or Pearson per aspect)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotation.models import Campaign
from annotation.rules import TAU_THRESHOLD
from core.budgets import n_boot_check
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.services.meta_evaluation import campaign_meta_evaluate, meta_evaluation_single
from metrics.services.meta_table import render_meta_table
from metrics.services.metric_card import campaign_metric_card, metric_card_from_result, metric_card_text
from metrics.suite.report import render


def _campaign(slug: str, option: str) -> Campaign:
    campaign = Campaign.objects.filter(slug=slug).first()
    if campaign is None:
        raise CommandError(f"{option}: no campaign with slug {slug!r}")
    return campaign


def _fmt(value: float | None) -> str:
    return "  n/a" if value is None else f"{value:6.3f}"


def sensitivity_line(report: dict[str, Any] | None) -> str:
    """One metric's sensitivity report in a line: what it responds to as expected, and on what."""
    if report is None:
        return "no testbed run yet"
    stale = "" if report["current"] else "; measured under another signature"
    return f"responds as expected to: {report['responds_as_expected']} ({report['measured_on']}{stale})"


def json_payload(result: dict[str, Any], metric: str) -> dict[str, Any]:
    """The JSON report: one metric's (``--metric`` naming one) or every metric's, without the comparison table."""
    names = list(result["metrics"])
    requested = metric.strip()
    if len(names) != 1 or requested == "all" or "," in metric:
        return {key: value for key, value in result.items() if key != "comparison"}
    payload = meta_evaluation_single(result, names[0])
    if requested.partition(":")[0] == "lens":
        payload["metric"] = requested  # today's keys: "lens" plus the version id
        payload["version"] = int(names[0].partition(":")[2])
    return payload


class Command(ProjectCommand):
    help = (
        "How suite metrics agree with a campaign's humans. Rank & Rate campaigns: Kendall tau-like on the raw "
        "ratings (all and per category, the LENS authors' pair rule) plus Pearson/Spearman against the mean z; "
        "multi-aspect campaigns: Pearson and Spearman per aspect. Every figure has a 95%% bootstrap interval over "
        "sources; --metric all adds the paired bootstrap test of every metric pair. --level system|both adds "
        "the system level (Pearson, Kendall, pairwise accuracy and tie-calibrated accuracy between system "
        "means, significance clusters, Williams' test). Missing scores are computed and stored first. One "
        "metric named, the table is its metric card: both levels with its significance clusters among every "
        "metric stored for the campaign, testbed sensitivity, sanity checks, signature."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--metric", default="lens",
                            help="fkgl | bleu | gleu | sari | sari:lens | bertscore | lens | lens:latest | "
                                 "lens:<id> | pomme | a comma-separated list | all")
        parser.add_argument("--exclude-sources-of", metavar="OTHER_SLUG",
                            help="drop the sources another campaign also has (matched by lowercased text)")
        parser.add_argument("--exclude-system", action="append", default=[],
                            help="leave a system out, e.g. the one whose outputs are the references (repeatable)")
        parser.add_argument("--threshold", type=float, default=TAU_THRESHOLD)
        parser.add_argument("--n-boot", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
        parser.add_argument("--format", choices=["json", "table", "csv", "latex"], default=None)
        parser.add_argument("--level", choices=["output", "system", "both"], default="output",
                            help="output: per-output figures (tau-like, Pearson/Spearman, tie-calibrated pairwise "
                                 "accuracy); system: agreement of the metrics' system means with the humans' "
                                 "(Pearson, Kendall, pairwise accuracy, acc_eq, significance clusters); both")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = _campaign(options["campaign"], "--campaign")
        other = options["exclude_sources_of"]
        exclude = _campaign(other, "--exclude-sources-of") if other else None
        fmt = "json" if options["json"] else (options["format"] or "table")
        level = options["level"]
        if fmt == "table" and options["threshold"] != TAU_THRESHOLD and self.names_one(options["metric"]):
            level = "both"  # the card of this run's own threshold comes from this result: both levels, as always
        try:
            n_boot_check(options["n_boot"], field="--n-boot")
            result = campaign_meta_evaluate(
                campaign=campaign, metric=options["metric"], exclude_sources_of=exclude,
                exclude_systems=options["exclude_system"], threshold=options["threshold"],
                n_boot=options["n_boot"], seed=options["seed"], level=level,
            )
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        for why in result.get("skipped", {}).values():
            self.stderr.write(f"not scored: {why}")
        if fmt == "json":
            self.stdout.write(json.dumps(json_payload(result, options["metric"]), indent=2))
        elif (fmt == "csv" or fmt == "latex") and result["level"] != "output":
            # The system level's columns (and the output level's acc_eq) as the text table shows them.
            self.stdout.write(render_meta_table(result, "csv" if fmt == "csv" else "latex"), ending="")
        elif fmt == "csv" or fmt == "latex":
            self.stdout.write(render(result["comparison"], "csv" if fmt == "csv" else "latex"), ending="")
        elif self.is_single(result, options["metric"]):
            # The metric's card, as the API and the research page give it: its figures among every metric
            # stored for the campaign (the clusters rank it among them), both levels, whatever --level says.
            # Another --threshold than the stored figures' is this run's alone: its card comes from this result.
            name = next(iter(result["metrics"]))
            try:
                card = campaign_metric_card(
                    campaign=campaign, metric=name, exclude_sources_of=exclude,
                    exclude_systems=options["exclude_system"], n_boot=options["n_boot"], seed=options["seed"],
                ) if options["threshold"] == TAU_THRESHOLD else metric_card_from_result(result, name)
            except ServiceError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(metric_card_text(card), ending="")
        else:
            self.write_table(campaign, result)

    @staticmethod
    def is_single(result: dict[str, Any], metric: str) -> bool:
        """One metric named (not ``all``, not a list): its table is its metric card
        (``metrics.services.metric_card``)."""
        return len(result["metrics"]) == 1 and Command.names_one(metric)

    @staticmethod
    def names_one(metric: str) -> bool:
        return metric.strip() != "all" and "," not in metric

    def write_table(self, campaign: Campaign, result: dict[str, Any]) -> None:
        """The text report: what was compared, then the output level's and/or the system level's figures."""
        names = list(result["metrics"])
        excluded = f", {result['outputs_excluded']} excluded" if result["outputs_excluded"] else ""
        self.stdout.write(f"{campaign.slug}: {result['outputs']} outputs{excluded}, {result['n_boot']} resamples")
        for name in names:
            self.stdout.write(f"  {name}: {result['metrics'][name]['signature']}")
        if result["level"] in ("output", "both"):
            self.write_output_level(result)
        if result["level"] in ("system", "both"):
            self.stdout.write(system_table(result["system"]), ending="")

    def write_output_level(self, result: dict[str, Any]) -> None:
        """Today's output-level report, then the tie-calibrated pairwise accuracy with each metric's cluster."""
        names = list(result["metrics"])
        self.stdout.write(render(result["comparison"], "text"), ending="")
        self.stdout.write("perturbation sensitivity (APPLS testbed; `perturbation_testbed` records it):")
        for name in names:
            self.stdout.write(f"  {name}: {sensitivity_line(result['metrics'][name].get('sensitivity'))}")
        if result["kind"] == "kendall":
            for name in names:
                entry = result["metrics"][name]
                pairs = entry["pairs"]["all"]
                low, high = entry["pearson_ci"]
                self.stdout.write(
                    f"  {name}: tau_all pairs {pairs['concordant']}+/{pairs['discordant']}-; pearson vs mean z "
                    f"{_fmt(entry['pearson'])} [{_fmt(low)}, {_fmt(high)}]"
                )
        clusters = result.get("output_clusters", {})
        for column, grouped in clusters.items():
            self.stdout.write(f"pairwise accuracy with tie calibration (acc_eq, Deutsch et al. 2023) vs {column}, "
                              "pairs within a source, mean over sources; cluster 1 = best:")
            for name in grouped["order"]:
                cell = result["metrics"][name]["acc_eq"][column]
                low, high = cell["ci"]
                self.stdout.write(f"  {name}: {_fmt(cell['value'])} [{_fmt(low)}, {_fmt(high)}] "
                                  f"epsilon {_eps(cell['epsilon'])}  cluster {grouped['rank'][name]}")
            self.stdout.write(f"  clusters: {grouped['test']}, alpha {grouped['alpha']}")


def _eps(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _ci(cell: dict[str, Any], key: str) -> str:
    low, high = cell[key]
    return f"[{_fmt(low)},{_fmt(high)}]"


def system_table(system: dict[str, Any]) -> str:
    """The system-level figures as text: per human column, one line per metric (best pairwise accuracy first)
    with Pearson, Kendall tau-b, pairwise accuracy and acc_eq, their 95% intervals over sources, and the clusters."""
    lines = [f"system level: {len(system['systems'])} systems ({', '.join(system['systems'])})"]
    for column in system["humans"]:
        clusters = system["clusters"][column]
        lines.append(f"humans: system mean of {column}; intervals: bootstrap over sources (over systems in JSON); "
                     "cl = significance cluster (1 = best) on accuracy / pearson / acc_eq")
        header = (f"{'metric':<14} {'pearson':>6} {'ci':>15} {'kendall':>7} {'ci':>15} {'accuracy':>8} {'ci':>15} "
                  f"{'acc_eq':>6} {'epsilon':>8} {'cl':>8}")
        lines.append(header)
        for name in clusters["accuracy"]["order"]:
            cells = system["metrics"][name][column]
            rank = "/".join(str(clusters[f]["rank"][name]) for f in ("accuracy", "pearson", "acc_eq"))
            lines.append(
                f"{name:<14} {_fmt(cells['pearson']['value'])} {_ci(cells['pearson'], 'ci_sources'):>15} "
                f"{_fmt(cells['kendall']['value']):>7} {_ci(cells['kendall'], 'ci_sources'):>15} "
                f"{_fmt(cells['accuracy']['value']):>8} {_ci(cells['accuracy'], 'ci_sources'):>15} "
                f"{_fmt(cells['acc_eq']['value'])} {_eps(cells['acc_eq']['epsilon']):>8} {rank:>8}"
            )
        significant = [w for w in system["williams"][column] if w["p_value"] is not None and w["p_value"] < 0.05]
        lines.append(f"clusters: {clusters['accuracy']['test']}, alpha {clusters['accuracy']['alpha']}")
        lines.append("Williams' test (system-level Pearson, one-sided p < 0.05): "
                     + ("; ".join(f"{w['metric_a']} vs {w['metric_b']} p={w['p_value']:.3f}" for w in significant)
                        or "none"))
    return "\n".join(lines) + "\n"
