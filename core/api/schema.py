"""OpenAPI post-processing: the error answers every operation can give, documented once.

Settings: ``SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"]`` lists ``add_error_responses``. The errors are
the exception handler's (``core.api.exceptions``): a JSON object with ``detail`` and, for one bad field,
``field``; a serializer's 400 names each bad field with its messages.
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "An error: `detail` says what is wrong, `field` (or the keys of a serializer's 400) where.",
    "properties": {"detail": {}, "field": {"type": "string"}},
    "additionalProperties": True,
}
ERRORS = {
    "400": "Bad input: a field error names the field",
    "401": "Not logged in, or the token is unknown or expired (see WWW-Authenticate)",
    "403": "Logged in, but this role may not do this",
    "404": "No such object, or not one this user may see",
    "405": "Method not allowed",
    "409": "Conflicts with the current state (already submitted, already imported, ...)",
    "413": "The request body or file is larger than the server accepts",
    "415": "The request body's media type is not one this operation reads",
    "429": "Too many requests (sign-in lock-out, attempt limits, your cap of queued jobs, a heavy read already "
           "being computed); retry after the Retry-After seconds where given",
}
WRITE_ONLY = {"409", "413", "415"}
WRITES = {"post", "put", "patch", "delete"}


def add_error_responses(result: dict[str, Any], generator: object, request: object, public: bool) -> dict[str, Any]:
    """drf-spectacular post-processing hook: add the error responses to every operation that lacks them."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"$ref": "#/components/schemas/Error"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for code, description in ERRORS.items():
                if code in WRITE_ONLY and method not in WRITES:
                    continue
                operation["responses"].setdefault(
                    code, {"description": description, "content": {"application/json": {"schema": ref}}}
                )
    return result
