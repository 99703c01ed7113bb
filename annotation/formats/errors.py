from __future__ import annotations

import math


class FormatError(ValueError):
    """A problem in an input file, located by file, line and column."""

    def __init__(self, message: str, *, file: str, line: int | None = None, column: str | None = None) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.reason = message
        where = file
        if line is not None:
            where += f", line {line}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}")

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.reason}


def parse_number(value: str, *, file: str, line: int, column: str) -> float | None:
    """A cell's number; None for an empty cell or "nan"; FormatError (naming the cell) for anything else."""
    text = value.strip()
    if text == "" or text.lower() == "nan":
        return None
    try:
        number = float(text)
    except ValueError:
        raise FormatError(f"{value!r} is not a number", file=file, line=line, column=column) from None
    if not math.isfinite(number):
        raise FormatError(f"{value!r} is not a finite number", file=file, line=line, column=column)
    return number
