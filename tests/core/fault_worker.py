"""A real Celery worker (solo pool) whose analysis engine is a slow stand-in, for the worker-kill test.

    python -m tests.core.fault_worker NAME

Settings come from the environment (DATABASE_URL, RANKRATE_VAR_DIR, JOB_*); each chunk of analysis sleeps
FAULT_SECONDS_PER_CHUNK seconds, so the test can kill the worker between chunks.
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


def main(name: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    import annotation.analysis

    annotation.analysis.analyze_many = slow_engine
    from config.celery import app

    app.worker_main(["worker", "--pool=solo", "--concurrency=1", "-Q", "default", "-n", name,
                     "--without-mingle", "--without-gossip", "--without-heartbeat", "--loglevel=INFO"])


if __name__ == "__main__":
    main(sys.argv[1])
