"""The SimpEval CSV layouts released with the LENS paper.

Two layouts exist: SimpEval_2022 (`original_id, original, generation, system, sentence_type,
rating_k, rating_k_zscore`) and SimpEval_past (`id, original, generation, processed_generation,
original_id, system, rating_k, rating_k_z_score`). Both are read into the same rows; the layout
(column order, z-score suffix, number style) is kept so a file can be written back unchanged.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import FormatError

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


def _number(value: str, *, file: str, line: int, column: str) -> float | None:
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


def read_simpeval(handle: Iterable[str], *, name: str) -> SimpEvalFile:
    """Parse a SimpEval CSV. Raises FormatError naming the file, line and column of the first problem."""
    reader = csv.reader(handle)
    try:
        header = next(reader)
    except StopIteration:
        raise FormatError("the file is empty", file=name, line=1) from None
    except csv.Error as exc:
        raise FormatError(f"not a readable CSV ({exc})", file=name, line=1) from None
    header = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise FormatError(f"missing required column(s): {', '.join(missing)}", file=name, line=1)
    rating_cols = sorted((int(m.group(1)), h) for h in header if (m := RATING_RE.match(h)))
    if not rating_cols:
        raise FormatError("no rating columns (rating_1, rating_2, ...)", file=name, line=1)
    n = len(rating_cols)
    if [k for k, _ in rating_cols] != list(range(1, n + 1)):
        raise FormatError("rating columns must be numbered rating_1..rating_N without gaps", file=name, line=1)
    z_cols = {int(m.group(1)): (h, m.group(2)) for h in header if (m := Z_RE.match(h))}
    suffixes = {suffix for _, suffix in z_cols.values()}
    if len(suffixes) > 1:
        raise FormatError("z-score columns mix the _zscore and _z_score spellings", file=name, line=1)
    if z_cols and sorted(z_cols) != list(range(1, n + 1)):
        raise FormatError(f"expected z-score columns for rating_1..rating_{n}", file=name, line=1)
    index = {h: i for i, h in enumerate(header)}
    parsed = SimpEvalFile(
        name=name, columns=header, n_ratings=n, z_suffix=suffixes.pop() if suffixes else "zscore",
        rating_style="int",
    )
    seen: dict[tuple[str, str], int] = {}
    originals: dict[str, tuple[str, int]] = {}
    line = 1
    float_style = False
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise FormatError(f"malformed CSV ({exc})", file=name, line=reader.line_num) from None
        line = start
        if not any(cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            raise FormatError(
                f"expected {len(header)} fields, found {len(record)}", file=name, line=line
            )

        def cell(column: str, record: Sequence[str] = record) -> str:
            return record[index[column]]

        # An empty output is a real (if bad) system output: SimpEval_past has one, rated.
        for column in ("original_id", "original", "system"):
            if not cell(column).strip():
                raise FormatError("empty value", file=name, line=line, column=column)
        ratings: list[float | None] = []
        zscores: list[float | None] = []
        for k, column in rating_cols:
            raw = cell(column)
            value = _number(raw, file=name, line=line, column=column)
            if value is not None:
                if not 0.0 <= value <= 100.0:
                    raise FormatError(f"rating {raw} is outside 0-100", file=name, line=line, column=column)
                if not re.fullmatch(r"\d+", raw.strip()):
                    float_style = True
            ratings.append(value)
            if z_cols:
                zcol = z_cols[k][0]
                z = _number(cell(zcol), file=name, line=line, column=zcol)
                if z is not None and value is None:
                    raise FormatError("a z-score without its rating", file=name, line=line, column=zcol)
                zscores.append(z)
            else:
                zscores.append(None)
        key = (cell("original_id").strip(), cell("system").strip())
        if key in seen:
            raise FormatError(
                f"duplicate row for source {key[0]!r} and system {key[1]!r} (first on line {seen[key]})",
                file=name, line=line,
            )
        seen[key] = line
        original = cell("original")
        known = originals.setdefault(key[0], (original, line))
        if known[0] != original:
            raise FormatError(
                f"source {key[0]!r} has a different original text than on line {known[1]}",
                file=name, line=line, column="original",
            )
        category = None
        if "sentence_type" in index:
            label = cell("sentence_type").strip()
            if label:
                if label not in SENTENCE_TYPES:
                    raise FormatError(
                        f"unknown sentence_type {label!r} (expected {', '.join(SENTENCE_TYPES)})",
                        file=name, line=line, column="sentence_type",
                    )
                category = SENTENCE_TYPES[label]
        processed = cell("processed_generation") if "processed_generation" in index else None
        parsed.rows.append(
            SimpEvalRow(
                line=line, original_id=key[0], original=original, generation=cell("generation"),
                system=key[1], processed_generation=processed,
                row_id=cell("id") if "id" in index else None, category=category,
                ratings=tuple(ratings), zscores=tuple(zscores),
            )
        )
    if not parsed.rows:
        raise FormatError("no data rows", file=name, line=line)
    parsed.rating_style = "float" if float_style else "int"
    return parsed


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
    writer = csv.writer(buffer, lineterminator="\n")
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
