"""Spreadsheet formula injection guard for the CSV files the app writes (a pure module: no Django).

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return followed by one) as a formula. ``csv_cell`` prefixes such text with an apostrophe, which
spreadsheets show as text; numbers (``-0.25``) are left as they are.

Every CSV the product writes (API downloads, admin actions, management commands) goes through
``csv_writer``, the one writer that applies this rule to every cell, header included; no other module calls
``csv.writer`` (tests/probe/test_leaks.py checks). The SimpEval export uses it too: the released SimpEval
files have no cell that starts like a formula, so their byte-exact round trip is unchanged.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any, Protocol

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: object) -> object:
    """The value to write in a cell: text that a spreadsheet would run as a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def csv_row(values: Iterable[object]) -> list[object]:
    return [csv_cell(v) for v in values]


class _Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


class SafeCsvWriter:
    """``csv.writer`` whose every row passes through ``csv_row``."""

    def __init__(self, stream: _Writable, **options: Any) -> None:
        self._writer = csv.writer(stream, **options)

    def writerow(self, values: Iterable[object]) -> Any:
        return self._writer.writerow(csv_row(values))

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        for values in rows:
            self.writerow(values)


def csv_writer(stream: _Writable, **options: Any) -> SafeCsvWriter:
    """The writer for every CSV the product writes (``options`` as for ``csv.writer``)."""
    return SafeCsvWriter(stream, **options)
