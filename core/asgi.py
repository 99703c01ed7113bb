"""Django's HTTP handler for ASGI, with its middleware and views run as one synchronous call per request.

Django's own ``ASGIHandler`` builds an asynchronous middleware chain. Every view and every middleware of
this project is synchronous, and in an asynchronous chain Django runs each ``MiddlewareMixin`` middleware's
``process_request`` and ``process_response`` through ``sync_to_async`` (a hand-off to the request's thread
and back, each time), and switches back with ``async_to_sync`` around a synchronous-only middleware
(WhiteNoise): about fifteen thread hand-offs per request. Here the chain is built synchronous and the whole
of it runs in one ``sync_to_async`` call, in the request's thread (``ThreadSensitiveContext``, as Django
does), so a request costs one hand-off. Reading the body, the request signals, streaming the answer and
noticing a client that went away stay Django's (issue 12: server CPU per request).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class SyncChainASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


def sync_chain_asgi_application() -> SyncChainASGIHandler:
    """``django.core.asgi.get_asgi_application`` with :class:`SyncChainASGIHandler`."""
    import django

    django.setup(set_prefix=False)
    return SyncChainASGIHandler()
