from __future__ import annotations


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
