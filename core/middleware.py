"""Request checks that hold for every page and API view."""

from __future__ import annotations

from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse


class RefuseNulMiddleware:
    """A NUL character in the path or query string is a 400: PostgreSQL cannot compare it and SQLite would,
    so without this the same URL answered 500 on one database and 404 on the other."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", "") or any(
            "\x00" in v for values in request.GET.lists() for v in [values[0], *values[1]]
        ):
            return JsonResponse({"detail": "NUL characters are not allowed in URLs"}, status=400)
        return self.get_response(request)


# How long a client told "database busy" waits before it tries again (the Retry-After header).
BUSY_RETRY_AFTER_SECONDS = 5


def database_busy(exc: BaseException) -> bool:
    """SQLite gave up waiting for its one write lock (after the busy timeout): a retry will do, not a 500."""
    return isinstance(exc, OperationalError) and "database is locked" in str(exc)


def busy_answer() -> tuple[dict[str, str], int, dict[str, str]]:
    """The body, status and headers that answer `database_busy`: 503 with Retry-After, on the API and pages."""
    return ({"detail": f"database busy, retry in {BUSY_RETRY_AFTER_SECONDS} seconds"},
            503, {"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})


class DatabaseBusyMiddleware:
    """A view whose write waited past SQLite's busy timeout answers 503 and Retry-After instead of a 500
    (the API's exception handler gives DRF views the same answer)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_busy(exception):
            return None
        body, status, headers = busy_answer()
        return JsonResponse(body, status=status, headers=headers)
