"""API authentication: tokens that expire.

Settings: ``API_TOKEN_TTL_SECONDS`` (a token's lifetime from when it was issued). Wrong passwords lock
sign-in out (django-axes, configured in the settings; docs/security.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from core.prepared import PreparedQuery


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
