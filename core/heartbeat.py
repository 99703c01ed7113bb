"""A heartbeat beside long work: a daemon thread that calls ``beat`` every ``interval`` seconds.

The tasks use it so that a job or training run whose worker was killed goes silent, and the reaper can
tell it from one still running (a chunk of work may take longer than the stale limit on its own).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType

from django.db import close_old_connections, connection

logger = logging.getLogger(__name__)


class Heartbeat:
    """``with Heartbeat(beat, interval):`` runs ``beat()`` in a thread until the block ends."""

    def __init__(self, beat: Callable[[], None], interval: float) -> None:
        self.beat = beat
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="job-heartbeat", daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    close_old_connections()
                    self.beat()
                except Exception:  # a missed beat is not worth stopping the work for
                    logger.warning("heartbeat failed", exc_info=True)
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)
