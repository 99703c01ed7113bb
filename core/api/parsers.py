"""Request parsers: DRF's JSON parser, refusing what no database stores the same way (400, not a 500).

PostgreSQL refuses NUL characters and lone surrogates (``"\\ud800"``) that SQLite would store, and JSON
nested deeper than Python's recursion limit crashes the parser: all three are refused here, once, for
every JSON request of the API. So are numbers outside the range of a double, the range RFC 8259 (section 6)
names for interoperable JSON: an integer past it (``1`` and 400 zeros parses to an int that ``float()``
cannot convert) or a float literal too large to be finite (``1e400`` parses to infinity); that answer is a
400 naming the field that holds it. Narrower bounds (a column's range) are each serializer's or service's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.errors import ServiceError

MAX_DEPTH = 32  # far more than any request of this API nests


# Where a value sits in the document, as a linked list built while walking it: (parent, key), None at the top.
_Path = tuple[Any, str | int] | None


def _field(path: _Path) -> str:
    """``units[0].rating`` for the path of that value (the field named in the 400)."""
    parts: list[str | int] = []
    while path is not None:
        path, key = path
        parts.append(key)
    text = ""
    for key in reversed(parts):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text[:200]


def json_number_problem(data: Any) -> tuple[str, str] | None:
    """(field, message) for the first number of `data` (parsed JSON) outside the range of a double, or None:
    an integer ``float()`` cannot convert, or a float that is not finite (``1e400`` parses to inf)."""
    stack: list[tuple[Any, _Path]] = [(data, None)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, bool | str) or value is None:
            continue
        if isinstance(value, int | float):
            try:
                finite = math.isfinite(value)
            except OverflowError:  # an int past the largest double
                finite = False
            if not finite:
                return _field(path), "the number is too large (beyond the range of a double, about 1.8e308)"
        elif isinstance(value, dict):
            stack.extend((item, (path, str(key))) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend((item, (path, i)) for i, item in enumerate(value))
    return None


def json_text_problem(data: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes `data` (parsed JSON) unstorable, or None: NUL characters, lone surrogates, deep nesting."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return "a string holds a NUL character (\\u0000)"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate (e.g. \\ud800), which is not Unicode text"
        elif isinstance(value, dict | list):
            if depth >= max_depth:
                return f"nested more than {max_depth} levels deep"
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return None


def json_load_checked(raw: bytes) -> Any:
    """A JSON request body read outside DRF (a page's own fetch): refused as SafeJSONParser refuses it, with a
    ServiceError (400) naming the field where one is to blame."""
    try:
        data = json.loads(raw or b"{}", parse_constant=_no_constant)
    except RecursionError:
        raise ServiceError(f"the request body is nested more than {MAX_DEPTH} levels deep", field="body") from None
    except ValueError:  # also invalid UTF-8 and NaN / Infinity
        raise ServiceError("the request body is not JSON", field="body") from None
    problem = json_text_problem(data)
    if problem is not None:
        raise ServiceError(f"the request body is refused: {problem}", field="body")
    refuse_unheld_numbers(data)
    return data


def refuse_unheld_numbers(data: Any) -> None:
    """A 400 naming the field of the first number in ``data`` that no column or float holds."""
    number = json_number_problem(data)
    if number is not None:
        field, message = number
        raise ServiceError(f"{field or 'the body'}: {message}", field=field or "body")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class SafeJSONParser(JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {MAX_DEPTH} levels deep") from None
        problem = json_text_problem(data)
        if problem is not None:
            raise ParseError(f"JSON parse error - {problem}")
        refuse_unheld_numbers(data)
        return data
