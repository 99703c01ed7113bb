"""What every Celery task that works for a ``BackgroundJob`` shares: its failure path.

    @shared_task(acks_late=True, on_failure=background_job_task_failed)
    def analysis_run(job_id: int) -> int: ...

Celery calls ``on_failure`` once the task has failed for good (after any retries the task asks for), with
the task's arguments; the job id is the first positional argument or the ``job_id`` keyword.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.services import background_job_fail


def background_job_task_failed(
    task: Any, exc: BaseException, task_id: str, args: Sequence[Any], kwargs: Mapping[str, Any], einfo: Any
) -> None:
    job_id = kwargs["job_id"] if "job_id" in kwargs else args[0]
    background_job_fail(int(job_id), exc)
