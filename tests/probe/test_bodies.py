"""Issue 43, defect 2: oversized bodies from an anonymous client are refused while they stream, through the
served application and through daphne's own request, without the body being kept."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.conf import settings

from tests.core.test_asgi_body_limit import MiB, Stream, daphne_connection, post, served

__all__ = ["daphne_connection"]  # the fixture, shared with tests/core


@pytest.mark.django_db(transaction=True)
def test_a_500_mib_token_request_is_refused_at_once_without_its_body() -> None:
    stream = Stream(chunks=500)  # 500 MiB, declared
    started = time.monotonic()
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json"),
                                                         (b"content-length", str(500 * MiB).encode())])
    assert answer["status"] == 413 and stream.read == 0
    assert time.monotonic() - started < 5
    assert json.loads(answer["body"])["limit"] == settings.MAX_BODY_BYTES


@pytest.mark.django_db(transaction=True)
def test_an_800_mib_chunked_token_request_is_read_only_up_to_the_cap() -> None:
    stream = Stream(chunks=800)  # no Content-Length
    answer = post(served(), "/api/auth/token/", stream, [(b"content-type", b"application/json")])
    assert answer["status"] == 413
    assert stream.read * MiB <= settings.MAX_BODY_BYTES + MiB


def test_daphne_refuses_the_500_mib_token_request_from_its_headers(daphne_connection: Any) -> None:
    channel, transport, server = daphne_connection
    channel.dataReceived(b"POST /api/auth/token/ HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                         % (500 * MiB, b"{" * 65536))
    assert transport.value().startswith(b"HTTP/1.1 413 ") and transport.disconnecting
    assert server.started == []
