"""A metric's perturbation-sensitivity report (APPLS) as part of its registry entry.

A testbed run records, per metric it scored, the row of slopes it found (one per perturbation: slope,
Holm-adjusted p, whether the metric moved as a good metric should) with the run's dataset, sample and
seed; a later run replaces that metric's whole row.  :func:`metric_sensitivity` reads the reports back for
the metric comparison (``meta_evaluate``, its API and the dashboard's "Metrics vs humans" panel), which
shows them beside the metrics' agreement with humans.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction

from evaluation.stats.slopes import SlopeRow, sensitivity_summary
from metrics.models import MetricSensitivity
from metrics.perturb.sanity import sanity_text

CELL_KEYS = ("perturbation", "criterion", "slope", "p_holm", "expected_direction", "as_expected", "n")


def metric_sensitivity_record(
    *, slopes: Sequence[SlopeRow], signatures: Mapping[str, str], run: Mapping[str, Any],
    seen_in_training: Mapping[str, int] | None = None, sanity: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[str]:
    """Store each scored metric's row of slopes as its sensitivity report, replacing its previous one.

    Args:
        slopes: The testbed's slope table (every metric x perturbation).
        signatures: Metric name -> the signature it scored under.
        run: What the report was measured on (``dataset``, ``rows``, ``sample``, ``seed``, ``magnitudes``).
        seen_in_training: Learned metric name -> how many of the sampled sources it trained on (kept in
            that metric's ``run``).
        sanity: Metric name -> its sanity checks (``metrics.perturb.sanity.sanity_evaluate``), kept with the
            run and read back as the report's ``sanity``.

    Returns:
        The metric names recorded.
    """
    by_metric: dict[str, list[SlopeRow]] = defaultdict(list)
    for row in slopes:
        by_metric[row.metric].append(row)
    with transaction.atomic():
        MetricSensitivity.objects.filter(metric__in=list(by_metric)).delete()
        MetricSensitivity.objects.bulk_create(
            MetricSensitivity(
                metric=name, signature=signatures.get(name, ""), perturbation=row.perturbation,
                criterion=row.criterion, slope=row.slope, p_holm=row.p_holm,
                expected_direction=row.expected_direction, as_expected=row.as_expected, n=row.n,
                run=_run_of(name, run, seen_in_training or {}, (sanity or {}).get(name)),
            )
            for name, rows in by_metric.items()
            for row in rows
        )
    return list(by_metric)


def _run_of(
    name: str, run: Mapping[str, Any], seen: Mapping[str, int], sanity: Mapping[str, Any] | None
) -> dict[str, Any]:
    out = {**run, "seen_in_training": seen[name]} if name in seen else dict(run)
    if sanity is not None:
        out["sanity"] = dict(sanity)
    return out


def sensitivity_run_text(run: Mapping[str, Any]) -> str:
    """What a report was measured on, in words: ``"asset-valid, 100 sources, seed 13"``, and for a learned
    metric that trained on some of them, how many."""
    text = f"{run.get('dataset')}, {run.get('sample')} sources, seed {run.get('seed')}"
    seen = run.get("seen_in_training")
    if seen:
        text += f"; {seen} of them seen in training"
    return text


def metric_sensitivity(names: Iterable[str], *, signatures: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The stored sensitivity report of each of ``names`` (``None`` for a metric no testbed run has scored).

    A report: ``{"responds_as_expected": "informativeness 3/3, coherence 1/1, ...", "criteria": {criterion:
    {"as_expected", "total"}}, "perturbations": [{perturbation, criterion, slope, p_holm, expected_direction,
    as_expected, n}], "sanity", "sanity_text", "signature", "current", "run", "measured_on"}``; ``sanity`` is
    the run's sanity checks of the metric (``metrics.perturb.sanity.sanity_evaluate``; ``None`` from a run
    before them); ``measured_on`` is the run in words (``sensitivity_run_text``),
    ``current`` is False when ``signatures`` gives the metric another signature than the one the testbed
    scored (the report then describes an older variant).
    """
    wanted = list(dict.fromkeys(names))
    rows: dict[str, list[MetricSensitivity]] = defaultdict(list)
    for cell in MetricSensitivity.objects.filter(metric__in=wanted).order_by("id"):
        rows[cell.metric].append(cell)
    out: dict[str, Any] = {}
    for name in wanted:
        cells = rows.get(name)
        if not cells:
            out[name] = None
            continue
        detail = [{key: getattr(cell, key) for key in CELL_KEYS} for cell in cells]
        summary = sensitivity_summary(detail)
        signature = cells[0].signature
        run = dict(cells[0].run)
        sanity = run.pop("sanity", None)
        out[name] = {
            "responds_as_expected": summary["text"],
            "criteria": summary["criteria"],
            "perturbations": detail,
            "signature": signature,
            "current": signatures is None or signatures.get(name) in (None, signature),
            "sanity": sanity,
            "sanity_text": sanity_text(sanity),
            "run": run,
            "measured_on": sensitivity_run_text(run),
            "measured_at": max(cell.created_at for cell in cells).isoformat(),
        }
    return out
