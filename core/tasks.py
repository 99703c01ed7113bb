"""What every Celery task that works for a ``BackgroundJob`` shares: its delivery and its failure path.

    @shared_task(base=BackgroundJobTask)
    def analysis_run(job_id: int) -> int: ...

Before running, the task claims its job (``background_job_claim``): a job already finished, or running
with a fresh heartbeat elsewhere (a second delivery of the same work), is not run again. While it runs, a
heartbeat thread tells the reaper the worker is alive. Delivery is late-acknowledged and a message whose
worker died is rejected back to the queue (``acks_late``, ``reject_on_worker_lost``, also the project-wide
defaults in settings).

Celery calls ``on_failure`` once the task has failed for good (after any retries the task asks for), with
the task's arguments; the job id is the first positional argument or the ``job_id`` keyword.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from django.conf import settings

from core.heartbeat import Heartbeat
from core.services import background_job_claim, background_job_fail, background_job_heartbeat

logger = logging.getLogger(__name__)


def _job_id(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return int(kwargs["job_id"] if "job_id" in kwargs else args[0])


class BackgroundJobTask(Task[Any, Any]):
    """A task whose first argument (or ``job_id``) is a ``BackgroundJob``: claimed before it runs, kept
    alive by a heartbeat, and a failure ends that job failed."""

    acks_late = True
    reject_on_worker_lost = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        job_id = _job_id(args, kwargs)
        worker = self.request.hostname or "eager"
        if not background_job_claim(job_id=job_id, task_name=self.name, worker=worker,
                                    task_args={"args": list(args), "kwargs": kwargs}):
            logger.info("%s: job %s is finished or running elsewhere; this delivery is dropped", self.name, job_id)
            return None
        if self.request.is_eager or self.request.id is None:  # eager (tests) or called as a plain function
            return self.run(*args, **kwargs)
        with Heartbeat(lambda: background_job_heartbeat(job_id=job_id), float(settings.JOB_HEARTBEAT_SECONDS)):
            return self.run(*args, **kwargs)

    def on_failure(
        self, exc: Exception, task_id: str, args: tuple[Any, ...], kwargs: dict[str, Any], einfo: Any
    ) -> None:
        background_job_fail(_job_id(args, kwargs), exc)
