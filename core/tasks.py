"""What every Celery task that works for a ``BackgroundJob`` shares: its failure path.

    @shared_task(base=BackgroundJobTask, acks_late=True)
    def analysis_run(job_id: int) -> int: ...

Celery calls ``on_failure`` once the task has failed for good (after any retries the task asks for), with
the task's arguments; the job id is the first positional argument or the ``job_id`` keyword.
"""

from __future__ import annotations

from typing import Any

from celery import Task

from core.services import background_job_fail


class BackgroundJobTask(Task[Any, Any]):
    """A task whose first argument (or ``job_id``) is a ``BackgroundJob``: a failure ends that job failed."""

    def on_failure(
        self, exc: Exception, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any], einfo: Any
    ) -> None:
        job_id = kwargs["job_id"] if "job_id" in kwargs else args[0]
        background_job_fail(int(job_id), exc)
