"""Request parsers: DRF's JSON parser, refusing what no database stores the same way (400, not a 500).

PostgreSQL refuses NUL characters and lone surrogates (``"\\ud800"``) that SQLite would store, and JSON
nested deeper than Python's recursion limit crashes the parser: all three are refused here, once, for
every JSON request of the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32  # far more than any request of this API nests


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
        return data
