"""Background-job bookkeeping: the only code that writes a ``BackgroundJob``.

A service that does long work creates the job (``background_job_create``) and queues its task after
commit; the work reports ``background_job_start`` / ``background_job_progress`` / ``background_job_finish``;
the task's failure path (``core.tasks.BackgroundJobTask``) calls ``background_job_fail``.
Progress writes are single ``UPDATE`` statements, so a page polling the row never blocks the worker.

Delivery survives a killed worker: the task claims the job (``background_job_claim``: which task, which
worker) and beats a heartbeat while it runs; ``background_job_reap`` (run when a worker starts and every
minute inside it) finds jobs left ``running`` by a worker that restarted or went silent and queues them
again, or, after ``JOB_MAX_ATTEMPTS`` starts, ends them failed with a message saying to retry;
``background_job_retry`` (dashboard, admin) queues a failed job again.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.errors import Conflict, ServiceError
from core.models import BackgroundJob

logger = logging.getLogger(__name__)


def background_job_create(*, kind: str, subject: models.Model | None = None, total: int = 0) -> BackgroundJob:
    """A queued job about ``subject`` (any saved model instance, or none)."""
    job = BackgroundJob(kind=kind, total=total)
    if subject is not None:
        job.subject_type = ContentType.objects.get_for_model(subject)
        job.subject_id = subject.pk
    job.save()
    return job


def background_job_start(*, job_id: int, total: int | None = None) -> None:
    """The job runs; ``total`` is how many items it will go through, when known now."""
    fields: dict[str, object] = {"status": BackgroundJob.Status.RUNNING, "heartbeat_at": timezone.now()}
    if total is not None:
        fields["total"] = total
    BackgroundJob.objects.filter(pk=job_id).update(**fields)


def background_job_progress(*, job_id: int, done: int) -> None:
    BackgroundJob.objects.filter(pk=job_id).update(done=done, heartbeat_at=timezone.now())


def background_job_finish(*, job_id: int, done: int | None = None, note: str = "") -> None:
    """The job ended well; ``note`` says what the user should know (e.g. items skipped)."""
    fields: dict[str, object] = {"status": BackgroundJob.Status.DONE, "error": note, "finished_at": timezone.now()}
    if done is not None:
        fields["done"] = done
    BackgroundJob.objects.filter(pk=job_id).update(**fields)


def background_job_fail(job_id: int, error: BaseException | str) -> None:
    """The job ended with ``error`` (an exception is recorded as ``"TypeName: message"``)."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    BackgroundJob.objects.filter(pk=job_id).update(
        status=BackgroundJob.Status.FAILED, error=message, finished_at=timezone.now()
    )


# --- Delivery: claim, heartbeat, reap, retry ---------------------------------------------------------


def job_stale_after() -> timedelta:
    """How long a running job may stay silent before its worker counts as gone (``JOB_STALE_SECONDS``)."""
    return timedelta(seconds=int(getattr(settings, "JOB_STALE_SECONDS", 120)))


def _silent_since(cutoff: datetime) -> Q:
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff)


def background_job_claim(
    *, job_id: int, task_name: str, task_args: dict[str, Any], worker: str
) -> bool:
    """A worker starts the job: True if it may run it. A job already done or failed, or running with a
    fresh heartbeat elsewhere (a second delivery of the same work), is not run again."""
    now = timezone.now()
    claimable = Q(status=BackgroundJob.Status.QUEUED) | (
        Q(status=BackgroundJob.Status.RUNNING) & _silent_since(now - job_stale_after())
    )
    return bool(
        BackgroundJob.objects.filter(claimable, pk=job_id).update(
            status=BackgroundJob.Status.RUNNING, task_name=task_name, task_args=task_args, worker=worker,
            heartbeat_at=now, attempts=F("attempts") + 1,
        )
    )


def background_job_heartbeat(*, job_id: int) -> None:
    BackgroundJob.objects.filter(pk=job_id, status=BackgroundJob.Status.RUNNING).update(heartbeat_at=timezone.now())


def _queue(job: BackgroundJob) -> None:
    """Send the job's task again once the transaction commits (eager in tests, like ``delay``)."""
    from celery import current_app

    name = job.task_name
    args = list(job.task_args.get("args", [job.pk]))
    kwargs = dict(job.task_args.get("kwargs", {}))

    def send() -> None:
        task = current_app.tasks.get(name)
        if task is None:  # its module was not imported in this process yet (tasks are named after it)
            with contextlib.suppress(ImportError):
                importlib.import_module(name.rpartition(".")[0])
            task = current_app.tasks.get(name)
        if task is not None:
            task.apply_async(args=tuple(args), kwargs=kwargs)
        else:
            current_app.send_task(name, args=args, kwargs=kwargs)

    transaction.on_commit(send)


def background_job_reap(*, dead_workers: Collection[str] = (), now: datetime | None = None) -> list[BackgroundJob]:
    """Jobs left ``running`` by a worker that is gone: one of ``dead_workers`` (a worker that just started
    again under the same name) or silent for longer than ``JOB_STALE_SECONDS``.

    Each is queued again while it has starts left (``JOB_MAX_ATTEMPTS``), otherwise ended failed with a
    message saying to retry. Returns the jobs handled (their new state). Safe to run from several workers
    at once: a job is handled by the one that locks it.
    """
    now = now or timezone.now()
    max_attempts = int(getattr(settings, "JOB_MAX_ATTEMPTS", 3))
    gone = _silent_since(now - job_stale_after())
    if dead_workers:
        gone |= Q(worker__in=list(dead_workers))
    handled: list[BackgroundJob] = []
    with transaction.atomic():
        orphans = list(
            BackgroundJob.objects.select_for_update(skip_locked=True).filter(gone, status=BackgroundJob.Status.RUNNING)
        )
        for job in orphans:
            last = job.heartbeat_at or job.created_at
            why = (f"the worker running it ({job.worker or 'unknown'}) stopped; "
                   f"last sign of life {last:%Y-%m-%d %H:%M:%S} UTC")
            if job.task_name and job.attempts < max_attempts:
                job.status = BackgroundJob.Status.QUEUED
                job.error = f"Queued again: {why}."
                job.worker = ""
                job.save(update_fields=["status", "error", "worker"])
                _queue(job)
            else:
                job.status = BackgroundJob.Status.FAILED
                job.error = f"Interrupted: {why}, after {job.attempts} start(s). Use Retry to run it again."
                job.finished_at = now
                job.save(update_fields=["status", "error", "finished_at"])
            logger.warning("background job %s (%s): %s", job.pk, job.kind, job.error)
            handled.append(job)
    return handled


def background_job_retry(*, job: BackgroundJob) -> BackgroundJob:
    """Queue a failed job again (the dashboard's and the admin's Retry); its work resumes where the
    results stored so far end (the services only do what is still missing)."""
    with transaction.atomic():
        job = BackgroundJob.objects.select_for_update().get(pk=job.pk)
        if job.status != BackgroundJob.Status.FAILED:
            raise Conflict(f"only a failed job can be retried; this one is {job.status}")
        if not job.task_name:
            raise ServiceError("this job never started on a worker, so there is no task to run again")
        job.status = BackgroundJob.Status.QUEUED
        job.error = ""
        job.finished_at = None
        job.attempts = 0
        job.worker = ""
        job.save(update_fields=["status", "error", "finished_at", "attempts", "worker"])
        _queue(job)
    return job
