"""The logged-in user of a request, typed: every interface narrows `request.user` here, once."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request

from annotation.models import User


def request_user(request: HttpRequest | Request) -> User:
    """The authenticated user; PermissionDenied (a 403) for an anonymous one.

    Views reach this behind `login_required` or DRF's `IsAuthenticated`, so the error is a safety net.
    """
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied("Log in first.")
    return user
