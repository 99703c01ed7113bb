"""Adaptive allocation's use of a live campaign (issue 45): its stored metric scores and its simulations.

:func:`campaign_allocation_scores` is the one reading of the campaign's stored scores of the metrics the
adaptive policy reads (newest signature of each of :data:`ALLOCATION_METRICS`, oriented so that higher is
better). :func:`campaign_source_priorities` (registered in ``metrics.apps`` as the priority provider through
which ``annotation`` hands out an adaptive campaign's slots) and :func:`campaign_allocation_study` (the
campaign as a simulator study, :func:`evaluation.services.allocation.campaign_study` with those scores) use it;
this app owns the scores, so both live here.

:func:`campaign_allocation_simulate` is the one simulation of a campaign: ``manage.py simulate_allocation``
calls it, and so does the research page's background job (:func:`campaign_allocation_start`, its API too).
Every bound is checked by :func:`allocation_request_check` before any work.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from annotation.models import Campaign, Output
from core.budgets import (
    ALLOCATION_POLICY_TEXT_MAX,
    ALLOCATION_SEEDS_MAX,
    allocation_seeds_check,
    allocation_work_check,
    bound_int,
)
from core.dispatch import task_send_on_commit
from core.errors import NotFound, ServiceError
from core.models import BackgroundJob
from core.selectors import background_job_done
from core.services import (
    background_job_finish,
    background_job_progress,
    background_job_queue,
    background_job_start,
    request_key,
)
from evaluation.selectors import campaign_counted_judgements
from evaluation.services.allocation import campaign_study
from metrics.models import MetricScore
from metrics.selectors import ALLOCATION_JOB_KIND, campaign_output_metric_scores

if TYPE_CHECKING:  # the simulator's policies import scipy: the functions that simulate import it when called
    from evaluation.allocation import Study

ALLOCATION_METRICS: tuple[str, ...] = ("sari", "bleu", "fkgl")
"""The metrics the adaptive policy was chosen with on SimpEval_past (experiments/README.md, "Adaptive
allocation"); whichever of them are stored for a campaign are used."""


def _higher_is_better(metric: str) -> bool:
    from metrics.suite import create_metric  # the registry, only when a campaign has scores to orient

    return bool(create_metric(metric).higher_is_better)


def campaign_allocation_scores(campaign: Campaign) -> dict[str, dict[int, float]]:
    """``{metric: {output pk: score}}`` for the stored :data:`ALLOCATION_METRICS` of the campaign (newest
    signature of each; FKGL, lower is simpler, negated); a metric with no stored score is left out."""
    scores: dict[str, dict[int, float]] = {}
    for metric in ALLOCATION_METRICS:
        values = campaign_output_metric_scores(campaign, metric)
        if values:
            sign = 1.0 if _higher_is_better(metric) else -1.0
            scores[metric] = {pk: sign * value for pk, value in values.items()}
    return scores


def campaign_allocation_study(campaign: Campaign) -> Study:
    """The campaign's counting ratings as a :class:`Study`, with its allocation metrics' scores where it has
    them (none stored: a study without metric scores)."""
    return campaign_study(campaign, metric_scores=campaign_allocation_scores(campaign) or None)


# --- A simulation of a campaign: the one function the command, the API and the page's job call --------------

ALWAYS_POLICIES: tuple[str, ...] = ("uniform", "adaptive")
"""Every simulation runs today's allocation and the recommended one, so each row can be read against both."""
SEEDS_MAX = ALLOCATION_SEEDS_MAX
"""Seeds per policy (``core.budgets``, with the other bounds that size work)."""
SUMMARY_KEYS: tuple[str, ...] = ("dataset", "policy", "seeds", "full_ratings", "ratings_to_tau95", "top1_accuracy")
"""A row of ``summary.json`` (issue 45): ``ratings_to_tau95`` holds ``median`` and ``p90``; ``top1_accuracy``
the shares of the full ratings ``"0.1"``, ``"0.2"``, ``"0.3"``, ``"0.5"``."""

Progress = Callable[[int, int], None]


def allocation_policies_check(names: str | Sequence[str], *, field: str = "policy") -> list[str]:
    """The policies to simulate: a comma list (or a list) of names of ``evaluation.allocation.POLICIES``,
    with ``uniform`` and ``adaptive`` added where missing (first, in that order), each once. An unknown
    name is refused with the known ones (400 on ``field``)."""
    from evaluation.allocation import POLICIES

    if isinstance(names, str):
        if len(names) > ALLOCATION_POLICY_TEXT_MAX:
            raise ServiceError(f"{field}: at most {ALLOCATION_POLICY_TEXT_MAX} characters of policy names", field=field,
                               reason=f"At most {ALLOCATION_POLICY_TEXT_MAX} characters of policy names.")
        names = names.split(",")
    given = [str(n).strip() for n in names if str(n).strip()]
    unknown = [n for n in given if n not in POLICIES]
    if unknown:
        shown = ", ".join(repr(n[:40]) for n in unknown[:5])
        raise ServiceError(f"{field}: unknown allocation policy {shown}; known: {', '.join(POLICIES)}",
                           field=field, reason=f"Unknown policy {shown}; known: {', '.join(POLICIES)}.")
    return list(dict.fromkeys([*ALWAYS_POLICIES, *given]))


def allocation_budget_check(budget: int | None, *, full: int, field: str = "budget") -> int:
    """The ratings each simulated campaign may reveal: 1 to the campaign's ``full`` ratings (None: all)."""
    if budget is None:
        return full
    return bound_int(budget, field=field, low=1, high=max(full, 1))


def campaign_counted_ratings(campaign: Campaign) -> int:
    """The cells a simulation of the campaign replays: its counting judgements (one query, no rows read)."""
    return campaign_counted_judgements(campaign).count()


def campaign_has_metric_scores(campaign: Campaign) -> bool:
    return MetricScore.objects.filter(output__source__campaign=campaign, metric__in=ALLOCATION_METRICS).exists()


@dataclass(frozen=True)
class AllocationRequest:
    """A checked request: policies (``uniform`` and ``adaptive`` included), seeds, and the budget in ratings."""

    policies: list[str]
    seeds: int
    budget: int
    full_ratings: int

    def params(self) -> dict[str, Any]:
        return {"policies": self.policies, "seeds": self.seeds, "budget": self.budget}


def allocation_request_check(
    campaign: Campaign, *, policies: str | Sequence[str], seeds: int, budget: int | None
) -> AllocationRequest:
    """Every bound of a simulation request, checked before any work (the command, the API and the page call
    it): policy names, seeds, budget, the work they add up to, and metric scores for the policies that
    need them. Raises ``ServiceError`` naming the field."""
    from evaluation.allocation.policies import METRIC_POLICIES

    names = allocation_policies_check(policies)
    seeds = allocation_seeds_check(seeds)
    full = campaign_counted_ratings(campaign)
    if full == 0:
        raise ServiceError(f"campaign {campaign.slug!r} has no submitted ratings to simulate", field="campaign",
                           reason="This campaign has no submitted ratings to simulate yet.")
    budget = allocation_budget_check(budget, full=full)
    allocation_work_check(policies=len(names), seeds=seeds, ratings=budget)
    need = [n for n in names if n in METRIC_POLICIES]
    if need and not campaign_has_metric_scores(campaign):
        raise ServiceError(
            f"policy: {', '.join(need)} read automatic metric scores and campaign {campaign.slug!r} has none "
            f"stored ({', '.join(ALLOCATION_METRICS)}): score it with metrics first, or leave them out",
            field="policy", reason=f"{', '.join(need)} need stored metric scores ({', '.join(ALLOCATION_METRICS)}): "
                                   "score the campaign with metrics first, or leave them out.")
    return AllocationRequest(policies=names, seeds=seeds, budget=budget, full_ratings=full)


@dataclass(frozen=True)
class AllocationResult:
    """A simulation's outcome: ``summary`` (``SUMMARY_KEYS`` rows, one per policy), ``details`` (the full
    summary rows: the median's interval, seeds that never reached tau 0.95, significant pairs recovered),
    ``curves`` (per policy) and the plot."""

    dataset: str
    full_ratings: int
    budget: int
    summary: list[dict[str, Any]]
    details: list[dict[str, Any]]
    curves: dict[str, Any]
    svg: str


def summary_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """The issue's row (``SUMMARY_KEYS``) of a full :func:`evaluation.allocation.summarise` row."""
    return {
        "dataset": row["dataset"], "policy": row["policy"], "seeds": row["seeds"], "full_ratings": row["full_ratings"],
        "ratings_to_tau95": {k: row["ratings_to_tau95"][k] for k in ("median", "p90")},
        "top1_accuracy": {k: row["top1_accuracy"][k] for k in ("0.1", "0.2", "0.3", "0.5")},
    }


def study_simulate(study: Study, request: AllocationRequest, *, progress: Progress | None = None) -> AllocationResult:
    """Replay ``study`` under each requested policy over its seeds (seed 0, 1, ...), at most ``budget``
    ratings each; ``progress(done, total)`` after each run."""
    from evaluation.allocation import Trace, Truth, curves, make_policy, simulate, summarise
    from evaluation.allocation.plot import svg_plot

    truth = Truth.of(study)
    total = len(request.policies) * request.seeds
    done = 0
    details, curve = [], {}
    for name in request.policies:
        traces: list[Trace] = []
        for seed in range(request.seeds):
            traces.append(simulate(study, make_policy(name), seed=seed, budget=request.budget, truth=truth))
            done += 1
            if progress is not None:
                progress(done, total)
        details.append({**summarise(study, name, traces), "budget": request.budget})
        curve[name] = curves(study, traces, upto=request.budget / study.full_ratings)
    return AllocationResult(
        dataset=study.name, full_ratings=study.full_ratings, budget=request.budget,
        summary=[summary_row(row) for row in details], details=details, curves=curve,
        svg=svg_plot(study.name, study.full_ratings, curve),
    )


def campaign_allocation_simulate(
    campaign: Campaign, *, policies: str | Sequence[str], seeds: int, budget: int | None = None,
    progress: Progress | None = None,
) -> AllocationResult:
    """Simulate allocation policies on the campaign's collected ratings (``manage.py simulate_allocation``
    and the research page's job): checks the request (:func:`allocation_request_check`), builds the study
    (:func:`campaign_allocation_study`) and replays it (:func:`study_simulate`)."""
    request = allocation_request_check(campaign, policies=policies, seeds=seeds, budget=budget)
    return study_simulate(campaign_allocation_study(campaign), request, progress=progress)


def allocation_write(result: AllocationResult, out_dir: Path) -> list[Path]:
    """``summary.json`` (the issue's rows), ``details.json`` (full rows), ``curves.json`` and ``curves.svg``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "summary.json": json.dumps(result.summary, indent=1) + "\n",
        "details.json": json.dumps(result.details, indent=1) + "\n",
        "curves.json": json.dumps({"dataset": result.dataset, "full_ratings": result.full_ratings,
                                   "budget": result.budget, "policies": result.curves}) + "\n",
        "curves.svg": result.svg,
    }
    paths = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


# --- The simulation as a worker job (research page, API) -----------------------------------------------------

ALLOCATION_TASK = "metrics.tasks.allocation_simulate_task"
"""The task that runs a queued simulation job (queued by name: services import no tasks)."""
PROGRESS_STEPS = 100
"""A job announces its progress at most this many times (each announcement is a write and a broadcast)."""


def allocation_job_dir(job_id: int) -> Path:
    return Path(settings.VAR_DIR) / "allocation" / f"job-{job_id}"


def campaign_allocation_start(
    campaign: Campaign, *, policies: str | Sequence[str], seeds: int, budget: int | None = None, owner: Any = None,
) -> BackgroundJob:
    """Check the request (:func:`allocation_request_check`), create an ``allocation`` job about the campaign
    and queue it for the worker (on commit). Its progress reaches the campaign's pages over the live feed
    (``background_job_announce``). The same request of the same ``owner`` still queued gets that job back; a
    user at their cap of queued jobs gets a 429 (``core.services.background_job_queue``)."""
    request = allocation_request_check(campaign, policies=policies, seeds=seeds, budget=budget)
    params = request.params()

    def send(job: BackgroundJob) -> None:
        folder = allocation_job_dir(job.pk)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "params.json").write_text(json.dumps(params), encoding="utf-8")
        task_send_on_commit(ALLOCATION_TASK, [job.pk])

    key = request_key(ALLOCATION_JOB_KIND, campaign.pk, getattr(owner, "pk", None), params)
    job, _ = background_job_queue(kind=ALLOCATION_JOB_KIND, subject=campaign, owner=owner, key=key, send=send,
                                  total=len(request.policies) * request.seeds)
    return job


def allocation_execute(*, job_id: int) -> AllocationResult:
    """Run a queued simulation job (the worker calls this, again after a worker died): simulate, write the
    files into the job's folder, end the job. A request no longer valid (ratings withdrawn under the budget)
    raises, and the task ends the job failed with the reason."""
    job = BackgroundJob.objects.get(pk=job_id)
    campaign = Campaign.objects.get(jobs=job)
    params = json.loads((allocation_job_dir(job_id) / "params.json").read_text(encoding="utf-8"))
    background_job_start(job_id=job_id, total=len(params["policies"]) * int(params["seeds"]))
    step = [0]

    def progress(done: int, total: int) -> None:
        at = done * PROGRESS_STEPS // max(total, 1)
        if at > step[0] or done == total:
            step[0] = at
            background_job_progress(job_id=job_id, done=done)

    result = campaign_allocation_simulate(campaign, policies=params["policies"], seeds=int(params["seeds"]),
                                          budget=params["budget"], progress=progress)
    allocation_write(result, allocation_job_dir(job_id))
    background_job_finish(job_id=job_id)
    return result


def allocation_job_result(job: BackgroundJob) -> dict[str, Any]:
    """What the page and the API show of a job: its state, parameters and, once done, the summary rows, the
    full rows and the plot (None until then)."""
    folder = allocation_job_dir(job.pk)
    out: dict[str, Any] = {
        "job": job.pk, "kind": job.kind, "status": job.status, "done": job.done, "total": job.total,
        "error": job.error, "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "params": {}, "summary": None, "details": None, "svg": None,
    }
    if (folder / "params.json").is_file():
        out["params"] = json.loads((folder / "params.json").read_text(encoding="utf-8"))
    if not background_job_done(job) or not (folder / "summary.json").is_file():
        return out
    out["summary"] = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    out["details"] = json.loads((folder / "details.json").read_text(encoding="utf-8"))
    out["svg"] = (folder / "curves.svg").read_text(encoding="utf-8")
    return out


def allocation_summary_json(job: BackgroundJob) -> str:
    """The finished job's ``summary.json`` as written (404 until it is done)."""
    path = allocation_job_dir(job.pk) / "summary.json"
    if not background_job_done(job) or not path.is_file():
        raise NotFound(f"simulation #{job.pk} has no summary yet (it is {job.status})")
    return path.read_text(encoding="utf-8")


# --- The adaptive hand-out's source priorities -------------------------------------------------------

def campaign_source_priorities(campaign: Campaign) -> dict[int, float] | None:
    """``{source pk: priority}`` for every non-tutorial source of the campaign, by the one rule of the
    allocation core (``metric_variance_priority``, plus its floor) over :func:`campaign_allocation_scores`
    (attention items and repeated sources left out; a repeat gets its original's priority); None when none
    of the allocation metrics is stored."""
    import numpy as np  # the numeric core only when a campaign is adaptive and scored

    from evaluation.allocation.policies import PRIORITY_FLOOR, metric_variance_priority

    scores = campaign_allocation_scores(campaign)
    if not scores:
        return None
    where = {
        pk: (source_id, system_id)
        for pk, source_id, system_id in Output.objects.filter(
            source__campaign=campaign, source__is_tutorial=False, source__repeat_of=None, qc_kind="",
        ).values_list("pk", "source_id", "system_id")
    }
    every = list(campaign.sources.filter(is_tutorial=False).order_by("order", "id").values_list("pk", "repeat_of"))
    sources = [pk for pk, repeat_of in every if repeat_of is None]
    metrics = sorted(scores)
    systems = sorted({system for _, system in where.values()})
    s_at = {pk: i for i, pk in enumerate(sources)}
    k_at = {pk: i for i, pk in enumerate(systems)}
    grid = np.full((len(metrics), len(sources), len(systems)), np.nan)
    for m, metric in enumerate(metrics):
        for output_id, value in scores[metric].items():
            place = where.get(output_id)
            if place is not None and place[0] in s_at:
                grid[m, s_at[place[0]], k_at[place[1]]] = value
    priority = metric_variance_priority(grid) + PRIORITY_FLOOR
    out = {pk: float(priority[i]) for i, pk in enumerate(sources)}
    for pk, repeat_of in every:  # a repeated source (quality control) comes with its original
        if repeat_of is not None:
            out[pk] = out.get(repeat_of, PRIORITY_FLOOR)
    return out


def campaign_allocation_after_scoring(*, campaign: Campaign, metrics: Iterable[str]) -> None:
    """After ``metrics`` were scored for the campaign: an adaptive campaign's priorities are recomputed when
    one of them is an allocation metric (the free slots' order follows at once)."""
    from annotation.services.allocation import campaign_allocation_refresh

    fresh = Campaign.objects.filter(pk=campaign.pk).values_list("allocation", flat=True).first()
    if fresh != Campaign.Allocation.ADAPTIVE or not set(metrics) & set(ALLOCATION_METRICS):
        return
    campaign.allocation = fresh
    campaign_allocation_refresh(campaign=campaign)
