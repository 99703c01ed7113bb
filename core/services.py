"""Background-job bookkeeping: the only code that writes a ``BackgroundJob``.

A service that does long work creates the job (``background_job_create``) and queues its task after
commit; the work reports ``background_job_start`` / ``background_job_progress`` / ``background_job_finish``;
the task's failure path (``core.tasks.BackgroundJobTask``) calls ``background_job_fail``.
Progress writes are single ``UPDATE`` statements, so a page polling the row never blocks the worker. Each of
them, and a retry or a reap, announces the job's state (``job.progress``, :func:`background_job_announce`)
to the job's group and its subject's (a campaign's dashboard), so open pages follow it without a reload.

Delivery survives a killed worker: the task claims the job (``background_job_claim``: which task, which
worker) and beats a heartbeat while it runs; ``background_job_reap`` (run when a worker starts and every
minute inside it) finds jobs left ``running`` by a worker that restarted or went silent and queues them
again, or, after ``JOB_MAX_ATTEMPTS`` starts, ends them failed with a message saying to retry;
``background_job_retry`` (dashboard, admin) queues a failed job again.

Claim, heartbeat and reap are written once (``work_claim``, ``work_heartbeat``, ``work_reap``) for every
kind of background work, each described by a ``Delivery``: background jobs here (``JOBS``), and other apps'
work rows (learned-metric training runs) registered with ``delivery_register`` so that every worker's
reaper (``work_reap_all``) handles them too.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.dispatch import task_send_on_commit
from core.errors import Conflict, ServiceError, TooMany
from core.events import broadcast, job_group, subject_group
from core.models import BackgroundJob

logger = logging.getLogger(__name__)


def background_job_create(
    *, kind: str, subject: models.Model | None = None, total: int = 0, owner: Any = None, request_key: str = ""
) -> BackgroundJob:
    """A queued job about ``subject`` (any saved model instance, or none), asked for by ``owner`` (a user, or
    none). It is not checked against any budget: a request's job goes through :func:`background_job_queue`."""
    job = BackgroundJob(kind=kind, total=total, owner=owner, request_key=request_key)
    if subject is not None:
        job.subject_type = ContentType.objects.get_for_model(subject)
        job.subject_id = subject.pk
    job.save()
    return job


def background_job_announce(*, job_id: int) -> None:
    """Tell the pages of the job (``job_group``) and of its subject (``subject_group``: a campaign's dashboard)
    its state: ``{"event": "job.progress", "job", "kind", "status", "done", "total", "error"}``."""
    row = (BackgroundJob.objects.filter(pk=job_id)
           .values("kind", "status", "done", "total", "error", "subject_type__model", "subject_id").first())
    if row is None:
        return
    payload = {"event": "job.progress", "job": job_id, "kind": row["kind"], "status": row["status"],
               "done": row["done"], "total": row["total"], "error": row["error"]}
    broadcast(job_group(job_id), payload)
    if row["subject_type__model"] and row["subject_id"] is not None:
        broadcast(subject_group(row["subject_type__model"], row["subject_id"]), payload)


def background_job_start(*, job_id: int, total: int | None = None) -> None:
    """The job runs; ``total`` is how many items it will go through, when known now."""
    fields: dict[str, object] = {"status": BackgroundJob.Status.RUNNING, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["total"] = total
    BackgroundJob.objects.filter(pk=job_id).update(**fields)
    background_job_announce(job_id=job_id)


def background_job_progress(*, job_id: int, done: int) -> None:
    BackgroundJob.objects.filter(pk=job_id).update(done=done, heartbeat_at=timezone.now())
    background_job_announce(job_id=job_id)


def background_job_finish(*, job_id: int, done: int | None = None, note: str = "") -> None:
    """The job ended well; ``note`` says what the user should know (e.g. items skipped)."""
    fields: dict[str, object] = {"status": BackgroundJob.Status.DONE, "error": note, "finished_at": timezone.now()}
    if done is not None:
        fields["done"] = done
    BackgroundJob.objects.filter(pk=job_id).update(**fields)
    background_job_announce(job_id=job_id)


def background_job_fail(job_id: int, error: BaseException | str) -> None:
    """The job ended with ``error`` (an exception is recorded as ``"TypeName: message"``)."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    BackgroundJob.objects.filter(pk=job_id).update(
        status=BackgroundJob.Status.FAILED, error=message, finished_at=timezone.now()
    )
    background_job_announce(job_id=job_id)


# --- Delivery: claim, heartbeat, reap (every kind of background work), retry ----------------------------


M = TypeVar("M", bound=models.Model)


def job_stale_after() -> timedelta:
    """How long a running job may stay silent before its worker counts as gone (``JOB_STALE_SECONDS``)."""
    return timedelta(seconds=int(getattr(settings, "JOB_STALE_SECONDS", 120)))


class Delivery(Generic[M]):
    """How one kind of background work (a model with ``status``, ``worker``, ``heartbeat_at``, ``attempts``,
    ``error``, ``finished_at`` and ``created_at``) is claimed, kept alive and reaped by :func:`work_claim`,
    :func:`work_heartbeat` and :func:`work_reap`; a subclass says how its work is queued again.

    ``life`` names the fields that tell when the work last showed it was alive, the first one set wins (a
    row with none set counts as silent).
    The messages a reaped row gets are ``"{requeued}: the worker {doing} it (...) stopped; ..."`` and
    ``"Interrupted: the worker {doing} it (...) stopped; ..., after N start(s){advice}"``.
    """

    model: type[M]
    queued = "queued"
    running = "running"
    failed = "failed"
    life: tuple[str, ...] = ("heartbeat_at", "created_at")
    doing = "running"
    requeued = "Queued again"
    advice = ". Use Retry to run it again."
    forget_worker = True  # a requeued row names no worker until one claims it

    def can_restart(self, row: M) -> bool:
        """Whether ``row`` can be queued again (it has a task to send)."""
        return True

    def restart(self, row: M) -> None:
        """Queue ``row``'s work again once the reaper's transaction commits."""
        raise NotImplementedError

    def on_failed(self, row: M) -> None:
        """Called (inside the reaper's transaction) for a row just ended failed."""

    def on_reaped(self, rows: list[M]) -> None:
        """Called after the reaper's transaction with the rows it handled."""

    owner_field = ""
    """The field naming the user who asked for the work (counted in their job budget); empty: none."""

    def describe(self, row: M) -> dict[str, Any]:
        """How a queued or running row is named to a user refused by the job budget."""
        return {"kind": self.model._meta.model_name, "id": row.pk, "status": getattr(row, "status", "")}


def _silent_since(delivery: Delivery[Any], cutoff: datetime) -> Q:
    """Rows whose last sign of life (``delivery.life``) is older than ``cutoff``, or that never gave one."""
    condition = Q()
    for i, name in enumerate(delivery.life):
        unset_before = {f"{earlier}__isnull": True for earlier in delivery.life[:i]}
        condition |= Q(**unset_before, **{f"{name}__lt": cutoff})
    return condition | Q(**{f"{name}__isnull": True for name in delivery.life})


def _last_sign_of_life(delivery: Delivery[Any], row: models.Model) -> datetime | None:
    names = [*delivery.life, "created_at"]
    return next((value for name in names if (value := getattr(row, name, None)) is not None), None)


def work_claim(
    delivery: Delivery[M], *, pk: int, worker: str, only: Q | None = None, **fields: Any
) -> bool:
    """A worker starts the row ``pk``: True if it may run it (the row is now ``running``, its heartbeat fresh,
    one more start counted, ``fields`` written). A row finished, or running with a fresh heartbeat elsewhere
    (a second delivery of the same work), or not matching ``only``, is not claimed."""
    now = timezone.now()
    claimable = Q(status=delivery.queued) | (
        Q(status=delivery.running) & _silent_since(delivery, now - job_stale_after())
    )
    query = delivery.model._default_manager.filter(claimable, pk=pk)
    if only is not None:
        query = query.filter(only)
    return bool(query.update(status=delivery.running, worker=worker, heartbeat_at=now,
                             attempts=F("attempts") + 1, **fields))


def work_heartbeat(delivery: Delivery[Any], *, pk: int) -> None:
    """The worker running ``pk`` is alive."""
    delivery.model._default_manager.filter(pk=pk, status=delivery.running).update(heartbeat_at=timezone.now())


def work_reap(
    delivery: Delivery[M], *, dead_workers: Collection[str] = (), now: datetime | None = None
) -> list[M]:
    """Rows left ``running`` by a worker that is gone: one of ``dead_workers`` (a worker that just started
    again under the same name) or silent for longer than ``JOB_STALE_SECONDS``.

    Each is queued again while it has starts left (``JOB_MAX_ATTEMPTS``), otherwise ended failed with a
    message saying so. Returns the rows handled (their new state). Safe to run from several workers at
    once: a row is handled by the one that locks it.
    """
    now = now or timezone.now()
    max_attempts = int(getattr(settings, "JOB_MAX_ATTEMPTS", 3))
    gone = _silent_since(delivery, now - job_stale_after())
    if dead_workers:
        gone |= Q(worker__in=list(dead_workers))
    handled: list[M] = []
    with transaction.atomic():
        orphans = list(
            delivery.model._default_manager.select_for_update(skip_locked=True).filter(gone, status=delivery.running)
        )
        for row in orphans:
            last = _last_sign_of_life(delivery, row)
            shown = f"{last:%Y-%m-%d %H:%M:%S} UTC" if last is not None else "never"
            why = f"the worker {delivery.doing} it ({getattr(row, 'worker', '') or 'unknown'}) stopped; " \
                  f"last sign of life {shown}"
            attempts = int(getattr(row, "attempts", 0))
            if delivery.can_restart(row) and attempts < max_attempts:
                fields: dict[str, object] = {"status": delivery.queued, "error": f"{delivery.requeued}: {why}."}
                if delivery.forget_worker:
                    fields["worker"] = ""
                _save_fields(row, fields)
                delivery.restart(row)
            else:
                _save_fields(row, {"status": delivery.failed, "finished_at": now,
                                   "error": f"Interrupted: {why}, after {attempts} start(s){delivery.advice}"})
                delivery.on_failed(row)
            logger.warning("%s %s: %s", delivery.model._meta.verbose_name, row.pk, getattr(row, "error", ""))
            handled.append(row)
    delivery.on_reaped(handled)
    return handled


def _save_fields(row: models.Model, fields: dict[str, object]) -> None:
    for name, value in fields.items():
        setattr(row, name, value)
    row.save(update_fields=list(fields))


_deliveries: list[str] = []


def delivery_register(path: str) -> None:
    """Let :func:`work_reap_all` (every worker's reaper) reap this kind of work too: ``path`` is the dotted
    name of a :class:`Delivery` (``"app.services.module.NAME"``), imported only when a reaper runs, so
    registering it (``AppConfig.ready``) loads nothing."""
    if path not in _deliveries:
        _deliveries.append(path)


def _dotted(path: str) -> Any:
    """The object a registered dotted name (``"app.module.NAME"``) stands for, imported now."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _delivery(path: str) -> Delivery[Any]:
    delivery = _dotted(path)
    if not isinstance(delivery, Delivery):
        raise TypeError(f"{path} is no Delivery")
    return delivery


def _all_deliveries() -> list[Delivery[Any]]:
    """Background jobs and every kind of work registered with :func:`delivery_register`."""
    return [JOBS, *(_delivery(path) for path in _deliveries)]


_reap_hooks: list[str] = []


def reap_hook_register(path: str) -> None:
    """Let :func:`work_reap_all` also call the function ``path`` (dotted name, imported only when a reaper
    runs): it cleans up other work left behind by a killed process and returns how many things it handled."""
    if path not in _reap_hooks:
        _reap_hooks.append(path)


def work_reap_all(*, dead_workers: Collection[str] = ()) -> int:
    """:func:`work_reap` for background jobs and every registered kind of work, then every registered reap
    hook (one that fails is logged and the others still run); returns how many rows."""
    handled = sum(len(work_reap(delivery, dead_workers=dead_workers)) for delivery in _all_deliveries())
    for path in _reap_hooks:
        try:
            handled += int(_dotted(path)())
        except Exception:
            logger.exception("the reap hook %s failed", path)
    return handled


def _queue(job: BackgroundJob) -> None:
    """Send the job's task again, with the arguments it ran with, once the transaction commits."""
    args = list(job.task_args.get("args", [job.pk]))
    task_send_on_commit(job.task_name, args, dict(job.task_args.get("kwargs", {})))


class _JobDelivery(Delivery[BackgroundJob]):
    """Background jobs: queued again by sending the task that claimed them, with its arguments."""

    model = BackgroundJob
    owner_field = "owner"

    def describe(self, row: BackgroundJob) -> dict[str, Any]:
        subject = f"{row.subject_type.model} {row.subject_id}" if row.subject_type is not None else None
        return {"kind": row.kind, "id": row.pk, "status": row.status, "subject": subject}

    def can_restart(self, row: BackgroundJob) -> bool:
        return bool(row.task_name)

    def restart(self, row: BackgroundJob) -> None:
        _queue(row)

    def on_reaped(self, rows: list[BackgroundJob]) -> None:
        for row in rows:
            background_job_announce(job_id=row.pk)


JOBS = _JobDelivery()


def background_job_claim(
    *, job_id: int, task_name: str, task_args: dict[str, Any], worker: str
) -> bool:
    """A worker starts the job: True if it may run it. A job already done or failed, or running with a
    fresh heartbeat elsewhere (a second delivery of the same work), is not run again."""
    return work_claim(JOBS, pk=job_id, worker=worker, task_name=task_name, task_args=task_args)


def background_job_heartbeat(*, job_id: int) -> None:
    work_heartbeat(JOBS, pk=job_id)


def background_job_reap(*, dead_workers: Collection[str] = (), now: datetime | None = None) -> list[BackgroundJob]:
    """Jobs left ``running`` by a worker that is gone (:func:`work_reap`): queued again, or ended failed with
    a message saying to retry."""
    return work_reap(JOBS, dead_workers=dead_workers, now=now)


def background_job_retry(*, job: BackgroundJob) -> BackgroundJob:
    """Queue a failed job again (the dashboard's and the admin's Retry); its work resumes where the
    results stored so far end (the services only do what is still missing)."""
    with transaction.atomic():
        job = BackgroundJob.objects.select_for_update().get(pk=job.pk)
        if job.status != BackgroundJob.Status.FAILED:
            raise Conflict(f"only a failed job can be retried; this one is {job.status}")
        if not job.task_name:
            raise ServiceError("this job never started on a worker, so there is no task to run again")
        job_budget_check(owner=job.owner)
        job.status = BackgroundJob.Status.QUEUED
        job.error = ""
        job.finished_at = None
        job.attempts = 0
        job.worker = ""
        job.save(update_fields=["status", "error", "finished_at", "attempts", "worker"])
        _queue(job)
        background_job_announce(job_id=job.pk)
    return job


# --- Budgets: how many jobs may be queued and running at once -------------------------------------------


JOBS_SHOWN = 20
"""At most this many queued jobs are named in a refusal."""


def job_budget_limits() -> tuple[int, int]:
    """(per user, in all): the most queued and running jobs (``JOB_MAX_QUEUED_PER_USER``,
    ``JOB_MAX_QUEUED_TOTAL``), every kind of background work counted (jobs, learned-metric training)."""
    return (int(getattr(settings, "JOB_MAX_QUEUED_PER_USER", 5)), int(getattr(settings, "JOB_MAX_QUEUED_TOTAL", 50)))


def _active(delivery: Delivery[Any], owner: Any) -> Any:
    query = delivery.model._default_manager.filter(status__in=[delivery.queued, delivery.running])
    if owner is not None:
        query = query.filter(**{delivery.owner_field: owner})
    return query


def work_active(*, owner: Any = None) -> tuple[int, list[dict[str, Any]]]:
    """Queued and running work (of ``owner``, or of everyone): how many, and the first ``JOBS_SHOWN``
    named (kind, id, status), oldest first."""
    count = 0
    shown: list[dict[str, Any]] = []
    for delivery in _all_deliveries():
        if owner is not None and not delivery.owner_field:
            continue
        query = _active(delivery, owner)
        count += query.count()
        if len(shown) < JOBS_SHOWN:
            shown += [delivery.describe(row) for row in query.order_by("pk")[: JOBS_SHOWN - len(shown)]]
    return count, shown


def job_budget_check(*, owner: Any = None) -> None:
    """Refuse one more job when ``owner`` (a user; none: a command-line or system job, only the total counts)
    has ``JOB_MAX_QUEUED_PER_USER`` queued or running already (429), or everyone together has
    ``JOB_MAX_QUEUED_TOTAL`` (409). The refusal's ``details`` name what is queued: ``{"limit", "queued":
    [{"kind", "id", "status"}, ...]}``.

    Call it inside the transaction that creates the job; with an owner it locks the owner's row first, so that
    one user's parallel requests are counted one after the other.
    """
    per_user, total = job_budget_limits()
    if owner is not None:
        get_user_model()._default_manager.select_for_update().filter(pk=owner.pk).first()
        count, shown = work_active(owner=owner)
        if count >= per_user:
            raise TooMany(f"you have {count} jobs queued or running (at most {per_user}): {_named(shown)}; "
                          "wait for one to finish", details={"limit": per_user, "queued": shown})
    count, shown = work_active()
    if count >= total:
        raise Conflict(f"the platform has {count} jobs queued or running (at most {total}): {_named(shown)}; "
                       "try again later", details={"limit": total, "queued": shown})


def _named(jobs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{job['kind']} #{job['id']} ({job['status']})" for job in jobs)


def request_key(*parts: Any) -> str:
    """A short stable hash of what a request asked for (kind, subject, parameters), for ``request_key``."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def background_job_queue(
    *, kind: str, subject: models.Model | None = None, total: int = 0, owner: Any = None, key: str = "",
    send: Callable[[BackgroundJob], None],
) -> tuple[BackgroundJob, bool]:
    """A job for a request, within the job budget: ``(job, True)`` for a new job whose task ``send(job)``
    queues (on commit), or ``(job, False)`` for the job of the same ``kind`` and ``key`` still queued (the same
    request again: nothing new is queued).

    Raises:
        TooMany: ``owner`` is at their cap of queued and running jobs (429).
        Conflict: the platform is at its cap (409).
    """
    with transaction.atomic():
        if owner is not None:  # one user's parallel requests: one after the other from here (PostgreSQL)
            get_user_model()._default_manager.select_for_update().filter(pk=owner.pk).first()
        if key:
            queued = BackgroundJob.objects.filter(kind=kind, request_key=key, status=BackgroundJob.Status.QUEUED)
            existing = queued.order_by("pk").first()
            if existing is not None:
                return existing, False
        job_budget_check(owner=owner)
        job = background_job_create(kind=kind, subject=subject, total=total, owner=owner, request_key=key)
        send(job)
    return job, True
