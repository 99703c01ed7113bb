"""A cap on the HTTP requests a web process works on at once (ASGI middleware).

The request threads of `core.asgi` bound the threads and database connections a web process uses for
HTTP; this cap keeps the requests beyond them waiting in the event loop before their bodies are read, so a
burst does not pile up bodies in memory or queue behind busy threads unseen (`HTTP_MAX_CONCURRENCY`,
default 4, the same number as the request threads; 0: no cap). Websockets are not counted. Before the
request threads, each request had a thread and a connection of its own, and with no cap 50 clients
exhausted PostgreSQL's connections (issue 12: 187 of 430 requests failed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]  # (scope, receive, send): the servers' types vary


class ConcurrencyLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self._slots: asyncio.Semaphore | None = None  # made in the server's event loop, on first use

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or self.limit <= 0:
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            await self.app(scope, receive, send)
