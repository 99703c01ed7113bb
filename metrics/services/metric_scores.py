"""Suite metric scores of campaign outputs: computed once per (metric signature, output), stored, reread.

``campaign_metric_scores_compute`` scores what is missing or stale (stored under another signature) and
stores it in ``MetricScore``; ``campaign_metric_scores_queue`` does the same on the worker, one
``BackgroundJob`` per queue (BERTScore and the learned metrics go to the ``gpu`` queue when
``METRIC_GPU_QUEUE`` names one); ``campaign_lens_rescore`` queues one LENS version's.  This is the one
store of metric scores: a learned version's are stored under ``<kind>:<version id>``.  Items are
``{complex: the source text, output: the output text as the campaign stores it, references: the source's
references}``.  Outputs a metric cannot score (no references for a metric that
needs them; an empty output for LENS) are counted as skipped, never stored.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings
from django.db import transaction

from annotation.models import Campaign, Output
from core.budgets import metric_names_check
from core.csvsafe import csv_writer
from core.dispatch import task_send_on_commit
from core.errors import Conflict, ServiceError
from core.models import BackgroundJob
from core.services import (
    background_job_finish,
    background_job_progress,
    background_job_queue,
    background_job_start,
    request_key,
)
from evaluation.services.report import campaign_report
from metrics.models import LearnedVersion, MetricScore
from metrics.selectors import SCORE_JOB_KIND, campaign_lens_leaderboard, campaign_references, lens_active_version
from metrics.services.allocation import campaign_allocation_after_scoring
from metrics.services.metric_registry import (
    PRODUCT_METRICS,
    metric_get,
    metric_is_accelerated,
    metrics_get,
    metrics_that_score,
)
from metrics.services.scoring import MAX_ITEMS, MAX_REFERENCES, MAX_TEXT_CHARS, lens_version_for_scoring
from metrics.suite import Item, Metric, MetricError

SCORE_BATCH = 256
METRIC_SCORES_TASK = "metrics.tasks.metric_scores_run"


@dataclass
class MetricScoring:
    """What one scoring pass did, per metric name."""

    scored: dict[str, int] = field(default_factory=dict)  # newly computed (missing or stale)
    reused: dict[str, int] = field(default_factory=dict)  # already stored under the current signature
    skipped: dict[str, int] = field(default_factory=dict)  # not scoreable (no references, empty output)

    def note(self) -> str:
        parts = [f"{name}: {n} output(s) not scored" for name, n in self.skipped.items() if n]
        return "; ".join(parts)


def campaign_metric_items(campaign: Campaign, output_ids: Iterable[int] | None = None) -> list[tuple[int, Item]]:
    """The campaign's outputs (all, or those of ``output_ids``) as the items a metric scores, in source order:
    (output id, Item(source text, output text, the source's references))."""
    references = campaign_references(campaign)
    query = Output.objects.filter(source__campaign=campaign).order_by("source__order", "source_id", "row_index", "id")
    if output_ids is not None:
        query = query.filter(pk__in=list(output_ids))
    return [
        (pk, Item(complex_text, text, tuple(references.get(source_id, ()))))
        for pk, source_id, complex_text, text in query.values_list("pk", "source_id", "source__text", "text")
    ]


def _scoreable(metric: Metric, item: Item) -> bool:
    if metric.needs_references and not item.references:
        return False
    if not item.output.strip() and not getattr(metric, "scores_empty_outputs", True):
        return False
    return not (metric.needs_complex and not item.complex.strip())


def metric_require_references(*, campaign: Campaign, metrics: Sequence[Metric]) -> None:
    """A 400 naming the metric when the campaign has no references at all and the metric needs them."""
    needing = [m.name for m in metrics if m.needs_references]
    if needing and not campaign_references(campaign):
        raise ServiceError(
            f"{', '.join(needing)} need(s) references, but campaign {campaign.slug!r} has none "
            "(import them with --references SRC DST, or choose fkgl)", field="metric",
        )


def campaign_metric_scores_compute(
    *,
    campaign: Campaign,
    metrics: Sequence[Metric],
    output_ids: Iterable[int] | None = None,
    job: BackgroundJob | None = None,
) -> MetricScoring:
    """Score every output of ``campaign`` (or ``output_ids``) that has no current score, and store it."""
    items = campaign_metric_items(campaign, output_ids)
    result = MetricScoring()
    pending: list[tuple[Metric, list[tuple[int, Item]]]] = []
    for metric in metrics:
        signature = metric.signature
        current = set(
            MetricScore.objects.filter(
                metric=metric.name, signature=signature, output_id__in=[pk for pk, _ in items]
            ).values_list("output_id", flat=True)
        )
        todo = [(pk, item) for pk, item in items if pk not in current and _scoreable(metric, item)]
        result.reused[metric.name] = len(current)
        result.skipped[metric.name] = sum(1 for pk, item in items if pk not in current and not _scoreable(metric, item))
        pending.append((metric, todo))
    total = sum(len(todo) for _, todo in pending)
    if job is not None:
        background_job_start(job_id=job.pk, total=total)
    done = 0
    for metric, todo in pending:
        signature = metric.signature
        for start in range(0, len(todo), SCORE_BATCH):
            chunk = todo[start : start + SCORE_BATCH]
            try:
                scores = metric.score_batch(
                    [item for _, item in chunk], labels=[f"output {pk}" for pk, _ in chunk], allow_empty=True
                )
            except MetricError as exc:
                raise ServiceError(str(exc), field="metric") from None
            MetricScore.objects.bulk_create(
                [
                    MetricScore(output_id=pk, metric=metric.name, signature=signature, value=score.value,
                                components=dict(score.components))
                    for (pk, _), score in zip(chunk, scores, strict=True)
                ],
                update_conflicts=True, unique_fields=["output", "metric"],
                update_fields=["signature", "value", "components", "created_at"],
            )
            done += len(chunk)
            if job is not None:
                background_job_progress(job_id=job.pk, done=done)
        result.scored[metric.name] = len(todo)
    campaign_allocation_after_scoring(campaign=campaign, metrics=[metric.name for metric in metrics])
    if job is not None:
        background_job_finish(job_id=job.pk, done=done, note=result.note())
    return result


def metric_queue(metric: Metric) -> str:
    """The Celery queue a metric's scoring runs on: ``METRIC_GPU_QUEUE`` for BERTScore and LENS, if set."""
    gpu = getattr(settings, "METRIC_GPU_QUEUE", "")
    return gpu if gpu and metric_is_accelerated(metric) else "default"


class ScoresQueued(NamedTuple):
    """What :func:`campaign_metric_scores_queue` queued: one job per queue, and the metrics ``all`` named that
    cannot score now, each with why (a blend whose components changed since it was trained)."""

    jobs: list[BackgroundJob]
    skipped: dict[str, str]


def campaign_metric_scores_queue(
    *, campaign: Campaign, metric: str | Sequence[str] = "all", owner: Any = None
) -> ScoresQueued:
    """Queue the scoring of a campaign's outputs with ``metric`` (names, or ``all``): one job per queue,
    asked for by ``owner`` (a user, counted in their job budget; none: a command). The same scoring still
    queued is not queued twice: its job is returned instead. A learned version that cannot score (a blend
    whose components changed) is refused when named, and left out of ``all`` (``skipped`` says why).

    Raises:
        TooMany: ``owner`` has as many jobs queued or running as allowed (429); Conflict: the platform has, or
        a named blend's components changed since it was trained (409).
    """
    names = [n.strip() for n in (metric.split(",") if isinstance(metric, str) else metric) if n.strip()]
    metric_names_check(names, field="metric")
    metrics = metrics_get(metric)
    metric_require_references(campaign=campaign, metrics=[m for m in metrics if metric != "all"])
    metrics, stale = metrics_that_score(metrics, every="all" in names)
    by_queue: dict[str, list[str]] = {}
    for m in metrics:
        if m.needs_references and not campaign_references(campaign):
            continue  # "all" on a campaign without references: the metrics that need none
        by_queue.setdefault(metric_queue(m), []).append(m.name)
    total = Output.objects.filter(source__campaign=campaign).count()
    jobs: list[BackgroundJob] = []
    with transaction.atomic():
        for queue, names in by_queue.items():

            def send(job: BackgroundJob, names: list[str] = names, queue: str = queue) -> None:
                task_send_on_commit(METRIC_SCORES_TASK, [job.pk, names], queue=queue)

            job, _ = background_job_queue(kind=SCORE_JOB_KIND, subject=campaign, total=total * len(names),
                                          owner=owner, key=request_key(SCORE_JOB_KIND, campaign.pk, queue, names),
                                          send=send)
            jobs.append(job)
    return ScoresQueued(jobs, stale)


def campaign_lens_rescore(
    *, campaign: Campaign, version: LearnedVersion | None = None, owner: Any = None
) -> BackgroundJob:
    """Queue the scoring of a campaign's outputs with a LENS version (default: the active one), stored under
    its metric name ``lens:<id>`` like every metric's scores; outputs already scored under the metric's
    current signature are kept. Returns the job.

    Raises:
        ServiceError: No active version, or the version has not succeeded (409); the campaign has no
            references (400).
    """
    version = version or lens_version_for_scoring()
    if version.status != LearnedVersion.Status.SUCCEEDED:
        raise Conflict(f"LENS v{version.pk} is {version.status}; only succeeded versions can score")
    return campaign_metric_scores_queue(campaign=campaign, metric=version.metric_name, owner=owner).jobs[0]


# --- Reading stored scores ------------------------------------------------------------------------------


class StoredScore(NamedTuple):
    value: float
    signature: str
    components: dict[str, float]


def campaign_metric_scores(
    campaign: Campaign, *, metrics: Sequence[str] | None = None
) -> tuple[dict[int, dict[str, StoredScore]], dict[str, str]]:
    """Stored scores of a campaign, read as flat values: ``({output pk: {metric: score}}, {metric: signature})``.

    A metric stored under several signatures (a change not yet rescored) shows its newest one only.
    """
    query = MetricScore.objects.filter(output__source__campaign=campaign).order_by("metric", "-created_at", "-id")
    if metrics is not None:
        query = query.filter(metric__in=list(metrics))
    rows = list(query.values_list("output_id", "metric", "signature", "value", "components"))
    signatures: dict[str, str] = {}
    for _, metric, signature, _, _ in rows:
        signatures.setdefault(metric, signature)
    by_output: dict[int, dict[str, StoredScore]] = {}
    for output_id, metric, signature, value, components in rows:
        if signature == signatures[metric]:
            by_output.setdefault(output_id, {})[metric] = StoredScore(value, signature, components or {})
    return by_output, signatures


def campaign_metric_scores_panel(campaign: Campaign) -> dict[str, Any]:
    """What the dashboard's "Metrics vs humans" panel needs besides its API: stored metrics, latest jobs."""
    names = MetricScore.objects.filter(output__source__campaign=campaign).order_by().values_list("metric", flat=True)
    stored = metric_sorted(names.distinct())
    jobs = list(campaign.jobs.filter(kind=SCORE_JOB_KIND).order_by("-created_at", "-id")[:2])
    return {"metrics": stored, "jobs": jobs, "has_references": bool(campaign_references(campaign))}


def campaign_lens_beside_human(campaign: Campaign) -> dict[str, Any]:
    """What the research dashboard shows of LENS: the active version's system means next to the human ones.

    Returns:
        ``{"version": LearnedVersion | None, "job": the latest metric-scoring job or None, "rows": [{"system",
        "lens", "lens_z", "outputs", "lens_rank", "human_z", "human_rank"}] (LENS order), "spearman": rank
        correlation of the two system orders (None with fewer than 3 systems in both)}``.
    """
    version = lens_active_version()
    job = campaign.jobs.filter(kind=SCORE_JOB_KIND).order_by("-created_at", "-id").first()
    rows = campaign_lens_leaderboard(campaign, version) if version is not None else []
    spearman = None
    if rows:
        human = {row["system"]: row for row in campaign_report(campaign=campaign)["systems"]}
        ranked_human = [name for name, row in human.items() if row.get("z_mean") is not None]
        ranked_human.sort(key=lambda name: -float(human[name]["z_mean"]))
        human_rank = {name: i + 1 for i, name in enumerate(ranked_human)}
        for i, row in enumerate(rows):
            row["lens_rank"] = i + 1
            row["human_z"] = human.get(row["system"], {}).get("z_mean")
            row["human_rank"] = human_rank.get(row["system"])
        both = [row for row in rows if row["human_rank"] is not None]
        if len(both) >= 3:
            from scipy.stats import spearmanr  # scipy (~1 s) only for this comparison

            value = spearmanr([row["lens"] for row in both], [row["human_z"] for row in both]).statistic
            spearman = None if math.isnan(value) else float(value)
    return {"version": version, "job": job, "rows": rows, "spearman": spearman}


def _metric_sort_key(name: str) -> tuple[int, str]:
    return (PRODUCT_METRICS.index(name), name) if name in PRODUCT_METRICS else (len(PRODUCT_METRICS), name)


def metric_sorted(names: Iterable[str]) -> list[str]:
    """Metric names in the product's order (the baselines as the papers list them, then LENS versions)."""
    return sorted(names, key=_metric_sort_key)


def campaign_scores_csv(*, campaign: Campaign) -> str:
    """Scores CSV: ``output_id, source, system, <metric>...``; signatures in ``#`` header comment lines."""
    by_output, signatures = campaign_metric_scores(campaign)
    names = metric_sorted(signatures)
    buffer = io.StringIO()
    buffer.write(f"# campaign: {campaign.slug}\n")
    for name in names:
        buffer.write(f"# {name}: {signatures[name]}\n")
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(["output_id", "source", "system", *names])
    outputs = Output.objects.filter(source__campaign=campaign).order_by("source__order", "source_id", "row_index", "id")
    for pk, source, system in outputs.values_list("pk", "source__external_id", "system__name"):
        stored = by_output.get(pk, {})
        writer.writerow([pk, source, system, *[repr(stored[n].value) if n in stored else "" for n in names]])
    return buffer.getvalue()


def export_scores(campaign: Any) -> dict[int, dict[str, Any]]:
    """Each output's stored scores for the JSONL export (registered in ``MetricsConfig.ready``)."""
    by_output, _ = campaign_metric_scores(campaign)
    return {
        pk: {
            "scores": {
                name: {"value": row.value, "signature": row.signature,
                       **({"components": row.components} if row.components else {})}
                for name, row in sorted(rows.items())
            }
        }
        for pk, rows in by_output.items()
    }



# --- Ad-hoc batches (the API) ---------------------------------------------------------------------------


def metric_score_batch(*, metric: str, items: Any) -> dict[str, Any]:
    """Score ``[{complex, output, references}]`` with ``metric``; every bad input is a 400 naming where.

    Returns:
        ``{"metric", "signature", "higher_is_better", "results": [{"value", "components"}]}``.
    """
    scorer = metric_get(metric)
    if not isinstance(items, list) or not items:
        raise ServiceError("items: send a non-empty list of {complex, output, references} objects", field="items")
    if len(items) > MAX_ITEMS:
        raise ServiceError(f"items: at most {MAX_ITEMS} per request (got {len(items)}); split the batch",
                           field="items")
    batch: list[Item] = []
    for i, raw in enumerate(items):
        where = f"items[{i}]"
        try:
            item = Item.from_mapping(raw, where=where)
        except MetricError as exc:
            raise ServiceError(str(exc), field="items") from None
        if not item.output.strip():
            raise ServiceError(f"{where}.output is empty", field="items")
        if len(item.references) > MAX_REFERENCES:
            raise ServiceError(f"{where}.references: at most {MAX_REFERENCES}", field="items")
        for label, text in [("complex", item.complex), ("output", item.output),
                            *((f"references[{j}]", r) for j, r in enumerate(item.references))]:
            if len(text) > MAX_TEXT_CHARS:
                raise ServiceError(f"{where}.{label}: {len(text)} characters, the limit is {MAX_TEXT_CHARS}",
                                   field="items")
        batch.append(item)
    try:
        scores = scorer.score_batch(batch, labels=[f"items[{i}]" for i in range(len(batch))])
    except MetricError as exc:
        raise ServiceError(str(exc), field="items") from None
    return {
        "metric": scorer.name,
        "signature": scorer.signature,
        "higher_is_better": scorer.higher_is_better,
        "results": [{"value": s.value, "components": dict(s.components)} for s in scores],
    }
