"""Multi-aspect rating files: Simplicity-DA and the crowd (MTurk) layout of SimpDA_2022 / SimpLikert_2022.

Two layouts are read into the same rows:

* Simplicity-DA (Alva-Manchego et al., 2021; WIKI-DA in the LENS paper): ``sent_id, sys_name, orig_sent,
  simp_sent, sys_type, <aspect>, <aspect>_zscore, ...``: one row per output, the ratings already
  averaged over raters, with released z-scores. Its rater is one aggregated pseudo-rater (``rater=""``).
* Crowd: ``WorkerId, Input.id, Input.original, Input.simplified, Input.system, Answer.<aspect>, ...``:
  one row per worker and output, no z-scores; other MTurk columns are ignored.

Aspects are whatever the file has. Each aspect's scale is one of :data:`SCALES`: given by the caller,
or the scale whose range holds most of the aspect's ratings (ties: the narrower one); every rating must
lie on it (Likert scales: whole points only). SimpLikert_2022 rates fluency and adequacy 1-5 and
simplicity -2..2 (LENS paper, Table 7).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import FormatError, parse_number


def _spacing_free(text: str) -> str:
    """Two cells of one file hold the same text when they differ in spacing only. Case differences are real
    here: a crowd file may spell one source two ways, and the importer keeps the spelling its reference files
    know."""
    return " ".join(text.split())


@dataclass(frozen=True)
class Scale:
    """A rating scale: its bounds and whether only whole points are allowed (Likert)."""

    name: str
    low: float
    high: float
    whole_points: bool

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high and (not self.whole_points or float(value).is_integer())


# In tie-break order: the narrower scales first.
SCALES: tuple[Scale, ...] = (
    Scale("1..5", 1.0, 5.0, True),
    Scale("-2..2", -2.0, 2.0, True),
    Scale("0..100", 0.0, 100.0, False),
)
SCALE_BY_NAME: dict[str, Scale] = {s.name: s for s in SCALES}

SIMPLICITY_DA = "simplicity-da"
CROWD = "crowd"


@dataclass(frozen=True)
class _Layout:
    name: str
    source_id: str
    original: str
    output: str
    system: str
    rater: str | None
    system_type: str | None

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(c for c in (self.rater, self.source_id, self.original, self.output, self.system) if c)


LAYOUTS: dict[str, _Layout] = {
    SIMPLICITY_DA: _Layout(SIMPLICITY_DA, "sent_id", "orig_sent", "simp_sent", "sys_name", None, "sys_type"),
    CROWD: _Layout(CROWD, "Input.id", "Input.original", "Input.simplified", "Input.system", "WorkerId", None),
}
_CROWD_ASPECT_PREFIX = "Answer."
_Z_SUFFIX = "_zscore"


@dataclass(frozen=True)
class Aspect:
    name: str  # "fluency"
    column: str  # "fluency" / "Answer.fluency"
    z_column: str | None  # "fluency_zscore"; None when the file gives no z-scores
    scale: str  # a name from SCALES


@dataclass(frozen=True)
class DARow:
    line: int
    source_id: str
    original: str
    output: str
    system: str
    rater: str  # WorkerId; "" for Simplicity-DA's aggregated ratings
    system_type: str | None
    ratings: dict[str, float]  # aspect -> raw rating (blank cells left out)
    zscores: dict[str, float]  # aspect -> released z-score


@dataclass(frozen=True)
class SourceText:
    """One of the original texts a source id carries in the file (whitespace differences ignored)."""

    text: str
    line: int  # first line with it
    rows: int


@dataclass
class DAFile:
    name: str
    layout: str  # SIMPLICITY_DA or CROWD
    columns: list[str]
    aspects: list[Aspect]
    rows: list[DARow] = field(default_factory=list)
    source_texts: dict[str, list[SourceText]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def aspect_names(self) -> list[str]:
        return [a.name for a in self.aspects]

    @property
    def max_raters_per_output(self) -> int:
        counts: dict[tuple[str, str], int] = {}
        for row in self.rows:
            counts[(row.source_id, row.system)] = counts.get((row.source_id, row.system), 0) + 1
        return max(counts.values(), default=1)

    def ambiguous_sources(self) -> dict[str, list[SourceText]]:
        """Sources whose rows give more than one original text (the crowd files have one)."""
        return {sid: texts for sid, texts in self.source_texts.items() if len(texts) > 1}

    def layout_facts(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "columns": self.columns,
            "aspects": [
                {"name": a.name, "column": a.column, "z_column": a.z_column, "scale": a.scale} for a in self.aspects
            ],
        }


def read_da(handle: Iterable[str], *, name: str, scales: Mapping[str, str] | None = None) -> DAFile:
    """Parse a multi-aspect CSV of either layout.

    Args:
        handle: Lines of the file (newlines kept, as ``csv`` wants them).
        name: The file name errors show.
        scales: Aspect -> scale name (see :data:`SCALES`) for aspects whose scale the caller knows;
            the others are inferred.

    Raises:
        FormatError: naming the file, line and column of the first problem.
    """
    reader = csv.reader(handle)
    try:
        header = [h.strip().lstrip("\ufeff") for h in next(reader)]
    except StopIteration:
        raise FormatError("the file is empty", file=name, line=1) from None
    except csv.Error as exc:
        raise FormatError(f"not a readable CSV ({exc})", file=name, line=1) from None
    layout = _detect_layout(header, name)
    columns = _aspect_columns(header, layout, name)
    index = {h: i for i, h in enumerate(header)}
    for aspect in scales or {}:
        if aspect not in columns:
            raise FormatError(f"a scale was given for aspect {aspect!r}, which the file does not have", file=name)
        if scales is not None and scales[aspect] not in SCALE_BY_NAME:
            raise FormatError(
                f"unknown scale {scales[aspect]!r} for aspect {aspect!r} (expected one of: {', '.join(SCALE_BY_NAME)})",
                file=name,
            )
    rows: list[DARow] = []
    cells: dict[str, list[tuple[int, str, float]]] = {a: [] for a in columns}  # aspect -> (line, text, value)
    checker = _RowChecker(name)
    line = 1
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
            raise FormatError(f"expected {len(header)} fields, found {len(record)}", file=name, line=line)
        row = _parse_row(record, index, layout, columns, name, line, cells)
        checker.check(row)
        rows.append(row)
    if not rows:
        raise FormatError("no data rows", file=name, line=line)
    aspects = [
        Aspect(name=a, column=col, z_column=z, scale=_scale(a, col, cells[a], (scales or {}).get(a), name))
        for a, (col, z) in columns.items()
    ]
    parsed = DAFile(name=name, layout=layout.name, columns=header, aspects=aspects, rows=rows,
                    source_texts=checker.source_texts())
    empty = [str(row.line) for row in rows if not row.output.strip()]
    if empty:
        parsed.warnings.append(f"{len(empty)} empty output(s), kept as rated: line {', '.join(empty[:10])}")
    return parsed


# --- header ----------------------------------------------------------------------------------------------


def _detect_layout(header: Sequence[str], name: str) -> _Layout:
    if "WorkerId" in header or any(h.startswith(_CROWD_ASPECT_PREFIX) for h in header):
        layout = LAYOUTS[CROWD]
    elif "sent_id" in header or "orig_sent" in header:
        layout = LAYOUTS[SIMPLICITY_DA]
    else:
        raise FormatError(
            "not a multi-aspect rating file: expected the Simplicity-DA columns (sent_id, sys_name, orig_sent, "
            "simp_sent, <aspect>, <aspect>_zscore, ...) or the crowd columns (WorkerId, Input.id, Input.original, "
            "Input.simplified, Input.system, Answer.<aspect>, ...)",
            file=name, line=1,
        )
    missing = [c for c in layout.required if c not in header]
    if missing:
        raise FormatError(f"missing required column(s): {', '.join(missing)}", file=name, line=1)
    if len(set(header)) != len(header):
        twice = sorted({h for h in header if header.count(h) > 1})
        raise FormatError(f"column(s) named twice: {', '.join(twice)}", file=name, line=1)
    return layout


def _aspect_columns(header: Sequence[str], layout: _Layout, name: str) -> dict[str, tuple[str, str | None]]:
    """Aspect -> (its rating column, its z-score column or None), in file order."""
    found: dict[str, tuple[str, str | None]] = {}
    if layout.name == CROWD:
        for h in header:
            if h.startswith(_CROWD_ASPECT_PREFIX) and not h.endswith(_Z_SUFFIX):
                aspect = h[len(_CROWD_ASPECT_PREFIX):].strip()
                if aspect:
                    z = h + _Z_SUFFIX
                    found[aspect] = (h, z if z in header else None)
    else:
        identity = {layout.source_id, layout.original, layout.output, layout.system, layout.system_type}
        for h in header:
            if h and h not in identity and not h.endswith(_Z_SUFFIX):
                z = h + _Z_SUFFIX
                found[h] = (h, z if z in header else None)
        orphans = [h for h in header if h.endswith(_Z_SUFFIX) and h[: -len(_Z_SUFFIX)] not in header]
        if orphans:
            raise FormatError(f"z-score column(s) without their rating column: {', '.join(orphans)}",
                              file=name, line=1)
    if not found:
        expected = "Answer.<aspect>" if layout.name == CROWD else "<aspect> (e.g. fluency, meaning, simplicity)"
        raise FormatError(f"no aspect columns ({expected})", file=name, line=1)
    return found


# --- rows ------------------------------------------------------------------------------------------------


def _parse_row(
    record: Sequence[str],
    index: Mapping[str, int],
    layout: _Layout,
    columns: Mapping[str, tuple[str, str | None]],
    name: str,
    line: int,
    cells: dict[str, list[tuple[int, str, float]]],
) -> DARow:
    def cell(column: str) -> str:
        return record[index[column]]

    for column in layout.required:
        if column != layout.output and not cell(column).strip():
            raise FormatError("empty value", file=name, line=line, column=column)
    ratings: dict[str, float] = {}
    zscores: dict[str, float] = {}
    for aspect, (column, z_column) in columns.items():
        raw = parse_number(cell(column), file=name, line=line, column=column)
        if raw is not None:
            ratings[aspect] = raw
            cells[aspect].append((line, cell(column).strip(), raw))
        if z_column is not None:
            z = parse_number(cell(z_column), file=name, line=line, column=z_column)
            if z is not None:
                if raw is None:
                    raise FormatError("a z-score without its rating", file=name, line=line, column=z_column)
                zscores[aspect] = z
    system_type = cell(layout.system_type).strip() if layout.system_type and layout.system_type in index else None
    return DARow(
        line=line, source_id=cell(layout.source_id).strip(), original=cell(layout.original),
        output=cell(layout.output), system=cell(layout.system).strip(),
        rater=cell(layout.rater).strip() if layout.rater else "", system_type=system_type or None,
        ratings=ratings, zscores=zscores,
    )


class _RowChecker:
    """Checks rows against each other: one row per (source, system, rater), one text per output."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: dict[tuple[str, str, str], int] = {}
        self.outputs: dict[tuple[str, str], tuple[str, int]] = {}
        self.texts: dict[str, dict[str, list[int]]] = {}  # source -> normalised text -> [first line, rows]
        self.first_form: dict[tuple[str, str], str] = {}

    def check(self, row: DARow) -> None:
        key = (row.source_id, row.system, row.rater)
        if key in self.seen:
            who = f" by rater {row.rater!r}" if row.rater else ""
            raise FormatError(
                f"duplicate rating of source {row.source_id!r}, system {row.system!r}{who} "
                f"(first on line {self.seen[key]})",
                file=self.name, line=row.line,
            )
        self.seen[key] = row.line
        known = self.outputs.setdefault((row.source_id, row.system), (row.output, row.line))
        if _spacing_free(known[0]) != _spacing_free(row.output):
            raise FormatError(
                f"system {row.system!r} has a different output for source {row.source_id!r} than on line {known[1]}",
                file=self.name, line=row.line,
            )
        variants = self.texts.setdefault(row.source_id, {})
        norm = _spacing_free(row.original)
        if norm not in variants:
            variants[norm] = [row.line, 0]
            self.first_form[(row.source_id, norm)] = row.original.strip()
        variants[norm][1] += 1

    def source_texts(self) -> dict[str, list[SourceText]]:
        return {
            source: [
                SourceText(text=self.first_form[(source, norm)], line=first, rows=n)
                for norm, (first, n) in variants.items()
            ]
            for source, variants in self.texts.items()
        }


# --- scales ----------------------------------------------------------------------------------------------


def _scale(
    aspect: str, column: str, values: Sequence[tuple[int, str, float]], given: str | None, name: str
) -> str:
    """The aspect's scale (given, or the one whose range holds most ratings, ties to the narrower), every
    rating checked against it (whole points included)."""
    for line, text, value in values:
        if given is None and not any(s.holds(value) for s in SCALES):
            raise FormatError(
                f"rating {text} is on none of the known scales ({', '.join(SCALE_BY_NAME)})",
                file=name, line=line, column=column,
            )
    if given is not None:
        scale = SCALE_BY_NAME[given]
        how = "given"
    else:
        counts = [sum(1 for _, _, v in values if s.low <= v <= s.high) for s in SCALES]
        scale = SCALES[counts.index(max(counts))]
        how = "of the other ratings"
    for line, text, value in values:
        if not scale.holds(value):
            whole = " (whole points only)" if scale.whole_points else ""
            raise FormatError(
                f"rating {text} is not on the {scale.name} scale{whole} {how} of {aspect}",
                file=name, line=line, column=column,
            )
    return scale.name
