"""core.body_limit and core.daphne_body_limit: a request body over MAX_BODY_BYTES is refused with 413 while it
streams (issue 43, defect 2): a declared Content-Length at once, without reading the body or waiting for a
request thread, and a body without one once its bytes pass the cap, with nothing more of it read."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from twisted.internet.testing import StringTransport

from core.body_limit import BodyLimit
from core.concurrency import ConcurrencyLimit

MiB = 1024 * 1024


class Stream:
    """An ASGI ``receive`` that hands out ``chunks`` body messages of ``chunk`` bytes (one object, so they
    cost no memory), then waits as a connection with nothing more to say; ``read`` counts what was taken."""

    def __init__(self, chunks: int, chunk: int = MiB) -> None:
        self.chunks = chunks
        self.body = b"x" * chunk
        self.read = 0

    async def __call__(self) -> dict[str, Any]:
        if self.read < self.chunks:
            self.read += 1
            return {"type": "http.request", "body": self.body, "more_body": self.read < self.chunks}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}


def http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "http_version": "1.1", "method": "POST", "path": path, "raw_path": path.encode(),
            "query_string": b"", "root_path": "", "scheme": "http", "server": ("localhost", 80),
            "client": ("127.0.0.1", 5000), "headers": [(b"host", b"localhost"), *headers]}


def post(application: Any, path: str, stream: Stream, headers: list[tuple[bytes, bytes]],
         timeout: float = 60) -> dict[str, Any]:
    """POST ``stream`` to ``application``: the answer's status, headers and body."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def exchange() -> None:
        await asyncio.wait_for(application(http_scope(path, headers), stream, send), timeout)

    async_to_sync(exchange)()
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return {"status": start["status"], "headers": dict(start["headers"]), "body": body}


def served() -> Any:
    from config.asgi import application

    return application


def test_the_default_cap_takes_an_import_file_and_a_form_body() -> None:
    assert settings.MAX_BODY_BYTES >= settings.MAX_UPLOAD_BYTES + 64 * 1024  # the import API's own allowance
    assert settings.MAX_BODY_BYTES >= settings.DATA_UPLOAD_MAX_MEMORY_SIZE


@pytest.mark.django_db(transaction=True)
def test_a_declared_length_over_the_cap_is_refused_without_reading_the_body() -> None:
    stream = Stream(chunks=50)
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json"),
                                                         (b"content-length", str(500 * MiB).encode())])
    assert answer["status"] == 413
    assert stream.read == 0
    refusal = json.loads(answer["body"])
    assert refusal["limit"] == settings.MAX_BODY_BYTES and "MAX_BODY_BYTES" in refusal["detail"]
    assert answer["headers"][b"connection"] == b"close"


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_is_refused_once_it_passes_the_cap() -> None:
    cap_chunks = settings.MAX_BODY_BYTES // MiB
    stream = Stream(chunks=2 * cap_chunks)  # no Content-Length
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json")])
    assert answer["status"] == 413
    assert stream.read == cap_chunks + 1  # the chunk that went past the cap, and none after it
    assert json.loads(answer["body"])["limit"] == settings.MAX_BODY_BYTES


@pytest.mark.django_db(transaction=True)
def test_a_body_longer_than_its_declared_length_is_refused_at_the_cap() -> None:
    cap_chunks = settings.MAX_BODY_BYTES // MiB
    stream = Stream(chunks=2 * cap_chunks)
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json"),
                                                         (b"content-length", b"10")])
    assert answer["status"] == 413
    assert stream.read == cap_chunks + 1


@pytest.mark.django_db(transaction=True)
def test_a_body_under_the_cap_reaches_the_view() -> None:
    stream = Stream(chunks=1, chunk=30)
    stream.body = b'{"username": "x", "password": "y"}'[:30]
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json")])
    assert answer["status"] == 400  # the view's answer (malformed JSON), not the cap's


def test_a_declared_oversized_body_does_not_wait_for_a_busy_request_slot() -> None:
    release = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    application = BodyLimit(ConcurrencyLimit(slow, 1), 1000)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def exchange() -> None:
        busy = asyncio.ensure_future(application(http_scope("/a", []), Stream(1, 10), send))
        await asyncio.sleep(0.01)  # the slot is taken
        stream = Stream(chunks=10)
        await asyncio.wait_for(application(http_scope("/b", [(b"content-length", b"1001")]), stream, send), 1)
        assert stream.read == 0
        release.set()
        await busy

    async_to_sync(exchange)()
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [413, 200]


def test_zero_turns_the_cap_off_and_a_negative_cap_is_refused() -> None:
    async def echo(scope: Any, receive: Any, send: Any) -> None:
        size = 0
        while True:
            message = await receive()
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})

    stream = Stream(chunks=5, chunk=1000)
    assert post(BodyLimit(echo, 0), "/", stream, [])["body"] == b"5000"
    with pytest.raises(ValueError, match="MAX_BODY_BYTES"):
        BodyLimit(echo, -1)


# daphne: its request class refuses while Twisted receives the body, before the application exists.

class FakeDaphneServer:
    """What daphne's request asks of its server: the applications it would start are recorded."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []
        self.proxy_forwarded_address_header = None
        self.root_path = ""
        self.request_buffer_size = 8192
        self.server_name = b"daphne"
        self.queue: list[dict[str, Any]] = []

    def protocol_connected(self, protocol: Any) -> None:
        pass

    def protocol_disconnected(self, protocol: Any) -> None:
        pass

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        self.started.append(scope)
        return self

    def put_nowait(self, message: dict[str, Any]) -> None:
        self.queue.append(message)

    def log_action(self, *args: Any) -> None:
        pass


@pytest.fixture
def daphne_connection() -> Any:
    """A daphne HTTP connection with a cap of 1 MiB on an in-memory transport: (channel, transport, server)."""
    from daphne.http_protocol import HTTPFactory

    from core import daphne_body_limit

    daphne_body_limit.install(MiB)
    server = FakeDaphneServer()
    channel = HTTPFactory(server).buildProtocol(None)
    transport = StringTransport()
    channel.makeConnection(transport)
    yield channel, transport, server
    daphne_body_limit.install(0)


def test_daphne_answers_a_declared_oversized_body_from_its_headers(daphne_connection: Any) -> None:
    channel, transport, server = daphne_connection
    channel.dataReceived(b"POST /api/auth/token/ HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         b"Content-Length: %d\r\n\r\n" % (500 * MiB))
    answer = transport.value()
    assert answer.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["limit"] == MiB
    assert transport.disconnecting
    channel.dataReceived(b"x" * MiB)  # what was already on its way is dropped
    assert server.started == []


def test_daphne_answers_a_chunked_body_once_it_passes_the_cap(daphne_connection: Any) -> None:
    channel, transport, server = daphne_connection
    channel.dataReceived(b"POST /api/auth/token/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n%s\r\n" % (64 * 1024, b"x" * 64 * 1024)
    for _ in range(16):  # exactly the cap: still taken
        channel.dataReceived(piece)
    assert transport.value() == b""
    received = channel._channel.requests[-1].content  # Twisted's temporary file of the body so far
    channel.dataReceived(piece)
    assert transport.value().startswith(b"HTTP/1.1 413 ") and transport.disconnecting
    assert received.closed  # the bytes are let go
    channel.dataReceived(piece * 4 + b"0\r\n\r\n")
    assert server.started == []


def test_daphne_still_serves_a_body_under_the_cap(daphne_connection: Any) -> None:
    channel, transport, server = daphne_connection
    channel.dataReceived(b"POST /api/auth/token/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    assert [scope["path"] for scope in server.started] == ["/api/auth/token/"]
    assert server.queue[0]["body"] == b"hello" and transport.value() == b""
