"""A cap on the HTTP requests a web process works on at once (ASGI middleware).

Under daphne every HTTP request runs its (sync) Django view in a thread of its own, and each such thread
opens its own database connection: with no cap, a burst of N requests is N threads and N connections, and
PostgreSQL's `max_connections` runs out (issue 12: 50 clients, 187 of 430 requests failed). Requests over
the cap wait in the event loop, holding neither a thread nor a connection, so a process never holds more
than `limit` connections for HTTP (`HTTP_MAX_CONCURRENCY`, default 16; 0: no cap). Websockets are not
counted. PgBouncer in front of PostgreSQL (docker-compose.yml) then lets these short connections be cheap.
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
