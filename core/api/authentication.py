"""API authentication: tokens that expire, and a throttle on wrong passwords.

Settings: ``API_TOKEN_TTL_SECONDS`` (a token's lifetime from when it was issued) and
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["auth"]`` (wrong passwords allowed per client address).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.throttling import SimpleRateThrottle

from core.prepared import PreparedQuery

if TYPE_CHECKING:  # rest_framework.views imports the authentication classes named in the settings
    from rest_framework.request import Request
    from rest_framework.views import APIView


def token_expired(token: Token) -> bool:
    ttl = timedelta(seconds=int(settings.API_TOKEN_TTL_SECONDS))
    return bool(token.created < timezone.now() - ttl)


def _token_with_user(*, key: str) -> QuerySet[Token]:
    return Token.objects.select_related("user").filter(key=key)


_TOKEN_WITH_USER = PreparedQuery(_token_with_user)  # read by every API request: compiled once (core.prepared)


class ExpiringTokenAuthentication(TokenAuthentication):
    """DRF's token scheme (``Authorization: Token <key>``), with DRF's refusals (an unknown key, an inactive
    user); a token older than the TTL is deleted and refused."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        found = _TOKEN_WITH_USER.run(key=key)
        if not found:
            raise AuthenticationFailed("Invalid token.")
        token = found[0]
        user = token.user
        if not user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        if token_expired(token):
            token.delete()
            raise AuthenticationFailed("Token expired; ask for a new one at /api/auth/token/.")
        return user, token


class FailedLoginThrottle(SimpleRateThrottle):
    """Counts wrong passwords per client address; once the rate's number is reached the view answers 429.

    Unlike DRF's rate throttles a request only counts when the view calls `record_failure`, so people
    who type their password right are never held up by it.
    """

    scope = "auth"

    def get_cache_key(self, request: Request, view: APIView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def throttle_success(self) -> bool:
        return True  # checking does not count; record_failure does

    def record_failure(self, request: Request, view: APIView) -> None:
        key = self.get_cache_key(request, view)
        now = self.timer()
        _, duration = self.parse_rate(self.get_rate())
        window = duration or 60
        history = [t for t in self.cache.get(key, []) if t > now - window]
        self.cache.set(key, [now, *history], window)
