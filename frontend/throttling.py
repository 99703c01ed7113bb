"""Attempt limits on the pages (core.throttle's rule) and django-axes' answer to a locked sign-in.

A refused request gets 429 with ``Retry-After``: the API and JSON endpoints a JSON body
``{"detail", "field", "details": {"retry_after"}}``, pages the styled 429 page saying when to try again.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render

from core.throttle import Throttled, client_address, throttle_check, wait_words
from frontend.errors import is_api


def throttled_response(request: HttpRequest, error: Throttled) -> HttpResponse:
    wants_json = is_api(request) or "application/json" in request.headers.get("Accept", "")
    response: HttpResponse
    if wants_json:
        response = JsonResponse(error.to_dict(), status=error.status)
    else:
        response = render(request, "frontend/errors/429.html", {"message": error.message}, status=error.status)
    response["Retry-After"] = str(error.retry_after)
    return response


View = Callable[..., HttpResponseBase]


def address_throttled(scope: str, *, what: str, methods: tuple[str, ...] = ("POST",)) -> Callable[[View], View]:
    """Count each request of `methods` against the rate of `scope` per client address; past it, answer 429
    before the view runs."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if request.method in methods:
                try:
                    throttle_check(scope, client_address(request), what=what)
                except Throttled as error:
                    return throttled_response(request, error)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


def locked_out_response(request: HttpRequest, original_response: HttpResponse | None = None,
                        credentials: dict[str, Any] | None = None) -> HttpResponse:
    """django-axes' answer (AXES_LOCKOUT_CALLABLE) once an address or a username is locked out."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    error = Throttled(f"too many failed sign-ins from this address or for this username; sign-in is locked, "
                      f"try again in {wait_words(seconds)}", retry_after=seconds, field="password")
    return throttled_response(request, error)
