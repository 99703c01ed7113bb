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


def _text(value: object, *, file: str, line: int, column: str, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise FormatError(f"expected a string, got {type(value).__name__}", file=file, line=line, column=column)
    if not value.strip() and not allow_empty:
        raise FormatError("empty text", file=file, line=line, column=column)
    return value


def read_jsonl(handle: Iterable[str], *, name: str) -> list[JsonlSource]:
    sources: list[JsonlSource] = []
    ids: dict[str, int] = {}
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            continue
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
        source_id = _text(source_id, file=name, line=number, column="id").strip()
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
            system = _text(item["system"], file=name, line=number, column=f"{where}.system").strip()
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
