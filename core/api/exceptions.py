"""Errors as JSON: {"detail": ..., "field": ..., "line": ..., "column": ...} with a fitting status.

Settings: ``REST_FRAMEWORK["EXCEPTION_HANDLER"] = "core.api.exceptions.exception_handler"``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import InvalidInput, ServiceError
from core.middleware import busy_answer, database_busy


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        retry = exc.details.get("retry_after") if isinstance(exc.details, dict) else None
        return Response(exc.to_dict(), status=exc.status, headers={"Retry-After": str(retry)} if retry else None)
    if isinstance(exc, InvalidInput):
        return Response({"detail": str(exc), **exc.to_dict()}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"the request body is larger than the server accepts ({exc})"},
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if database_busy(exc):
        body, code, headers = busy_answer()
        return Response(body, status=code, headers=headers)
    if isinstance(exc, DjangoValidationError):
        # A model's full_clean() in a service: the same 400 as a serializer's, field by field.
        detail: Any = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(detail, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
