"""Race tests: callers that start at the same moment, each in its own thread with its own database connection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.db import connection

T = TypeVar("T")


def at_once(work: Callable[[T], object], args: Sequence[T]) -> list[BaseException]:
    """Run ``work(arg)`` for every arg, each in a thread of its own, all released together by a barrier; each
    thread closes its database connection when done. The exceptions the calls raised (none: an empty list)."""
    barrier = threading.Barrier(len(args))
    errors: list[BaseException] = []

    def run(arg: T) -> None:
        try:
            barrier.wait()
            work(arg)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(arg,)) for arg in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors
