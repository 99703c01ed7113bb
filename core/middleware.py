"""Request checks that hold for every page and API view."""

from __future__ import annotations

from collections.abc import Callable

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
