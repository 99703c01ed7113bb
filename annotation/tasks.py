"""Celery tasks of the annotation app: thin interfaces that load by id and call a service.

A failure ends the task's ``BackgroundJob`` as failed (``core.tasks.background_job_task_failed``) and
propagates.
"""

from __future__ import annotations

from celery import shared_task

from annotation.models import Campaign
from core.models import BackgroundJob
from core.tasks import background_job_task_failed


@shared_task(acks_late=True, on_failure=background_job_task_failed)  # type: ignore[untyped-decorator]
def analysis_run(job_id: int) -> int:
    from annotation.services.analysis import campaign_analyse

    job = BackgroundJob.objects.get(pk=job_id)
    return campaign_analyse(campaign=Campaign.objects.get(jobs=job), job=job)
