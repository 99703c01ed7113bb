"""The SimpEval CSV layouts released with the LENS paper.

Two layouts exist: SimpEval_2022 (`original_id, original, generation, system, sentence_type,
rating_k, rating_k_zscore`) and SimpEval_past (`id, original, generation, processed_generation,
original_id, system, rating_k, rating_k_z_score`). Both are read into the same rows; the layout
(column order, z-score suffix, number style) is kept so a file can be written back unchanged.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.csvsafe import csv_writer

from .errors import FormatError, parse_number

if TYPE_CHECKING:
    from _csv import Reader as CsvReader

# Ids and system names are stored in columns of 200 characters (SQLite would keep longer ones, PostgreSQL not).
MAX_NAME_CHARS = 200
REQUIRED = ("original_id", "original", "generation", "system")
RATING_RE = re.compile(r"^rating_(\d+)$")
Z_RE = re.compile(r"^rating_(\d+)_(zscore|z_score)$")
SENTENCE_TYPES = {"Splittings": "split", "Deletions": "deletion", "Paraphrases": "paraphrase"}
SENTENCE_TYPE_NAMES = {v: k for k, v in SENTENCE_TYPES.items()}


@dataclass(frozen=True)
class SimpEvalRow:
    line: int
    original_id: str
    original: str
    generation: str
    system: str
    processed_generation: str | None
    row_id: str | None
    category: str | None
    ratings: tuple[float | None, ...]
    zscores: tuple[float | None, ...]


@dataclass
class SimpEvalFile:
    name: str
    columns: list[str]
    n_ratings: int
    z_suffix: str
    rating_style: str  # "int" ("73") or "float" ("73.0")
    rows: list[SimpEvalRow] = field(default_factory=list)

    @property
    def layout(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "n_ratings": self.n_ratings,
            "z_suffix": self.z_suffix,
            "rating_style": self.rating_style,
        }


@dataclass(frozen=True)
class _Header:
    """A validated header: where each column is, which columns hold ratings and z-scores."""

    columns: list[str]
    index: dict[str, int]
    rating_columns: list[tuple[int, str]]  # (k, "rating_k"), k = 1..N
    z_columns: dict[int, str]  # k -> "rating_k_zscore" / "rating_k_z_score"; empty when the file has none
    z_suffix: str

    @property
    def n_ratings(self) -> int:
        return len(self.rating_columns)


def read_simpeval(handle: Iterable[str], *, name: str) -> SimpEvalFile:
    """Parse a SimpEval CSV. Raises FormatError naming the file, line and column of the first problem."""
    reader = csv.reader(handle)
    header = _parse_header(_first_record(reader, name), name)
    parser = _RowParser(header, name)
    rows: list[SimpEvalRow] = []
    line = 1
    for line, record in _records(reader, name):
        if any(cell.strip() for cell in record):  # blank records are skipped
            rows.append(parser.parse(record, line))
    if not rows:
        raise FormatError("no data rows", file=name, line=line)
    return SimpEvalFile(
        name=name, columns=header.columns, n_ratings=header.n_ratings, z_suffix=header.z_suffix,
        rating_style=parser.rating_style, rows=rows,
    )


# --- layout detection and header validation ---------------------------------------------------------


def _first_record(reader: CsvReader, name: str) -> list[str]:
    try:
        return next(reader)
    except StopIteration:
        raise FormatError("the file is empty", file=name, line=1) from None
    except csv.Error as exc:
        raise FormatError(f"not a readable CSV ({exc})", file=name, line=1) from None


def _parse_header(raw: Sequence[str], name: str) -> _Header:
    columns = [h.strip().lstrip("\ufeff") for h in raw]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise FormatError(f"missing required column(s): {', '.join(missing)}", file=name, line=1)
    rating_columns = _rating_columns(columns, name)
    z_columns, z_suffix = _z_columns(columns, len(rating_columns), name)
    return _Header(
        columns=columns, index={h: i for i, h in enumerate(columns)}, rating_columns=rating_columns,
        z_columns=z_columns, z_suffix=z_suffix,
    )


def _rating_columns(columns: Sequence[str], name: str) -> list[tuple[int, str]]:
    """``rating_1..rating_N`` in rating order (the file may list them in any order)."""
    found = sorted((int(m.group(1)), h) for h in columns if (m := RATING_RE.match(h)))
    if not found:
        raise FormatError("no rating columns (rating_1, rating_2, ...)", file=name, line=1)
    if [k for k, _ in found] != list(range(1, len(found) + 1)):
        raise FormatError("rating columns must be numbered rating_1..rating_N without gaps", file=name, line=1)
    return found


def _z_columns(columns: Sequence[str], n_ratings: int, name: str) -> tuple[dict[int, str], str]:
    """The z-score column of each rating (none at all is fine) and their spelling (``zscore`` by default)."""
    matches = [(int(m.group(1)), h, m.group(2)) for h in columns if (m := Z_RE.match(h))]
    suffixes = {suffix for _, _, suffix in matches}
    if len(suffixes) > 1:
        raise FormatError("z-score columns mix the _zscore and _z_score spellings", file=name, line=1)
    z_columns = {k: h for k, h, _ in matches}
    if z_columns and sorted(z_columns) != list(range(1, n_ratings + 1)):
        raise FormatError(f"expected z-score columns for rating_1..rating_{n_ratings}", file=name, line=1)
    return z_columns, suffixes.pop() if suffixes else "zscore"


# --- per-row parsing ------------------------------------------------------------------------------------


def _records(reader: CsvReader, name: str) -> Iterator[tuple[int, list[str]]]:
    """(first line of the record, its cells) for every record after the header, blank ones included."""
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise FormatError(f"malformed CSV ({exc})", file=name, line=reader.line_num) from None
        yield start, record


class _RowParser:
    """Parses data rows one by one, checking them against each other and recording the number style."""

    def __init__(self, header: _Header, name: str) -> None:
        self.header = header
        self.name = name
        self.seen: dict[tuple[str, str], int] = {}  # (original_id, system) -> line
        self.originals: dict[str, tuple[str, int]] = {}  # original_id -> (original text, line)
        self.float_style = False

    @property
    def rating_style(self) -> str:
        """``"float"`` once any rating was written with a decimal point (``73.0``), else ``"int"``."""
        return "float" if self.float_style else "int"

    def parse(self, record: Sequence[str], line: int) -> SimpEvalRow:
        header, name = self.header, self.name
        if len(record) != len(header.columns):
            raise FormatError(f"expected {len(header.columns)} fields, found {len(record)}", file=name, line=line)

        def cell(column: str) -> str:
            return record[header.index[column]]

        # An empty output is a real (if bad) system output: SimpEval_past has one, rated.
        for column in ("original_id", "original", "system"):
            if not cell(column).strip():
                raise FormatError("empty value", file=name, line=line, column=column)
        for column in ("original_id", "system", "id"):
            if column in header.index and len(cell(column).strip()) > MAX_NAME_CHARS:
                raise FormatError(f"at most {MAX_NAME_CHARS} characters (got {len(cell(column).strip())})",
                                  file=name, line=line, column=column)
        ratings, zscores = self._scores(cell, line)
        key = (cell("original_id").strip(), cell("system").strip())
        original = cell("original")
        self._check_against_earlier_rows(key, original, line)
        processed = cell("processed_generation") if "processed_generation" in header.index else None
        return SimpEvalRow(
            line=line, original_id=key[0], original=original, generation=cell("generation"),
            system=key[1], processed_generation=processed,
            row_id=cell("id") if "id" in header.index else None, category=self._category(cell, line),
            ratings=tuple(ratings), zscores=tuple(zscores),
        )

    def _scores(
        self, cell: Callable[[str], str], line: int
    ) -> tuple[list[float | None], list[float | None]]:
        """Each rating (0-100, blank allowed) followed by its z-score (blank unless the rating is there)."""
        ratings: list[float | None] = []
        zscores: list[float | None] = []
        for k, column in self.header.rating_columns:
            raw = cell(column)
            value = parse_number(raw, file=self.name, line=line, column=column)
            if value is not None:
                if not 0.0 <= value <= 100.0:
                    raise FormatError(f"rating {raw} is outside 0-100", file=self.name, line=line, column=column)
                self.float_style = self.float_style or not _written_as_integer(raw)
            ratings.append(value)
            zscores.append(self._zscore(cell, k, value, line))
        return ratings, zscores

    def _zscore(self, cell: Callable[[str], str], k: int, rating: float | None, line: int) -> float | None:
        column = self.header.z_columns.get(k)
        if column is None:
            return None
        z = parse_number(cell(column), file=self.name, line=line, column=column)
        if z is not None and rating is None:
            raise FormatError("a z-score without its rating", file=self.name, line=line, column=column)
        return z

    def _check_against_earlier_rows(self, key: tuple[str, str], original: str, line: int) -> None:
        """One row per (source, system), and one original text per source."""
        if key in self.seen:
            raise FormatError(
                f"duplicate row for source {key[0]!r} and system {key[1]!r} (first on line {self.seen[key]})",
                file=self.name, line=line,
            )
        self.seen[key] = line
        known = self.originals.setdefault(key[0], (original, line))
        if known[0] != original:
            raise FormatError(
                f"source {key[0]!r} has a different original text than on line {known[1]}",
                file=self.name, line=line, column="original",
            )

    def _category(self, cell: Callable[[str], str], line: int) -> str | None:
        if "sentence_type" not in self.header.index:
            return None
        label = cell("sentence_type").strip()
        if not label:
            return None
        if label not in SENTENCE_TYPES:
            raise FormatError(
                f"unknown sentence_type {label!r} (expected {', '.join(SENTENCE_TYPES)})",
                file=self.name, line=line, column="sentence_type",
            )
        return SENTENCE_TYPES[label]


# --- number format ----------------------------------------------------------------------------------------


def _written_as_integer(raw: str) -> bool:
    return re.fullmatch(r"\d+", raw.strip()) is not None


def format_rating(value: float | None, style: str) -> str:
    if value is None:
        return ""
    if style == "int" and float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def format_z(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def write_simpeval(rows: Iterable[dict[str, Any]], *, columns: Sequence[str]) -> str:
    """Write rows (dicts keyed by column name, values already formatted as text) in the given column order."""
    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([row.get(column, "") for column in columns])
    return buffer.getvalue()


def default_columns(n_ratings: int) -> list[str]:
    """The SimpEval 2022 column layout."""
    return (
        ["original_id", "original", "generation", "system", "sentence_type"]
        + [f"rating_{k}" for k in range(1, n_ratings + 1)]
        + [f"rating_{k}_zscore" for k in range(1, n_ratings + 1)]
    )
