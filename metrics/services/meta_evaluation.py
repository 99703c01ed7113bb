"""How well suite metrics (LENS versions included) agree with a campaign's human ratings (LENS paper §4.1).

Rank & Rate campaigns: the Kendall tau-like of the LENS authors' evaluation code on the RAW ratings per
rater (pairs of outputs of the same source and category; a 5-point threshold; a strict majority of the
shared raters; metric ties discordant), with the campaign's final categories, and Pearson/Spearman against
the mean z-score per output.  Multi-aspect campaigns: Pearson and Spearman per aspect (z where given).
Every figure has a 95% percentile bootstrap interval over sources; several metrics also get the paired
bootstrap test of every pair (``metrics.suite.report.compare_metrics``).

The metrics' scores are the stored ``MetricScore`` rows under each metric's current signature; missing or
stale ones are computed and stored first (``metrics.services.metric_scores``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from annotation.models import Campaign
from annotation.rules import TAU_THRESHOLD, sentence_key
from core.budgets import N_BOOT_DEFAULT, excluded_systems_check, n_boot_check
from core.errors import ServiceError
from core.heavy import heavy_cached
from core.services import request_key
from evaluation.stats.correlation import CATEGORIES, TAU_KEYS, metric_correlation_ci
from evaluation.stats.system_level import grouped_acc_eq, system_level_figures
from metrics.selectors import (
    RatedOutput,
    campaign_metrics_fingerprint,
    campaign_rated_outputs,
    campaign_references,
    campaign_source_keys,
)
from metrics.services.metric_registry import metrics_get, metrics_that_score
from metrics.services.metric_scores import (
    campaign_metric_scores,
    campaign_metric_scores_compute,
    metric_require_references,
    metric_sorted,
)
from metrics.services.sensitivity import metric_sensitivity
from metrics.suite import Item
from metrics.suite.datasets import RatedOutput as SuiteRatedOutput
from metrics.suite.report import compare_metrics

LEVELS = ("output", "system", "both")
Z_COLUMN = "z"  # the human column of Rank & Rate campaigns: each output's mean z over its raters


def level_check(level: str) -> str:
    """``level`` if it is ``output``, ``system`` or ``both``.

    Raises:
        ServiceError: Any other value (400).
    """
    if level not in LEVELS:
        raise ServiceError(f"level must be one of {', '.join(LEVELS)}, not {level!r}", field="level")
    return level


def human_columns(rated: Sequence[RatedOutput]) -> dict[str, list[float]]:
    """The human value of each output per column: ``{"z": mean z}`` for Rank & Rate ratings, else one column per
    aspect (z where every output of the aspect has one, else raw); NaN where an output has none."""
    aspects = _aspect_values(rated)
    names = sorted({a for values in aspects for a in values})
    if names:
        return {a: [values.get(a, math.nan) for values in aspects] for a in names}
    return {Z_COLUMN: [math.nan if (z := r.mean_z) is None else z for r in rated]}


def _interval(low: Any, high: Any) -> list[float | None]:
    return [None if low is None else float(low), None if high is None else float(high)]


# --- Any suite metric against a campaign's humans ---------------------------------------------------------


def rated_outputs_filter(
    rated: Sequence[RatedOutput], *, exclude_systems: Iterable[str] = (), exclude_sources: set[str] | None = None
) -> list[RatedOutput]:
    """Drop the outputs of ``exclude_systems`` and of sources whose lowercased text is in ``exclude_sources``.

    Raises:
        ServiceError: A system to leave out has no output in ``rated`` (a misspelt name would otherwise leave
            every output in, and the figures would silently include the system the caller meant to drop).
    """
    systems = set(exclude_systems)
    rated_systems = {r.system for r in rated}
    unknown = sorted(systems - rated_systems)
    if unknown:
        known = ", ".join(repr(name) for name in sorted(rated_systems)) or "none"
        raise ServiceError(f"exclude_system: no rated output of {', '.join(repr(n) for n in unknown)} to leave "
                           f"out; the rated systems are {known}", field="exclude_system")
    sources = exclude_sources or set()
    return [r for r in rated if r.system not in systems and sentence_key(r.complex) not in sources]


def _aspect_values(rated: Sequence[RatedOutput]) -> list[dict[str, float]]:
    """Per output, one value per aspect: the mean z where every rated output of that aspect has one, else raw."""
    aspects = sorted({a for r in rated for a in (*r.aspects_z, *r.aspects_raw)})
    use_z = {a: all(a in r.aspects_z for r in rated if a in r.aspects_raw or a in r.aspects_z) for a in aspects}
    out = []
    for r in rated:
        values: dict[str, float] = {}
        for a in aspects:
            value = r.aspects_z.get(a) if use_z[a] else r.aspects_raw.get(a)
            if value is not None and math.isfinite(value):
                values[a] = float(value)
        out.append(values)
    return out


def _suite_outputs(rated: Sequence[RatedOutput]) -> list[SuiteRatedOutput]:
    return [
        SuiteRatedOutput(
            source=str(r.source_pk), system=r.system, item=Item(r.complex, r.text), category=r.category,
            ratings=r.ratings, aspects=aspects, raw_aspects=r.aspects_raw,
        )
        for r, aspects in zip(rated, _aspect_values(rated), strict=True)
    ]


def _interval_of(cell: Mapping[str, Any] | None) -> list[float | None]:
    if cell is None:
        return [None, None]
    return _interval(cell.get("ci_low"), cell.get("ci_high"))


def rated_meta_evaluate(
    rated: Sequence[RatedOutput],
    scores: Mapping[str, Mapping[int, float]],
    *,
    signatures: Mapping[str, str] | None = None,
    threshold: float = TAU_THRESHOLD,
    n_boot: int = 1000,
    seed: int = 0,
    level: str = "output",
) -> dict[str, Any]:
    """Metrics against the humans of ``rated`` (the service core; build ``rated`` directly to test it).

    Rank & Rate ratings (no aspects): per metric ``"kendall": {"all", "paraphrase", "split", "deletion"}``
    (tau-like, the LENS authors' pair rule) with ``"kendall_ci"`` and ``"pairs"``, and Pearson/Spearman
    against the mean z per output. Multi-aspect ratings: per metric ``"pearson": {aspect: r}`` and
    ``"spearman": {aspect: rho}`` (z per aspect where given), each with ``*_ci``.  Only outputs that every
    metric scored are compared (``outputs_not_scored`` counts the others).  ``comparison`` is
    :func:`metrics.suite.report.compare_metrics`' result (paired bootstrap tests included), for ``render``.

    Args:
        rated: Rated outputs (``campaign_rated_outputs``, filtered).
        scores: Metric name -> {output pk: value}.
        signatures: Metric name -> signature, echoed per metric.
        level: ``output`` (today's figures plus, per metric, ``acc_eq``: pairwise accuracy with tie calibration
            per human column, pairs within a source, and ``output_clusters``), ``system`` (today's figures plus
            ``system``: :func:`evaluation.stats.system_level.system_level_figures` on the metrics' and the
            humans' system means) or ``both``.  Human columns: :func:`human_columns`.

    Raises:
        ServiceError: An unknown ``level`` (400).
    """
    level_check(level)
    names = list(scores)
    usable = [r for r in rated if all(r.output_pk in scores[name] for name in names)]
    outputs = _suite_outputs(usable)
    columns = {name: [scores[name][r.output_pk] for r in usable] for name in names}
    comparison = compare_metrics(outputs, columns, n_boot=n_boot, seed=seed, threshold=threshold)
    per_metric: dict[str, dict[str, Any]] = {}
    kind = comparison["kind"] if usable else ("pearson" if any(o.aspects for o in outputs) else "kendall")
    for name in names:
        entry: dict[str, Any] = {"signature": (signatures or {}).get(name)}
        table = comparison["metrics"].get(name, {})
        if kind == "kendall":
            keys = [*TAU_KEYS, *sorted(k for k in table if k not in TAU_KEYS)]
            empty = {"value": None, "concordant": 0, "discordant": 0}
            cells = {key: table.get(key, empty) for key in keys}
            entry["kendall"] = {key: cell["value"] for key, cell in cells.items()}
            entry["kendall_ci"] = {key: _interval_of(cell) for key, cell in cells.items()}
            entry["pairs"] = {key: {"concordant": cell["concordant"], "discordant": cell["discordant"]}
                              for key, cell in cells.items()}
            with_z = [(r, z) for r in usable if (z := r.mean_z) is not None]
            corr: dict[str, Any] = {"n": len(with_z), "pearson": None, "spearman": None}
            if len(with_z) >= 2:
                corr = metric_correlation_ci(
                    [str(r.source_pk) for r, _ in with_z], [scores[name][r.output_pk] for r, _ in with_z],
                    [z for _, z in with_z], n_boot=n_boot, seed=seed,
                )
            for key in ("pearson", "spearman"):
                cell: Mapping[str, Any] | None = corr[key]
                entry[key] = cell["value"] if cell else None
                entry[f"{key}_ci"] = _interval_of(cell)
            entry["correlation_outputs"] = corr["n"]
            entry["ci"] = {"kendall": entry["kendall_ci"], "pearson": entry["pearson_ci"],
                           "spearman": entry["spearman_ci"]}
        else:
            for key in ("pearson", "spearman"):
                entry[key] = {a: cell[key]["value"] for a, cell in table.items()}
                entry[f"{key}_ci"] = {a: _interval_of(cell[key]) for a, cell in table.items()}
            entry["n"] = {a: cell["n"] for a, cell in table.items()}
        per_metric[name] = entry
    humans = human_columns(usable)
    sources = [str(r.source_pk) for r in usable]
    extra: dict[str, Any] = {"level": level}
    if level in ("output", "both"):
        grouped = grouped_acc_eq(sources, humans, columns, n_boot=n_boot, seed=seed)
        for name in names:
            per_metric[name]["acc_eq"] = grouped["metrics"][name]
        extra["output_clusters"] = grouped["clusters"]
    if level in ("system", "both"):
        extra["system"] = system_level_figures(
            sources, [r.system for r in usable], humans, columns, n_boot=n_boot, seed=seed
        )
    return {
        "kind": kind,
        "outputs": len(usable),
        "outputs_not_scored": len(rated) - len(usable),
        "threshold": threshold,
        "n_boot": n_boot,
        "metrics": per_metric,
        "paired": comparison["paired"],
        "comparison": comparison,
        **extra,
    }


def campaign_meta_evaluate(
    *,
    campaign: Campaign,
    metric: str | Sequence[str] | None,
    exclude_sources_of: Campaign | None = None,
    exclude_systems: Iterable[str] = (),
    threshold: float = TAU_THRESHOLD,
    n_boot: int = 1000,
    seed: int = 0,
    compute: bool = True,
    level: str = "output",
) -> dict[str, Any]:
    """Suite metrics (``"sari"``, ``"lens:latest"``, ``"all"``...) against a campaign's humans.

    Missing or stale scores are computed and stored first.  ``compute=False`` reads stored scores only
    (what the dashboard and the API show): ``metric=None`` then means every metric stored for the
    campaign, each under its stored signature.  See :func:`rated_meta_evaluate` for the result, which
    adds ``campaign``, ``excluded_systems``, ``excluded_sources_of``, ``outputs_excluded`` and, per metric, its
    perturbation-sensitivity report (``metrics[name]["sensitivity"]``: :func:`metric_sensitivity`, ``None``
    before any testbed run scored it).  For WIKI-DA:
    ``campaign_meta_evaluate(campaign=wiki_da, metric="all", exclude_sources_of=simpeval_past)``.

    Raises:
        ServiceError: Unknown metric or variant; a metric needs references the campaign lacks; a system to
            leave out that has no rated output in the campaign; an unknown ``level`` (400); a named blend
            whose components changed since it was trained (409; ``all`` leaves it out, in ``skipped``).
    """
    n_boot_check(n_boot)
    level_check(level)
    skipped: dict[str, str] = {}
    exclude_systems = excluded_systems_check(list(exclude_systems))
    rated_all = campaign_rated_outputs(campaign)
    excluded_sources = campaign_source_keys(exclude_sources_of) if exclude_sources_of is not None else None
    rated = rated_outputs_filter(rated_all, exclude_systems=exclude_systems, exclude_sources=excluded_sources)
    if compute or metric is not None:
        metrics = metrics_get(metric if metric is not None else "all")
        if metric == "all" or metric == ["all"]:
            if not campaign_references(campaign):
                metrics = [m for m in metrics if not m.needs_references]
        else:
            metric_require_references(campaign=campaign, metrics=metrics)
        if compute:  # what cannot score now is refused when named, left out of "all" (``skipped`` says why)
            metrics, skipped = metrics_that_score(metrics, every=metric == "all" or metric == ["all"])
        wanted: list[str] | None = [m.name for m in metrics]
        if compute:
            campaign_metric_scores_compute(
                campaign=campaign, metrics=metrics, output_ids=[r.output_pk for r in rated]
            )
    else:
        wanted = None
    stored, signatures = campaign_metric_scores(campaign, metrics=wanted)
    names = [n for n in wanted if compute or n in signatures] if wanted is not None else metric_sorted(signatures)
    scores = {name: {pk: rows[name].value for pk, rows in stored.items() if name in rows} for name in names}
    result = rated_meta_evaluate(
        rated, scores, signatures=signatures, threshold=threshold, n_boot=n_boot, seed=seed, level=level
    )
    for name, report in metric_sensitivity(names, signatures=signatures).items():
        result["metrics"][name]["sensitivity"] = report
    return {
        "campaign": campaign.slug,
        **result,
        "outputs_excluded": len(rated_all) - len(rated),
        "excluded_systems": sorted(set(exclude_systems)),
        "excluded_sources_of": exclude_sources_of.slug if exclude_sources_of is not None else None,
        "skipped": skipped,
    }


def campaign_meta_evaluate_stored(
    *,
    campaign: Campaign,
    exclude_sources_of: Campaign | None = None,
    exclude_systems: Iterable[str] = (),
    n_boot: int = N_BOOT_DEFAULT,
    seed: int = 0,
    level: str = "both",
) -> dict[str, Any]:
    """Every stored metric against the campaign's humans (``campaign_meta_evaluate(metric=None,
    compute=False)`` without its ``comparison`` object): what the dashboard and the API show.

    A heavy read (a bootstrap of every metric): cached under the campaign's data version
    (``campaign_metrics_fingerprint``) and the parameters, and computed under ``core.heavy``'s gate.

    Raises:
        ServiceError: bad ``n_boot`` or systems (400); TooMany: the gate is taken (429).
    """
    n_boot_check(n_boot)
    level_check(level)
    systems = sorted(set(excluded_systems_check(list(exclude_systems))))
    version = campaign_metrics_fingerprint(campaign=campaign, exclude_sources_of=exclude_sources_of)
    key = "metrics:meta:" + request_key(campaign.pk, version, systems, n_boot, seed, level)

    def build() -> dict[str, Any]:
        result = campaign_meta_evaluate(campaign=campaign, metric=None, compute=False, n_boot=n_boot, seed=seed,
                                        exclude_sources_of=exclude_sources_of, exclude_systems=systems,
                                        level=level)
        result.pop("comparison")
        return result

    return heavy_cached(key, build)


def campaign_metric_points(
    *, campaign: Campaign, metric: str, exclude_systems: Iterable[str] = ()
) -> dict[str, Any]:
    """One stored metric against the human mean z per rated output (the dashboard's scatter plot).

    Returns:
        ``{"metric", "signature", "points": [{"output", "source", "system", "category", "value", "human"}],
        "human": "mean z"|aspect name}``; for multi-aspect campaigns ``human`` is each output's mean of its
        aspects' values (z where given).
    """
    rated = rated_outputs_filter(campaign_rated_outputs(campaign), exclude_systems=exclude_systems)
    stored, signatures = campaign_metric_scores(campaign, metrics=[metric])
    if metric not in signatures:
        raise ServiceError(f"no stored {metric!r} scores for campaign {campaign.slug!r} (score it first)",
                           field="metric")
    aspects = _aspect_values(rated)
    points = []
    for r, values in zip(rated, aspects, strict=True):
        row = stored.get(r.output_pk, {}).get(metric)
        human = r.mean_z if not values else math.fsum(values.values()) / len(values)
        if row is None or human is None:
            continue
        points.append({"output": r.output_pk, "source": r.source, "system": r.system, "category": r.category,
                       "value": row.value, "human": human})
    return {"metric": metric, "signature": signatures[metric],
            "human": "mean of aspects" if any(aspects) else "mean z", "points": points}


def meta_evaluation_single(result: Mapping[str, Any], name: str) -> dict[str, Any]:
    """One metric's part of a :func:`campaign_meta_evaluate` result, flat (today's ``--metric lens`` JSON)."""
    entry = result["metrics"][name]
    out: dict[str, Any] = {"metric": name, "campaign": result["campaign"], "kind": result["kind"],
                           "outputs": result["outputs"], "outputs_not_scored": result["outputs_not_scored"],
                           "outputs_excluded": result["outputs_excluded"],
                           "excluded_systems": result["excluded_systems"],
                           "excluded_sources_of": result["excluded_sources_of"],
                           "threshold": result["threshold"], "n_boot": result["n_boot"], **entry}
    if result["kind"] == "kendall":
        out["categories"] = list(CATEGORIES)
    out["level"] = result.get("level", "output")
    system = result.get("system")
    if system is not None:  # this metric's system-level figures, beside the humans' system means
        out["system"] = {"systems": system["systems"], "humans": system["humans"],
                         "human_means": system["human_means"], "n_boot": system["n_boot"],
                         **system["metrics"][name]}
    return out
