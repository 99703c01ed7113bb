"""A cap on the bytes of one HTTP request body, enforced while the body arrives (ASGI middleware).

Django refuses an oversized body only after its ASGI handler has read all of it into a temporary file, and a
chunked body (no ``Content-Length``) escapes ``DATA_UPLOAD_MAX_MEMORY_SIZE`` altogether. :class:`BodyLimit`
sits in front of the HTTP application: a request whose declared ``Content-Length`` is over the cap gets a 413
at once, before anything waits for a request thread and without reading a byte of its body; any other
request's body is counted as the application reads it, and the read that goes past the cap ends the request
with the same 413, so at most the cap plus one chunk is ever read.

The answer is JSON, ``{"detail": ..., "limit": <bytes>}``, as the API's other errors. ``max_bytes`` 0 turns
the cap off. Pure ASGI: nothing here imports Django, so a server-level guard (``core.daphne_body_limit``)
writes the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]


class BodyTooLarge(Exception):
    """Raised by the counting ``receive`` once a body has gone past the cap; :class:`BodyLimit` answers 413."""


def declared_length(headers: Any) -> int | None:
    """The ``Content-Length`` among ASGI ``headers`` (pairs of bytes), ``None`` when absent or not a number
    (the server or Django answers a malformed one)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def too_large_body(max_bytes: int, size: int | None = None) -> bytes:
    """The JSON of the 413: what was sent (when known) and the cap, naming the setting."""
    sent = f"{size:,} bytes" if size is not None else "more bytes"
    detail = (f"the request body is too large: {sent} sent, at most {max_bytes:,} bytes are accepted "
              "(MAX_BODY_BYTES)")
    return json.dumps({"detail": detail, "limit": max_bytes}).encode()


async def send_too_large(send: Any, max_bytes: int, size: int | None = None) -> None:
    """Answer 413; ``Connection: close``, since the rest of the body is never read."""
    body = too_large_body(max_bytes, size)
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class BodyLimit:
    """``app`` with request bodies of at most ``max_bytes`` (HTTP only; websockets pass through: their
    messages are bounded by the server, 1 MiB under daphne)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"MAX_BODY_BYTES must be 0 (no cap) or positive, not {max_bytes}")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.max_bytes:
            await self.app(scope, receive, send)
            return
        limit = self.max_bytes
        declared = declared_length(scope.get("headers") or ())
        if declared is not None and declared > limit:
            await send_too_large(send, limit, declared)
            return
        read = 0
        answered = False

        async def counting_receive() -> dict[str, Any]:
            nonlocal read
            message: dict[str, Any] = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > limit:
                    raise BodyTooLarge(read)
            return message

        async def watching_send(message: dict[str, Any]) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        try:
            await self.app(scope, counting_receive, watching_send)
        except BodyTooLarge:
            if answered:  # an application that answers before reading its body: nothing more to say
                return
            await send_too_large(send, limit)
