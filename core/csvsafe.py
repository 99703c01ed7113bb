"""Spreadsheet formula injection guard for the CSV files the app writes (a pure module: no Django).

A spreadsheet opening a CSV runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return followed by one) as a formula. ``csv_cell`` prefixes such text with an apostrophe, which
spreadsheets show as text; numbers (``-0.25``) are left as they are. The SimpEval export does not use
it: its byte-exact round trip with the released files comes first, and it is read by programs.
"""

from __future__ import annotations

from collections.abc import Iterable

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
