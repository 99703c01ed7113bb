"""The body cap of `core.body_limit`, enforced by daphne itself while the body arrives.

daphne (through Twisted's ``http.Request``) receives a whole request body, into memory or a temporary file,
before it starts the ASGI application, and then puts the whole body on the application's queue in 8 KiB
messages at once. An ASGI middleware therefore sees an 800 MiB body only after daphne holds all of it. Here
daphne's request class is replaced by one that refuses a body while it streams: a declared ``Content-Length``
over the cap is answered as soon as the headers are in (no ``100 Continue``, nothing of the body read), and a
body without one (chunked) is answered once its bytes pass the cap. The answer is the same 413 JSON as the
middleware's, with ``Connection: close``; the connection is then closed, the bytes received so far are
dropped, and the ASGI application is never started for that request.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from daphne import http_protocol

from core.body_limit import too_large_body

_ORIGINAL_REQUEST = http_protocol.WebRequest
logger = logging.getLogger(__name__)


class BodyLimitedWebRequest(_ORIGINAL_REQUEST):  # type: ignore[misc,valid-type]  # daphne has no type hints
    """daphne's request with bodies of at most ``max_body_bytes`` (0: no cap)."""

    max_body_bytes = 0
    _body_read = 0
    _refused = False

    def gotLength(self, length: int | None) -> None:  # Twisted's names
        if self.max_body_bytes and length is not None and length > self.max_body_bytes:
            self.content = io.BytesIO()  # never written: the body is not read
            self.requestHeaders.removeHeader(b"expect")  # no "100 Continue" after the answer
            self._refuse(length)
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._body_read += len(data)
        if self.max_body_bytes and self._body_read > self.max_body_bytes:
            self._refuse(None)
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._refused:  # the body ended within the data that carried its last bytes: already answered
            return
        super().requestReceived(command, path, version)

    def _refuse(self, size: int | None) -> None:
        self._refused = True
        content = self.content
        self.content = io.BytesIO()
        content.close()  # a temporary file: its bytes go
        body = too_large_body(self.max_body_bytes, size)
        head = (b"HTTP/1.1 413 Content Too Large\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body))
        transport: Any = self.channel.transport
        logger.warning("413 for a request body over MAX_BODY_BYTES (%s bytes) from %s",
                       f"{size:,} declared" if size is not None else "chunked", transport.getPeer())
        transport.write(head + body)
        transport.loseConnection()  # stops reading; closes once the answer is written


def install(max_bytes: int) -> None:
    """Make daphne build its HTTP requests with the cap (``max_bytes`` 0: daphne's own request class)."""
    if max_bytes < 0:
        raise ValueError(f"MAX_BODY_BYTES must be 0 (no cap) or positive, not {max_bytes}")
    BodyLimitedWebRequest.max_body_bytes = max_bytes
    http_protocol.WebRequest = BodyLimitedWebRequest if max_bytes else _ORIGINAL_REQUEST
