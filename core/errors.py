"""Application errors: a request that cannot be carried out, and what the client is told about it.

Pure Python (no Django), so any layer may raise them. The API's exception handler
(``core.api.exceptions``) answers them with their ``status`` and ``to_dict()`` as JSON; pages and the admin
show ``str(error)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


class ServiceError(Exception):
    """A request that cannot be carried out: 400 unless a subclass says otherwise."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None, details: Any = None,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details
        # The same refusal as a page puts it next to its field: a sentence that does not name the field (the
        # message, for the API and the commands, does). Defaults to the message.
        self.reason = reason or message

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"detail": self.message}
        if self.field:
            data["field"] = self.field
        if self.details is not None:
            data["details"] = self.details
        return data


class Conflict(ServiceError):
    status = 409


class NotAllowed(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class TooMany(ServiceError):
    """Over a budget (queued jobs, heavy computations at once, attempts of one kind): 429, try again later."""

    status = 429


class TooLarge(ServiceError):
    """A request or file over a configured size limit (413)."""

    status = 413


@runtime_checkable
class InvalidInput(Protocol):
    """An error of a pure core that locates a problem in the client's input (400).

    The pure cores know nothing of this app; an exception satisfies the protocol by having ``to_dict()``,
    e.g. ``annotation.formats.FormatError`` with ``{"file", "line", "column", "message"}``.
    """

    def to_dict(self) -> Mapping[str, object]: ...
