"""JSONL import format for new studies: one source per line.

    {"id": "s1", "source": "...", "references": ["..."], "outputs": [{"system": "A", "text": "..."}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import FormatError


@dataclass(frozen=True)
class JsonlSource:
    line: int
    id: str
    source: str
    references: tuple[str, ...]
    outputs: tuple[tuple[str, str], ...]  # (system, text)


# Ids and system names are stored in columns of 200 characters (SQLite would keep longer ones, PostgreSQL not).
MAX_NAME_CHARS = 200
# Nesting deeper than any valid line needs; deeper input would exhaust the JSON parser's recursion.
MAX_NESTING = 20


def _text(
    value: object, *, file: str, line: int, column: str, allow_empty: bool = False, max_chars: int | None = None
) -> str:
    if not isinstance(value, str):
        raise FormatError(f"expected a string, got {type(value).__name__}", file=file, line=line, column=column)
    if not value.strip() and not allow_empty:
        raise FormatError("empty text", file=file, line=line, column=column)
    if "\x00" in value:
        raise FormatError("text holds a NUL character (\\u0000)", file=file, line=line, column=column)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise FormatError(f"text holds a lone surrogate (\\u{ord(value[exc.start]):04x}), which is not Unicode text",
                          file=file, line=line, column=column) from None
    if max_chars is not None and len(value.strip()) > max_chars:
        raise FormatError(f"at most {max_chars} characters (got {len(value.strip())})", file=file, line=line,
                          column=column)
    return value


def _too_deep(raw: str) -> bool:
    """More than MAX_NESTING brackets open at once (a cheap scan that ignores brackets inside strings)."""
    depth = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif char in "]}":
            depth -= 1
    return False


def read_jsonl(handle: Iterable[str], *, name: str) -> list[JsonlSource]:
    sources: list[JsonlSource] = []
    ids: dict[str, int] = {}
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
        if _too_deep(raw):
            raise FormatError(f"JSON nested more than {MAX_NESTING} levels deep", file=name, line=number)
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FormatError(f"invalid JSON: {exc.msg}", file=name, line=number, column=f"char {exc.colno}") from None
        if not isinstance(obj, dict):
            raise FormatError("each line must be a JSON object", file=name, line=number)
        unknown = set(obj) - {"id", "source", "references", "outputs"}
        if unknown:
            raise FormatError(f"unknown key(s): {', '.join(sorted(unknown))}", file=name, line=number)
        for key in ("id", "source", "outputs"):
            if key not in obj:
                raise FormatError("missing key", file=name, line=number, column=key)
        source_id = obj["id"]
        if isinstance(source_id, int) and not isinstance(source_id, bool):
            source_id = str(source_id)
        source_id = _text(source_id, file=name, line=number, column="id", max_chars=MAX_NAME_CHARS).strip()
        if source_id in ids:
            raise FormatError(f"duplicate id {source_id!r} (first on line {ids[source_id]})", file=name,
                              line=number, column="id")
        ids[source_id] = number
        text = _text(obj["source"], file=name, line=number, column="source")
        refs_raw = obj.get("references", [])
        if not isinstance(refs_raw, list):
            raise FormatError("expected a list", file=name, line=number, column="references")
        refs = tuple(
            _text(r, file=name, line=number, column=f"references[{i}]") for i, r in enumerate(refs_raw)
        )
        outputs_raw = obj["outputs"]
        if not isinstance(outputs_raw, list) or not outputs_raw:
            raise FormatError("expected a non-empty list", file=name, line=number, column="outputs")
        outputs: list[tuple[str, str]] = []
        systems: set[str] = set()
        for i, item in enumerate(outputs_raw):
            where = f"outputs[{i}]"
            if not isinstance(item, dict) or set(item) - {"system", "text"} or not {"system", "text"} <= set(item):
                raise FormatError('expected {"system": ..., "text": ...}', file=name, line=number, column=where)
            system = _text(item["system"], file=name, line=number, column=f"{where}.system",
                           max_chars=MAX_NAME_CHARS).strip()
            if system in systems:
                raise FormatError(f"duplicate system {system!r} for this source", file=name, line=number,
                                  column=f"{where}.system")
            systems.add(system)
            # An empty output is kept (it is a system's real output, to be rated low).
            outputs.append(
                (system, _text(item["text"], file=name, line=number, column=f"{where}.text", allow_empty=True))
            )
        sources.append(JsonlSource(number, source_id, text, refs, tuple(outputs)))
    if not sources:
        raise FormatError("no sources in the file", file=name, line=1)
    return sources
