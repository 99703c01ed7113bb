"""A real Celery worker (solo pool, queues ``default`` and ``gpu``) with slow stand-ins, for the worker-kill tests.

    python -m tests.core.fault_worker NAME

Settings come from the environment (DATABASE_URL, REDIS_URL, RANKRATE_VAR_DIR, JOB_*, FAULT_BROKER_PREFIX).
Only in this worker, so the test can kill it in the middle of the work:
- each chunk of analysis is a stand-in engine that sleeps FAULT_SECONDS_PER_CHUNK seconds;
- each LENS training step (the real training of the tiny encoder) first sleeps FAULT_SECONDS_PER_STEP seconds.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any


def slow_engine(pairs: Sequence[tuple[str, str]], *, compression_threshold: float = 0.5, **kwargs: Any) -> list[Any]:
    from annotation.analysis import ENGINE_VERSION, Analysis

    time.sleep(float(os.environ.get("FAULT_SECONDS_PER_CHUNK", "1")))
    return [Analysis(category="deletion", reasons={"stand_in": True}, edits=[], features={},
                     engine_version=ENGINE_VERSION) for _ in pairs]


def slow_training() -> None:
    """Wrap the training service's ``train`` with a callback that sleeps before every step."""
    from metrics.learned.callbacks import Callback
    from metrics.services import training

    real_train = training.train
    seconds = float(os.environ.get("FAULT_SECONDS_PER_STEP", "0.5"))

    class SlowSteps(Callback):
        def should_cancel(self) -> bool:  # polled before every step
            time.sleep(seconds)
            return False

    def train(*args: Any, callbacks: Sequence[Callback] = (), **kwargs: Any) -> Any:
        return real_train(*args, callbacks=[*callbacks, SlowSteps()], **kwargs)

    vars(training)["train"] = train  # the name the service calls


def main(name: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    import annotation.analysis
    from tests.core.fault_setup import fault_broker

    annotation.analysis.analyze_many = slow_engine
    slow_training()
    fault_broker()
    from config.celery import app

    app.worker_main(["worker", "--pool=solo", "--concurrency=1", "-Q", "default,gpu", "-n", name,
                     "--without-mingle", "--without-gossip", "--without-heartbeat", "--loglevel=INFO"])


if __name__ == "__main__":
    main(sys.argv[1])
