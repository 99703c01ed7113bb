"""Django's HTTP handler for ASGI, with each request's synchronous work done in one call on a fixed pool of threads.

Django's own ``ASGIHandler`` builds an asynchronous middleware chain. Every view and every middleware of
this project is synchronous, and in an asynchronous chain Django runs each ``MiddlewareMixin`` middleware's
``process_request`` and ``process_response`` through ``sync_to_async`` (a hand-off to the request's thread
and back, each time), and switches back with ``async_to_sync`` around a synchronous-only middleware
(WhiteNoise): about fifteen thread hand-offs per request. Django also starts a new thread for every request
(``ThreadSensitiveContext``), so a thread's database connection lives as long as one request: every request
connects to the database again, and a persistent connection (``CONN_MAX_AGE``) is left behind by its dead
thread, so that many clients can exhaust the database's connections.

Here the chain is built synchronous, and the request signals, the chain with the view, and (for an answer
held in memory) closing the answer run as one call on one of ``threads`` long-lived threads. A thread keeps
its database connection from one request to the next as ``CONN_MAX_AGE`` allows, so a web process never
holds more than ``threads`` connections for HTTP and a request does not pay for connecting. Reading the
body, building the request, sending the answer and noticing a client that went away while it streams are
Django's own code.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix

from core.concurrency import LANE_SCOPE_KEY, OTHER, lane_limits


class SyncChainASGIHandler(ASGIHandler):
    """``threads`` request threads for every request, or with ``lanes`` (lane name -> threads) a pool of
    threads per lane, a request running in the pool of the lane ``core.concurrency.ConcurrencyLimit`` put
    in its scope (the ``OTHER`` lane's when it has none)."""

    def __init__(self, threads: int = 16, *, lanes: Mapping[str, int] | None = None) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        lanes = dict(lanes or {OTHER: threads})
        if OTHER not in lanes or min(lanes.values()) < 1:
            raise ValueError(f"a web process needs at least one request thread in each lane, the {OTHER!r} lane "
                             f"included, not {lanes}")
        self._executors = {lane: ThreadPoolExecutor(max_workers=n, thread_name_prefix=f"http-{lane}")
                           for lane, n in lanes.items()}
        # made once, used by every request
        self._respond_in_lane = {lane: self.in_request_thread(self.respond, lane) for lane in self._executors}

    def in_request_thread(self, func: Callable[..., Any], lane: str = OTHER) -> Callable[..., Awaitable[Any]]:
        """``func`` as a coroutine function run on one of the request threads of ``lane`` (with the caller's
        context, and with ``async_to_sync`` inside it reaching back to the server's event loop)."""
        return sync_to_async(func, thread_sensitive=False, executor=self._executors[lane])

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        lane = scope.get(LANE_SCOPE_KEY, OTHER)
        if lane not in self._executors:
            lane = OTHER
        try:
            response: HttpResponseBase = await self._respond_in_lane[lane](scope, body_file)
            try:
                await self.send_unless_gone(response, receive, send)
            finally:
                if response.streaming:  # its content was produced while it was sent
                    await self.in_request_thread(response.close, lane)()
        finally:
            body_file.close()

    def respond(self, scope: dict[str, Any], body_file: IO[bytes]) -> HttpResponseBase:
        """A request's synchronous work, in a request thread: ``request_started`` (Django's receivers close
        a connection that is too old or broken), the middleware chain and view, and, when the answer is
        held in memory, ``close()`` with ``request_finished`` (which keeps the thread's connection when
        ``CONN_MAX_AGE`` allows), so the request needs no second hand-off."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        response = error_response if request is None else self.get_response(request)
        assert response is not None  # create_request gives a request or the answer to an unreadable one
        response._handler_class = self.__class__  # type: ignore[attr-defined]  # as Django's handler marks it
        if isinstance(response, FileResponse):
            response.block_size = self.chunk_size  # the server does the chunking
        if not response.streaming:
            response.close()
        return response

    async def send_unless_gone(self, response: HttpResponseBase, receive: Any, send: Any) -> None:
        """Send the answer; a client that disconnects meanwhile stops a streaming answer (Django's rule)."""
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)),
                 asyncio.create_task(self.send_response(response, send))]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if not task.done():
                task.cancel()
            with contextlib.suppress(RequestAborted, asyncio.CancelledError):
                await task


def sync_chain_asgi_application() -> SyncChainASGIHandler:
    """``django.core.asgi.get_asgi_application`` with :class:`SyncChainASGIHandler`: in each lane, as many
    request threads as the requests of the lane a web process works on at once (``HTTP_MAX_CONCURRENCY``,
    ``HTTP_ANNOTATION_CONCURRENCY`` of them annotators'; 16 in one lane when there is no cap)."""
    import django
    from django.conf import settings

    django.setup(set_prefix=False)
    lanes = lane_limits(settings.HTTP_MAX_CONCURRENCY, settings.HTTP_ANNOTATION_CONCURRENCY)
    return SyncChainASGIHandler(lanes=lanes or {OTHER: 16})
