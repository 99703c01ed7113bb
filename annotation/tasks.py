"""Celery tasks of the annotation app: thin interfaces that load by id and call a service."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from annotation.models import BackgroundJob


@shared_task(acks_late=True)
def analysis_run(job_id: int) -> int:
    from annotation.services.analysis import campaign_analyse

    job = BackgroundJob.objects.select_related("campaign").get(pk=job_id)
    try:
        return campaign_analyse(campaign=job.campaign, job=job)
    except Exception as exc:
        BackgroundJob.objects.filter(pk=job_id).update(
            status=BackgroundJob.Status.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        raise
