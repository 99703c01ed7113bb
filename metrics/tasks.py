"""Celery tasks of LENS: thin interfaces that load by id and call a service.

``lens_train_run`` is routed to the ``gpu`` queue (``CELERY_TASK_ROUTES``). Run that queue with one
process so trainings never compete for the accelerator:

    celery -A config worker -Q gpu --concurrency 1 --prefetch-multiplier 1

``acks_late``: a training whose worker dies is redelivered and starts again (the service restarts a row
left ``running``; a finished one is not touched). Training errors do not raise: they end the row ``failed``.
``lens_campaign_score_run`` runs on the default queue.
"""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from annotation.models import BackgroundJob
from metrics.models import LensModelVersion


@shared_task(acks_late=True)
def lens_train_run(version_id: int) -> str:
    from metrics.services.training import lens_version_train

    version = LensModelVersion.objects.get(pk=version_id)
    return lens_version_train(version=version).status


@shared_task(acks_late=True)
def lens_campaign_score_run(job_id: int, version_id: int) -> int:
    from metrics.services.scoring import campaign_lens_score_outputs

    job = BackgroundJob.objects.select_related("campaign").get(pk=job_id)
    version = LensModelVersion.objects.get(pk=version_id)
    try:
        return campaign_lens_score_outputs(campaign=job.campaign, version=version, job=job).scored
    except Exception as exc:
        BackgroundJob.objects.filter(pk=job_id).update(
            status=BackgroundJob.Status.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        raise
