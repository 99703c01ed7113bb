"""Client addresses and attempt limits: one rule each, used by the pages, the API and django-axes.

- `client_address`: ``REMOTE_ADDR``, or the address that the last of ``TRUSTED_PROXY_COUNT`` proxies saw,
  taken from ``X-Forwarded-For`` (the same rule as DRF's ``NUM_PROXIES``, which the settings set to the same
  number). With no trusted proxy (the default) a client-supplied ``X-Forwarded-For`` is ignored.
- `throttle_hit` counts one attempt of a kind (a *scope*: ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``) by one
  client (an address, a user) in the ``throttle`` cache, in fixed windows, and says how long to wait when the
  rate is spent. `throttle_check` raises `Throttled` (429) instead; `AddressThrottle` is the API's form.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from core.errors import TooMany

if TYPE_CHECKING:  # rest_framework.views imports the throttle classes named in the settings
    from rest_framework.request import Request
    from rest_framework.views import APIView

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
           "d": 86400, "day": 86400}


class Throttled(TooMany):
    """Too many attempts of one kind by one client: 429, with the seconds to wait (``Retry-After``)."""

    def __init__(self, message: str, *, retry_after: int, field: str | None = None) -> None:
        super().__init__(message, field=field, details={"retry_after": retry_after})
        self.retry_after = retry_after


def client_address(request: HttpRequest | Request) -> str:
    """The client's address: behind ``TRUSTED_PROXY_COUNT`` proxies, the one the outermost of them saw."""
    remote = str(request.META.get("REMOTE_ADDR") or "")
    proxies = int(settings.TRUSTED_PROXY_COUNT)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if proxies <= 0 or not forwarded:
        return remote
    hops = str(forwarded).split(",")
    return hops[-min(proxies, len(hops))].strip()


def parse_rate(rate: str) -> tuple[int, int]:
    """``"5/hour"`` -> (5, 3600): attempts allowed per window of that many seconds."""
    count, _, period = rate.partition("/")
    try:
        allowed = int(count)
        seconds = PERIODS[period.strip().lower()]
    except (ValueError, KeyError):
        raise ValueError(f"{rate!r} is not a rate like '5/min' (periods: s, min, hour, day)") from None
    if allowed < 0:
        raise ValueError(f"{rate!r}: the number of attempts is negative")
    return allowed, seconds


def throttle_rate(scope: str) -> tuple[int, int]:
    return parse_rate(str(api_settings.DEFAULT_THROTTLE_RATES[scope]))


def throttle_hit(scope: str, ident: str) -> int | None:
    """Count one attempt of `scope` by `ident`; None when allowed, else the seconds until the next window."""
    allowed, window = throttle_rate(scope)
    now = time.time()
    start = int(now // window)
    digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    key = f"rate:{scope}:{digest}:{start}"
    cache = caches["throttle"]
    if cache.add(key, 1, timeout=window + 1):
        count = 1
    else:
        try:
            count = cache.incr(key)
        except ValueError:  # the window's key expired between add and incr
            cache.add(key, 1, timeout=window + 1)
            count = 1
    if count <= allowed:
        return None
    return max(1, math.ceil((start + 1) * window - now))


def wait_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} seconds"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes" if minutes < 90 else f"{math.ceil(minutes / 60)} hours"


def throttle_check(scope: str, ident: str, *, what: str, field: str | None = None) -> None:
    """Count one attempt; raise `Throttled` naming `what` ("tries at this practice sentence") when refused."""
    wait = throttle_hit(scope, ident)
    if wait is not None:
        allowed, window = throttle_rate(scope)
        raise Throttled(f"too many {what} ({allowed} per {wait_words(window)}); try again in {wait_words(wait)}",
                        retry_after=wait, field=field)


class AddressThrottle(BaseThrottle):
    """The API's form of `throttle_hit`: requests of `methods` per client address; subclasses name the scope."""

    scope = ""
    methods: tuple[str, ...] = ("POST",)
    _wait: int | None = None

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method not in self.methods:
            return True
        self._wait = throttle_hit(self.scope, client_address(request))
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class SignInThrottle(AddressThrottle):
    """Sign-in requests per client address (the token endpoint; the /login/ page counts the same scope)."""

    scope = "auth"
