"""core.asgi: HTTP through the served ASGI application runs Django's middleware and view in one synchronous
call per request, and answers as Django's own handler does (pages, API errors, static files, NUL refusal)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator

from core.asgi import SyncChainASGIHandler


def get(path: str) -> dict[str, Any]:
    """GET ``path`` from the served application (config.asgi): its status and whole body."""
    from config.asgi import application

    route, _, query = path.partition("?")
    scope = {"type": "http", "http_version": "1.1", "method": "GET", "path": route, "raw_path": route.encode(),
             "query_string": query.encode(), "root_path": "", "scheme": "http", "server": ("localhost", 80),
             "client": ("127.0.0.1", 5000), "headers": [(b"host", b"localhost")]}

    async def exchange() -> dict[str, Any]:
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
        start = await communicator.receive_output(10)
        body = b""
        while True:
            message = await communicator.receive_output(10)
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        await communicator.wait(10)
        return {"status": start["status"], "body": body}

    response: dict[str, Any] = async_to_sync(exchange)()
    return response


def test_the_served_http_handler_runs_a_synchronous_chain() -> None:
    from config.asgi import django_asgi_app

    assert isinstance(django_asgi_app, SyncChainASGIHandler)
    assert not asyncio.iscoroutinefunction(getattr(SyncChainASGIHandler(), "_middleware_chain"))  # noqa: B009


@pytest.mark.django_db(transaction=True)
def test_health_check_through_the_served_application() -> None:
    response = get("/healthz")
    assert response["status"] == 200
    assert json.loads(response["body"])["status"] == "ok"


@pytest.mark.django_db(transaction=True)
def test_api_errors_and_the_nul_refusal_answer_as_before() -> None:
    assert get("/api/campaigns/")["status"] in (401, 403)
    assert get("/api/no-such-thing/")["status"] == 404
    refused = get("/api/campaigns/?q=%00")
    assert refused["status"] == 400 and b"NUL" in refused["body"]


# WhiteNoise's file answers iterate synchronously; Django's ASGI handler warns and consumes them, as in production.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators")
def test_static_files_are_served_by_whitenoise() -> None:
    response = get("/static/frontend/base.css")
    assert response["status"] == 200
    assert b"{" in response["body"]
