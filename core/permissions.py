"""DRF permissions by role. The user model (``AUTH_USER_MODEL``) says what a role may do through its
``is_researcher`` and ``is_platform_admin`` properties; anonymous users have neither."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView


def _has_role(request: Request, flag: str) -> bool:
    user = request.user
    return bool(user and user.is_authenticated and getattr(user, flag, False))


class IsResearcher(BasePermission):
    message = "Only researchers and admins may do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return _has_role(request, "is_researcher")


class IsPlatformAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return _has_role(request, "is_platform_admin")
