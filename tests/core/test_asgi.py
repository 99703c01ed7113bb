"""core.asgi: HTTP through the served ASGI application runs Django's middleware and view in one synchronous
call per request, and answers as Django's own handler does (pages, API errors, static files, NUL refusal)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.core.signals import request_started
from django.db import connection, connections
from django.db.backends.signals import connection_created

from core.asgi import SyncChainASGIHandler


def get(path: str, application: Any = None) -> dict[str, Any]:
    """GET ``path`` from the served application (config.asgi), or from ``application``: its status and body."""
    if application is None:
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
# The served application's request threads outlive a test, and Django never closes an in-memory SQLite
# database, so a request's start looks at the connection an earlier test left in its thread: database access.
@pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous iterators")
@pytest.mark.django_db(transaction=True)
def test_static_files_are_served_by_whitenoise() -> None:
    response = get("/static/frontend/base.css")
    assert response["status"] == 200
    assert b"{" in response["body"]


@pytest.fixture
def one_thread_handler() -> Iterator[SyncChainASGIHandler]:
    """A handler with one request thread; its connection is closed, and the thread ended, afterwards."""
    handler = SyncChainASGIHandler(threads=1)
    yield handler
    close_request_threads(handler)


def close_request_threads(handler: SyncChainASGIHandler) -> None:
    """Close the database connection of every lane's request thread, then end the threads."""
    for lane, executor in handler._executors.items():
        async_to_sync(handler.in_request_thread(connections.close_all, lane))()
        executor.shutdown()


def served_requests(handler: SyncChainASGIHandler, count: int, conn_max_age: int) -> tuple[set[str], int]:
    """GET /healthz ``count`` times with ``CONN_MAX_AGE`` set: the threads that ran the requests and the
    database connections opened meanwhile."""
    threads: set[str] = set()
    opened: list[object] = []

    def started(**kwargs: Any) -> None:
        threads.add(threading.current_thread().name)

    def created(sender: Any, connection: Any, **kwargs: Any) -> None:
        opened.append(connection)

    kept = connection.settings_dict["CONN_MAX_AGE"]
    connection.settings_dict["CONN_MAX_AGE"] = conn_max_age  # the settings every thread's connection reads
    request_started.connect(started)
    connection_created.connect(created)
    try:
        for _ in range(count):
            assert get("/healthz", handler)["status"] == 200
    finally:
        connection_created.disconnect(created)
        request_started.disconnect(started)
        connection.settings_dict["CONN_MAX_AGE"] = kept
    return threads, len(opened)


@pytest.mark.django_db(transaction=True)
def test_request_threads_keep_their_database_connection(one_thread_handler: SyncChainASGIHandler) -> None:
    threads, opened = served_requests(one_thread_handler, 5, conn_max_age=60)
    assert len(threads) == 1 and next(iter(threads)).startswith("http-other")
    assert opened == 1  # one connection for five requests: the thread kept it


@pytest.mark.django_db(transaction=True)
def test_without_conn_max_age_each_request_connects_again(one_thread_handler: SyncChainASGIHandler) -> None:
    if connection.vendor == "sqlite" and connection.is_in_memory_db():  # type: ignore[attr-defined]
        pytest.skip("Django never closes an in-memory SQLite database (closing would drop it)")
    threads, opened = served_requests(one_thread_handler, 3, conn_max_age=0)
    assert len(threads) == 1
    assert opened == 3  # request_finished closed it each time


def test_a_handler_needs_a_request_thread() -> None:
    with pytest.raises(ValueError, match="at least one request thread"):
        SyncChainASGIHandler(threads=0)
    with pytest.raises(ValueError, match="at least one request thread"):
        SyncChainASGIHandler(lanes={"annotation": 2})


@pytest.mark.django_db(transaction=True)
def test_each_lane_runs_on_its_own_request_threads() -> None:
    from core.concurrency import ConcurrencyLimit

    handler = SyncChainASGIHandler(lanes={"annotation": 1, "other": 1})
    served = ConcurrencyLimit(handler, 2, annotation_limit=1)
    seen: list[str] = []

    def started(**kwargs: Any) -> None:
        seen.append(threading.current_thread().name)

    request_started.connect(started)
    try:
        assert get("/api/assignments/1/", served)["status"] in (401, 403)  # an annotator's request
        assert get("/healthz", served)["status"] == 200
    finally:
        request_started.disconnect(started)
        close_request_threads(handler)
    assert [name.rsplit("_", 1)[0] for name in seen] == ["http-annotation", "http-other"]
