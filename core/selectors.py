"""Reads of background jobs."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import QuerySet

from core.models import BackgroundJob


def background_job_list_failed(*, subject: models.Model) -> QuerySet[BackgroundJob]:
    """The subject's failed jobs, newest first: the dashboard offers each a Retry."""
    return BackgroundJob.objects.filter(
        subject_type=ContentType.objects.get_for_model(subject), subject_id=subject.pk,
        status=BackgroundJob.Status.FAILED,
    ).order_by("-created_at")


def background_job_done(job: BackgroundJob) -> bool:
    """Whether the job finished its work (its results may be read)."""
    return bool(job.status == BackgroundJob.Status.DONE)
