"""Celery tasks of the metrics app (training, metric scoring, the testbed): thin interfaces that load by id and
call a service.

``learned_train_run`` is routed to the ``gpu`` queue (``CELERY_TASK_ROUTES``). Run that queue with one
process so trainings never compete for the accelerator:

    celery -A config worker -Q gpu --concurrency 1 --prefetch-multiplier 1

``acks_late`` and ``reject_on_worker_lost``: a training whose worker dies is redelivered and starts again
(the service restarts a row left ``running`` once its heartbeat is stale; a finished one is not touched);
where the broker cannot redeliver (the file-system broker), the reaper run by every worker
(``metrics.services.training.learned_version_reap``) queues it again or ends it failed. Training errors do
not raise: they end the row ``failed``.
The scoring tasks run on the queue their service chose; a failure ends their ``BackgroundJob`` failed
(``core.tasks.BackgroundJobTask``) and propagates.

Services queue these tasks by name (``core.dispatch.task_send_on_commit``): tasks import services, never the
reverse.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from annotation.models import Campaign
from core.models import BackgroundJob
from core.tasks import BackgroundJobTask
from metrics.models import LearnedVersion
from metrics.services import metric_scores
from metrics.services.allocation import allocation_execute
from metrics.services.metric_registry import metrics_get
from metrics.services.testbed import testbed_execute
from metrics.services.training import learned_version_train


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def learned_train_run(self: Task[Any, Any], version_id: int) -> str:
    version = LearnedVersion.objects.get(pk=version_id)
    return learned_version_train(version=version, worker=self.request.hostname or "").status


@shared_task(base=BackgroundJobTask, acks_late=True)
def lens_campaign_score_run(job_id: int, version_id: int) -> int:
    """A LENS rescoring job queued before LENS scores were stored as metric scores (a retry of one): scores
    the campaign with the metric ``lens:<version_id>``, like ``metric_scores_run``."""
    job = BackgroundJob.objects.get(pk=job_id)
    version = LearnedVersion.objects.get(pk=version_id)
    scoring = metric_scores.campaign_metric_scores_compute(campaign=Campaign.objects.get(jobs=job),
                                             metrics=metrics_get(version.metric_name), job=job)
    return sum(scoring.scored.values())


@shared_task(base=BackgroundJobTask, acks_late=True)
def metric_scores_run(job_id: int, metric_names: list[str]) -> dict[str, int]:
    """Score a campaign's outputs with suite metrics (the service decides the queue: ``gpu`` for accelerated)."""
    job = BackgroundJob.objects.get(pk=job_id)
    campaign = Campaign.objects.get(jobs=job)
    metrics = metrics_get(metric_names)
    return metric_scores.campaign_metric_scores_compute(campaign=campaign, metrics=metrics, job=job).scored


@shared_task(base=BackgroundJobTask, acks_late=True)
def testbed_run_task(job_id: int) -> int:
    """The perturbation testbed of a research-page request (``metrics.services.testbed.testbed_start``)."""
    return len(testbed_execute(job_id=job_id).result.rows)


@shared_task(base=BackgroundJobTask, acks_late=True)
def allocation_simulate_task(job_id: int) -> int:
    """An allocation simulation of a campaign (``metrics.services.allocation.campaign_allocation_start``)."""
    return len(allocation_execute(job_id=job_id).summary)
