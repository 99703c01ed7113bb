"""The annotation services that queue this app's Celery tasks, once the current transaction commits.

They live apart from the services the tasks run (``annotation.services.analysis``), so imports go one way:
the services that queue work -> ``annotation.tasks`` -> the services that do the work.
"""

from __future__ import annotations

from django.db import transaction

from annotation.models import Campaign
from annotation.tasks import analysis_run
from core.models import BackgroundJob
from core.services import background_job_create


def campaign_schedule_analysis(*, campaign: Campaign) -> BackgroundJob:
    """Queue the analysis of the campaign's outputs; the worker picks it up after this transaction commits."""
    job = background_job_create(kind="analysis", subject=campaign)
    transaction.on_commit(lambda: analysis_run.delay(job.pk))
    return job
