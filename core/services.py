"""Background-job bookkeeping: the only code that writes a ``BackgroundJob``.

A service that does long work creates the job (``background_job_create``) and queues its task after
commit; the work reports ``background_job_start`` / ``background_job_progress`` / ``background_job_finish``;
the task's failure path (``core.tasks.BackgroundJobTask``) calls ``background_job_fail``.
Progress writes are single ``UPDATE`` statements, so a page polling the row never blocks the worker.
"""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone

from core.models import BackgroundJob


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
    fields: dict[str, object] = {"status": BackgroundJob.Status.RUNNING}
    if total is not None:
        fields["total"] = total
    BackgroundJob.objects.filter(pk=job_id).update(**fields)


def background_job_progress(*, job_id: int, done: int) -> None:
    BackgroundJob.objects.filter(pk=job_id).update(done=done)


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
