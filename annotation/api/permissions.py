"""Role checks of the API. Which campaigns a user may see is `annotation.selectors.campaign_list_visible`."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from annotation.models import User


class IsResearcher(BasePermission):
    message = "Only researchers and admins may do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return isinstance(user, User) and user.is_authenticated and user.is_researcher


class IsPlatformAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return isinstance(user, User) and user.is_authenticated and user.is_platform_admin
