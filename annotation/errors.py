from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """A request that cannot be carried out; `code` maps to an HTTP status in the API layer."""

    status = 400

    def __init__(self, message: str, *, field: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

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
