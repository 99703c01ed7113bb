"""Heavy reads (bootstrap statistics of a whole campaign): computed once per data version, and never more at
once than a web process can spare.

A heavy read is keyed by what it depends on (the caller puts the data's version and the parameters in the
key), so a repeated or parallel request is answered from the cache. A miss computes under a per-process
gate of ``HEAVY_READS_AT_ONCE`` computations: a request that finds the gate taken does not wait holding one
of the few request threads (that is what slowed everyone's pages: four of them held every thread of the
"other" lane), it is answered 429 at once with ``Retry-After``, and once the computation in progress is
cached the same request is a cache hit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

from core.errors import TooMany

T = TypeVar("T")

RETRY_AFTER_SECONDS = 5

_gate_lock = threading.Lock()
_gate: threading.BoundedSemaphore | None = None
_gate_size = 0


def _the_gate() -> threading.BoundedSemaphore:
    global _gate, _gate_size
    size = max(1, int(getattr(settings, "HEAVY_READS_AT_ONCE", 1)))
    with _gate_lock:
        if _gate is None or size != _gate_size:
            _gate, _gate_size = threading.BoundedSemaphore(size), size
        return _gate


@contextmanager
def heavy_gate() -> Iterator[None]:
    """Hold one place of the per-process gate of heavy computations while the block runs.

    Raises:
        TooMany: every place is taken (429, ``details.retry_after``); the request does not wait for one
            (``HEAVY_READ_WAIT_SECONDS``, default 0) while holding its request thread.
    """
    gate = _the_gate()
    wait = float(getattr(settings, "HEAVY_READ_WAIT_SECONDS", 0))
    taken = gate.acquire(timeout=wait) if wait > 0 else gate.acquire(blocking=False)
    if not taken:
        raise TooMany("another heavy computation (bootstrap statistics) is running; try again in a few seconds",
                      details={"retry_after": RETRY_AFTER_SECONDS})
    try:
        yield
    finally:
        gate.release()


def heavy_cached(key: str, build: Callable[[], T], *, seconds: int | None = None) -> T:
    """The value cached under ``key``, or ``build()`` computed now (inside :func:`heavy_gate`) and cached.

    Raises:
        TooMany: the gate is taken by other heavy computations of this process (429).
    """
    hit: Any = cache.get(key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    with heavy_gate():
        hit = cache.get(key)  # computed by the request that held the gate
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        value = build()
        ttl = seconds if seconds is not None else int(getattr(settings, "HEAVY_READ_CACHE_SECONDS", 3600))
        cache.set(key, value, ttl)
        return value
