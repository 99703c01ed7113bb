"""The Celery application. Queues: `default` (CPU work) and `gpu` (learned-metric training and scoring).

Every worker runs the reaper of work left "running" by a dead worker (``config.celery.reap``): once when
it starts, for jobs that a worker of its own name was running (it was killed and restarted) or that went
silent, and then every ``JOB_REAP_INTERVAL_SECONDS`` for work whose heartbeat went silent.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Collection
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

logger = logging.getLogger(__name__)

app = Celery("rankrate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("gpu"))
app.autodiscover_tasks()


def reap(dead_workers: Collection[str] = ()) -> int:
    """Requeue or fail the background work (jobs, training runs...) whose worker is gone; returns how many."""
    from django.db import connection

    from core.services import work_reap_all

    try:
        return work_reap_all(dead_workers=dead_workers)
    finally:
        connection.close()


_stop_reaping = threading.Event()


def _reap_periodically(interval: float) -> None:
    while not _stop_reaping.wait(interval):
        try:
            reap()
        except Exception:  # the next round tries again
            logger.warning("the job reaper failed", exc_info=True)


@worker_ready.connect
def _reap_on_start(sender: Any = None, **kwargs: Any) -> None:
    from django.conf import settings

    hostname = getattr(sender, "hostname", None)
    handled = reap(dead_workers=[hostname] if hostname else ())
    if handled:
        logger.warning("reaper: %d job(s) left running by a dead worker were queued again or failed", handled)
    interval = float(settings.JOB_REAP_INTERVAL_SECONDS)
    if interval > 0:
        _stop_reaping.clear()
        threading.Thread(target=_reap_periodically, args=(interval,), name="job-reaper", daemon=True).start()


@worker_shutdown.connect
def _stop_reaper(**kwargs: Any) -> None:
    _stop_reaping.set()
