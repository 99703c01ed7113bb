"""A cap on the HTTP requests a web process works on at once (ASGI middleware), with a lane for annotators.

The request threads of `core.asgi` bound the threads and database connections a web process uses for
HTTP; this cap keeps the requests beyond them waiting in the event loop before the application reads their
bodies (each at most `MAX_BODY_BYTES`, refused before it waits: `core.body_limit`), so a burst does not queue
behind busy threads unseen (`HTTP_MAX_CONCURRENCY`,
default 4, the same number as the request threads; 0: no cap). Websockets are not counted.

Annotators' requests (a view marked with :func:`annotation_lane`: claiming, reading, autosaving and submitting
an assignment) have a lane of their own, `HTTP_ANNOTATION_CONCURRENCY` of the requests (default 2) with as
many request threads of their own, and every other request shares the rest. A burst of annotators therefore
runs on few threads, where a process serves the most for the least CPU, and a slow request (an import, an
export, a report) never holds a thread an annotator waits for, nor do annotators queue a researcher's page
behind them.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]  # (scope, receive, send): the servers' types vary

ANNOTATION = "annotation"
OTHER = "other"
LANE_SCOPE_KEY = "rankrate.http_lane"
"""Where :class:`ConcurrencyLimit` writes a request's lane in its ASGI scope, for `core.asgi` to pick the lane's
threads."""
_LANE_ATTRIBUTE = "http_lane"

View = TypeVar("View")


def annotation_lane(view: View) -> View:
    """Marks a view (function or class; outermost decorator) as an annotator's short request."""
    setattr(view, _LANE_ATTRIBUTE, ANNOTATION)
    return view


@functools.lru_cache(maxsize=4096)  # bounded: most paths carry an id; resolving one costs about 50 µs
def lane_of(path_info: str) -> str:
    """The lane of a request for ``path_info``: the resolved view's mark, ``OTHER`` for unmarked or unknown
    paths (which Django answers, 404 included, in the other lane)."""
    from django.urls import Resolver404, resolve

    try:
        view = resolve(path_info).func
    except Resolver404:
        return OTHER
    marked = getattr(view, _LANE_ATTRIBUTE, None) or getattr(getattr(view, "view_class", None), _LANE_ATTRIBUTE, None)
    return str(marked or OTHER)


def lane_limits(limit: int, annotation_limit: int) -> dict[str, int]:
    """How many requests of each lane run at once, from the two settings: ``{}`` when ``limit`` is 0 (no cap,
    no lanes); ``{OTHER: limit}`` when ``annotation_limit`` is 0 (one lane for all); otherwise the annotators'
    ``annotation_limit`` and the rest of ``limit`` for every other request."""
    if limit < 0 or annotation_limit < 0:
        raise ValueError("HTTP_MAX_CONCURRENCY and HTTP_ANNOTATION_CONCURRENCY must be 0 or positive")
    if limit == 0:
        return {}
    if annotation_limit == 0:
        return {OTHER: limit}
    if annotation_limit >= limit:
        raise ValueError(
            f"HTTP_ANNOTATION_CONCURRENCY ({annotation_limit}) must be below HTTP_MAX_CONCURRENCY ({limit}): "
            "the requests that are not annotators' need at least one of them")
    return {ANNOTATION: annotation_limit, OTHER: limit - annotation_limit}


class ConcurrencyLimit:
    def __init__(self, app: ASGIApp, limit: int, *, annotation_limit: int = 0) -> None:
        self.app = app
        self.limits = lane_limits(limit, annotation_limit)
        self._slots: dict[str, asyncio.Semaphore] | None = None  # made in the server's event loop, on first use

    def lane(self, scope: dict[str, Any]) -> str:
        if ANNOTATION not in self.limits:
            return OTHER
        path: str = scope["path"]
        root = scope.get("root_path") or ""
        return lane_of(path.removeprefix(root) if root else path)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.limits:
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = {lane: asyncio.Semaphore(n) for lane, n in self.limits.items()}
        lane = self.lane(scope)
        async with self._slots[lane]:
            await self.app({**scope, LANE_SCOPE_KEY: lane}, receive, send)
