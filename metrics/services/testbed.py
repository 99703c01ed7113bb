"""The perturbation testbed (APPLS) on an imported corpus: run it and write its tables and figures."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from annotation.rules import sentence_key
from annotation.selectors import corpus_get, corpus_rows
from core.budgets import (
    magnitudes_check,
    magnitudes_parse,
    metric_names_check,
    sample_check,
    seed_check,
    testbed_work_check,
)
from core.dispatch import task_send_on_commit
from core.errors import ServiceError
from core.events import job_group
from core.models import BackgroundJob
from core.services import (
    background_job_finish,
    background_job_progress,
    background_job_queue,
    background_job_start,
    request_key,
)
from metrics.models import KIND_LABELS, LearnedVersion
from metrics.perturb import REGISTRY
from metrics.perturb.figure import LENS_SYSTEMS
from metrics.perturb.plots import DASH, bar_panels, line_chart
from metrics.perturb.testbed import CorpusRow, Progress, TestbedResult, run_testbed, sample_rows, skipped_sentence
from metrics.selectors import TESTBED_JOB_KIND, learned_active_version
from metrics.services.learned import learned_training_source_keys
from metrics.services.metric_registry import metric_get, metric_stale, metrics_that_score
from metrics.services.pomme import pomme_lms_ensure
from metrics.services.sensitivity import metric_sensitivity_record
from metrics.suite import Metric, MetricError, available_metrics, create_metrics

SLOPE_KEYS = ("metric", "perturbation", "criterion", "slope", "p_holm", "expected_direction", "as_expected")


@dataclass(frozen=True)
class TestbedRun:
    result: TestbedResult
    out_dir: Path
    files: list[Path]
    seen_in_training: dict[str, int]
    """Per learned metric (LENS, REFEREE, SIERA version): how many of the sampled sources it trained on."""


def parse_magnitudes(text: str, *, field: str = "magnitudes") -> list[float]:
    """``"0,10,...,100"`` (or any comma list) -> magnitudes; ``...`` continues the step of the first two.
    Bounded (count, range, length) by ``core.budgets.magnitudes_parse`` before the list is built."""
    return magnitudes_parse(text, field=field)


def parse_rows(text: str | None, total: int) -> tuple[int, int]:
    if not text:
        return 0, total
    start, _, end = text.partition(":")
    try:
        a, b = int(start or 0), int(end or total)
    except ValueError:
        raise ServiceError(f"--rows {text!r}: give START:END line numbers (from 0)", field="rows",
                           reason=f"Give START:END line numbers from 0, e.g. 0:{total} (got {text[:40]!r}).") from None
    if not 0 <= a < b <= total:
        raise ServiceError(f"--rows {text!r}: must satisfy 0 <= START < END <= {total}", field="rows",
                           reason=f"START must be below END, and END at most {total}, the corpus's size "
                                  f"(got {text[:40]!r}).")
    return a, b


def perturbation_metric_names(names: Sequence[str]) -> list[str]:
    """The testbed's metric names: ``all`` = every suite metric and variant plus the active version of each
    learned metric that has one (``lens``, ``referee``, ``siera``).

    Learned versions come from the registry's providers: ``lens`` (the active version), ``lens:latest`` and
    ``lens:<id>``, and the same for ``referee`` and ``siera``, may also be named one by one.
    """
    out: list[str] = []
    for name in (n.strip() for n in names):
        if name == "all":
            # an active blend whose components changed scores nothing: "all" leaves it out
            active = [kind for kind in KIND_LABELS if learned_active_version(kind) is not None
                      and metric_stale(kind) is None]
            out.extend(n for n in [*available_metrics(), *active] if n not in out)
        elif name and name not in out:
            out.append(name)
    return metric_names_check(out)


def perturbation_metrics_check(names: Sequence[str]) -> None:
    """Refuse, before a run is queued, names the testbed cannot score: names of no metric, and learned
    versions that cannot score (none active, no such version, not succeeded, a blend whose components
    changed), with the registry's reason.

    Raises:
        ServiceError: on the field ``metrics`` (409 for a changed blend).
    """
    known = set(available_metrics())
    given = metric_names_check([n.strip() for n in names if n.strip()])
    learned = [n for n in given if n != "all" and n not in known and n.partition(":")[0] in KIND_LABELS]
    unknown = [n for n in given if n != "all" and n not in known and n not in learned]
    if not given or unknown:
        raise ServiceError(f"unknown metrics {unknown}; known: {', '.join(sorted(known))}, and the learned "
                           f"metrics {', '.join(KIND_LABELS)} (each also as <name>:latest or <name>:<version id>)",
                           field="metrics",
                           reason=(f"No metric is called {', '.join(unknown)}. " if unknown else "Name a metric. ")
                           + f"Known: {', '.join(sorted(known))}, all, and the learned metrics "
                             f"{', '.join(KIND_LABELS)} (each also as name:latest or name:version id).")
    metrics_that_score([metric_get(name, field="metrics") for name in learned], every=False, field="metrics")


def seen_in_training(metrics: Sequence[Metric], rows: Sequence[CorpusRow]) -> dict[str, int]:
    """How many of ``rows``' sources each learned metric among ``metrics`` trained on (by ``sentence_key``).
    Its slopes on those sources measure sentences it has seen, not only how it responds to a perturbation."""
    keys = {sentence_key(row.source) for row in rows}
    out: dict[str, int] = {}
    for metric in metrics:
        version = getattr(metric, "version", None)
        if isinstance(version, LearnedVersion):
            out[metric.name] = len(keys & learned_training_source_keys(version))
    return out


def testbed_run(
    *,
    dataset: str,
    metric_names: Sequence[str],
    out_dir: Path,
    magnitudes: Sequence[float],
    sample: int | None = None,
    seed: int = 0,
    rows: str | None = None,
    perturbations: Sequence[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> TestbedRun:
    """Run the testbed on the imported corpus ``dataset`` and write ``out_dir``'s files.

    Raises:
        NotFound: the corpus has not been imported.
        ServiceError: bad metric names, magnitudes, rows, perturbations, or a metric that cannot score.
    """
    corpus = corpus_get(name=dataset)
    all_rows = [CorpusRow(i, s, tuple(r)) for i, s, r in corpus_rows(corpus=corpus)]
    start, end = parse_rows(rows, len(all_rows))
    magnitudes = magnitudes_check(magnitudes)
    chosen = sample_rows(all_rows[start:end], sample=sample_check(sample), seed=seed_check(seed))
    if not chosen:
        raise ServiceError(f"corpus {dataset!r} has no source with two references or more in rows {start}:{end}")
    unknown = [p for p in perturbations or () if p not in REGISTRY]
    if unknown:
        raise ServiceError(f"unknown perturbations {unknown}; known: {', '.join(REGISTRY)}", field="perturbations")
    names = perturbation_metric_names(metric_names)
    testbed_work_check(sources=len(chosen), magnitudes=len(magnitudes), metrics=len(names))
    if "pomme" in names:
        pomme_lms_ensure()
    try:
        metrics = create_metrics(names, options)
        result = run_testbed(
            chosen, metrics, magnitudes=magnitudes, perturbations=perturbations, seed=seed, progress=progress
        )
    except MetricError as exc:
        raise ServiceError(str(exc), field="metrics") from None
    seen = seen_in_training(metrics, chosen)
    config = {
        "dataset": dataset,
        "rows": f"{start}:{end}",
        "sample": len(chosen),
        "seed": seed,
        "magnitudes": list(magnitudes),
        "metrics": [m.name for m in metrics],
        "seen_in_training": seen,
    }
    files = write_outputs(result, out_dir, config)
    metric_sensitivity_record(
        slopes=result.slopes, signatures=result.signatures,
        run={k: config[k] for k in ("dataset", "rows", "sample", "seed", "magnitudes")}, seen_in_training=seen,
        sanity=result.sanity,
    )
    return TestbedRun(result, out_dir, files, seen)


def write_outputs(result: TestbedResult, out_dir: Path, config: dict[str, Any]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "plots").mkdir(exist_ok=True)
    files = []
    slopes = [
        {**{k: row.to_dict()[k] for k in SLOPE_KEYS}, "p": row.p, "n": row.n, "intercept": row.intercept}
        for row in result.slopes
    ]
    path = out_dir / "slopes.json"
    path.write_text(json.dumps(slopes, indent=1), encoding="utf-8")
    files.append(path)
    path = out_dir / "summary.json"
    path.write_text(json.dumps(result.summary(config), indent=1), encoding="utf-8")
    files.append(path)
    path = out_dir / "slopes.tsv"
    path.write_text(slope_table_text(result), encoding="utf-8")
    files.append(path)
    styles = {name: DASH[p.criterion] for name, p in REGISTRY.items()}
    for metric, per in result.means.items():
        path = out_dir / "plots" / f"{metric.replace(':', '_')}.svg"
        path.write_text(line_chart(f"{metric}: mean score by perturbation", per, styles=styles), encoding="utf-8")
        files.append(path)
    path = out_dir / "lens_figure2.svg"
    title = "LENS Figure 2: mean ± sd of each metric (Copy, Drop 10%, Scramble 5%, Split, Human)"
    path.write_text(bar_panels(title, result.lens_figure, LENS_SYSTEMS), encoding="utf-8")
    files.append(path)
    return files


def slope_table_text(result: TestbedResult) -> str:
    """APPLS Table 7's layout: perturbations down, metrics across; '*' = significant in the expected way."""
    metrics = list(dict.fromkeys(row.metric for row in result.slopes))
    cells = {(row.metric, row.perturbation): row for row in result.slopes}
    lines = ["criterion\tperturbation\t" + "\t".join(metrics)]
    for name, perturbation in REGISTRY.items():
        values = []
        for metric in metrics:
            row = cells.get((metric, name))
            values.append("-" if row is None else f"{row.slope:.3g}{'*' if row.as_expected else ''}")
        lines.append(f"{perturbation.criterion}\t{name}\t" + "\t".join(values))
    return "\n".join(lines) + "\n"


# --- the testbed as a worker job (research page) ------------------------------------------------------------


TESTBED_TASK = "metrics.tasks.testbed_run_task"
"""The task that runs a queued testbed job (queued by name: services import no tasks)."""


def testbed_group(job_id: int) -> str:
    """The group of a testbed job's events: its job's, where ``core.services`` announces each step and the
    end (``job.progress``), a failure included."""
    return job_group(job_id)


def testbed_job_dir(job_id: int) -> Path:
    return Path(settings.VAR_DIR) / "testbed" / f"job-{job_id}"


def testbed_start(
    *,
    dataset: str,
    metric_names: Sequence[str],
    magnitudes: Sequence[float],
    sample: int | None,
    seed: int,
    rows: str | None = None,
    owner: Any = None,
) -> BackgroundJob:
    """Check the request against its budgets (``core.budgets``), create a ``testbed`` job about the corpus
    and queue it for the worker (on commit). The job belongs to ``owner``, who alone, with the admins, sees it
    (``testbed_job_list_for``). The same request of the same ``owner`` still queued gets that job back; a user
    at their cap of queued jobs gets a 429 (``core.services.background_job_queue``)."""
    corpus = corpus_get(name=dataset)
    magnitudes = magnitudes_check(magnitudes)
    sample_check(sample)
    seed_check(seed)
    perturbation_metrics_check(metric_names)
    start, end = parse_rows(rows, corpus.items.count())
    sources = min(sample, end - start) if sample is not None else end - start
    testbed_work_check(sources=sources, magnitudes=len(magnitudes),
                       metrics=len(perturbation_metric_names(metric_names)))
    params = {"dataset": dataset, "metrics": list(metric_names), "magnitudes": list(magnitudes), "sample": sample,
              "seed": seed, "rows": rows}

    def send(job: BackgroundJob) -> None:
        folder = testbed_job_dir(job.pk)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "params.json").write_text(json.dumps(params), encoding="utf-8")
        task_send_on_commit(TESTBED_TASK, [job.pk])

    key = request_key(TESTBED_JOB_KIND, getattr(owner, "pk", None), params)
    job, _ = background_job_queue(kind=TESTBED_JOB_KIND, subject=corpus, owner=owner, key=key, send=send)
    return job


def testbed_execute(*, job_id: int) -> TestbedRun:
    """Run a queued testbed job (the worker calls this); its progress is announced to ``testbed_group``."""
    params = json.loads((testbed_job_dir(job_id) / "params.json").read_text(encoding="utf-8"))
    background_job_start(job_id=job_id)
    stages: dict[str, tuple[int, int]] = {}
    totals: list[int] = []

    def progress(stage: str, done: int, total: int) -> None:
        stages[stage] = (done, total)
        done_all = sum(d for d, _ in stages.values())
        total_all = sum(t for _, t in stages.values()) + (0 if "score" in stages else len(params["metrics"]))
        if not totals or totals[-1] != total_all:  # known once the sample is drawn, and again once "all" expands
            totals.append(total_all)
            background_job_start(job_id=job_id, total=total_all)
        background_job_progress(job_id=job_id, done=done_all)

    run = testbed_run(
        dataset=params["dataset"],
        metric_names=params["metrics"],
        out_dir=testbed_job_dir(job_id),
        magnitudes=params["magnitudes"],
        sample=params["sample"],
        seed=params["seed"],
        rows=params["rows"],
        progress=progress,
    )
    skipped = {k: v for k, v in run.result.skipped.items() if v}
    background_job_finish(job_id=job_id, note=skipped_sentence(skipped))
    return run


def testbed_job_results(job: BackgroundJob) -> dict[str, Any]:
    """What the research page shows of a job: its parameters and, once done, slopes and figures."""
    folder = testbed_job_dir(job.pk)
    out: dict[str, Any] = {"params": {}, "slopes": [], "summary": {}, "plots": {}, "figure": ""}
    if (folder / "params.json").is_file():
        out["params"] = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    if job.finished_at is None or not (folder / "slopes.json").is_file():  # written only by a finished run
        return out
    out["slopes"] = json.loads((folder / "slopes.json").read_text(encoding="utf-8"))
    out["summary"] = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    out["plots"] = {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / "plots").glob("*.svg"))}
    figure = folder / "lens_figure2.svg"
    out["figure"] = figure.read_text(encoding="utf-8") if figure.is_file() else ""
    return out
