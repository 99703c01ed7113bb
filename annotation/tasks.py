"""Celery tasks of the annotation app: thin interfaces that load by id and call a service.

A failure ends the task's ``BackgroundJob`` as failed (``core.tasks.BackgroundJobTask``) and
propagates.
"""

from __future__ import annotations

from celery import shared_task

from annotation.models import Campaign
from annotation.services.analysis import campaign_analyse
from annotation.services.events import annotation_submitted
from core.models import BackgroundJob
from core.tasks import BackgroundJobTask


@shared_task(base=BackgroundJobTask, acks_late=True)
def analysis_run(job_id: int) -> int:
    job = BackgroundJob.objects.get(pk=job_id)
    return campaign_analyse(campaign=Campaign.objects.get(jobs=job), job=job)


@shared_task(ignore_result=True)
def annotation_submitted_broadcast(annotation_id: int) -> None:
    """Tell the campaign's dashboards of a committed submit (queued by the submit, off its request)."""
    annotation_submitted(annotation_id=annotation_id)
