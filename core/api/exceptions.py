"""Errors as JSON: {"detail": ..., "field": ..., "line": ..., "column": ...} with a fitting status.

Settings: ``REST_FRAMEWORK["EXCEPTION_HANDLER"] = "core.api.exceptions.exception_handler"``.
"""

from __future__ import annotations

from typing import Any

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import InvalidInput, ServiceError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        return Response(exc.to_dict(), status=exc.status)
    if isinstance(exc, InvalidInput):
        return Response({"detail": str(exc), **exc.to_dict()}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
