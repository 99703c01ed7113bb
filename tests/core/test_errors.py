"""The API's answer to application errors and pure cores' input errors, and the role permissions."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.exceptions import NotFound as DrfNotFound
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from annotation.formats import FormatError
from core.api.exceptions import exception_handler
from core.errors import Conflict, NotAllowed, NotFound, ServiceError
from core.permissions import IsPlatformAdmin, IsResearcher


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (ServiceError("bad slug", field="slug"), 400, {"detail": "bad slug", "field": "slug"}),
        (Conflict("already running", details={"job": 3}), 409, {"detail": "already running", "details": {"job": 3}}),
        (NotAllowed("not yours"), 403, {"detail": "not yours"}),
        (NotFound("no such version"), 404, {"detail": "no such version"}),
        (
            FormatError("not a number", file="a.csv", line=4, column="rating_1"),
            400,
            {"detail": "a.csv, line 4, column 'rating_1': not a number", "file": "a.csv", "line": 4,
             "column": "rating_1", "message": "not a number"},
        ),
    ],
    ids=["service", "conflict", "not-allowed", "not-found", "format"],
)
def test_errors_become_json_with_their_status(error: Exception, status: int, body: dict[str, Any]) -> None:
    response = exception_handler(error, {})
    assert response is not None
    assert (response.status_code, response.data) == (status, body)


def test_other_errors_are_left_to_drf_or_raised() -> None:
    response = exception_handler(DrfNotFound("nope"), {})
    assert response is not None and response.status_code == 404
    assert exception_handler(ValueError("a bug"), {}) is None  # a 500, as it should be


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("role", "researcher", "admin"),
    [(None, False, False), ("annotator", False, False), ("researcher", True, False), ("admin", True, True)],
)
def test_role_permissions(make_user: Any, role: str | None, researcher: bool, admin: bool) -> None:
    request = APIRequestFactory().get("/")
    if role is not None:
        force_authenticate(request, user=make_user(f"u-{role}", role))
    drf_request = APIView().initialize_request(request)
    assert IsResearcher().has_permission(drf_request, APIView()) is researcher
    assert IsPlatformAdmin().has_permission(drf_request, APIView()) is admin
