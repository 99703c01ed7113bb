"""The rating record every statistic in this package consumes, and a loader for SimpEval CSVs."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RatingRecord:
    """One rating of one system output by one rater."""

    source: str  # source id (e.g. SimpEval original_id)
    output: str  # output id, unique in the campaign (one per system row)
    system: str
    rater: str  # rater id or pseudonym; for imported data the rating slot e.g. "slot-1"
    raw: float  # 0-100
    z: float | None = None  # given z-score (imported data) or None (to be computed)
    category: str | None = None  # "split" | "deletion" | "paraphrase" | None
    seconds: float | None = None  # time the rater spent on the source, if known
    unit: str | None = None  # rating unit: outputs with the same text shown once share one rating (None: own)


def rating_key(record: RatingRecord) -> tuple[str, str, str]:
    """What counts as one rating: one rater's score of one distinct output text of a source. Two systems
    that wrote the same text get one rating (the annotator saw and rated it once), not two. Records with no
    unit (imported data) are one rating each."""
    return (record.rater, record.source, record.unit if record.unit is not None else f"output:{record.output}")


def count_ratings(records: Sequence[RatingRecord]) -> int:
    """The number of ratings given (``rating_key``), as the dashboards and reports state it."""
    return len({rating_key(r) for r in records})


SENTENCE_TYPES: dict[str, str] = {
    "splittings": "split",
    "splitting": "split",
    "split": "split",
    "paraphrases": "paraphrase",
    "paraphrase": "paraphrase",
    "deletions": "deletion",
    "deletion": "deletion",
}

_RATING_COLUMN = re.compile(r"^rating_(\d+)$")


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def category_from_sentence_type(sentence_type: str | None) -> str | None:
    """``Splittings`` / ``Paraphrases`` / ``Deletions`` -> ``split`` / ``paraphrase`` / ``deletion``."""
    if sentence_type is None:
        return None
    return SENTENCE_TYPES.get(sentence_type.strip().lower())


def simpeval_rows_to_records(rows: Iterable[dict[str, str]], fieldnames: Iterable[str]) -> list[RatingRecord]:
    """Turn rows of a SimpEval-layout table into rating records.

    Each ``rating_k`` column is a rating slot (rater id ``slot-k``); its released
    z-score comes from ``rating_k_zscore`` or ``rating_k_z_score``.  Empty cells
    are missing ratings and produce no record.
    """
    names = list(fieldnames)
    slots = sorted(int(m.group(1)) for name in names if (m := _RATING_COLUMN.match(name)))
    z_column = {
        k: next((c for c in (f"rating_{k}_zscore", f"rating_{k}_z_score") if c in names), None) for k in slots
    }
    records: list[RatingRecord] = []
    seen_outputs: set[str] = set()
    for index, row in enumerate(rows):
        source = row["original_id"].strip()
        system = row["system"].strip()
        output = f"{source}:{system}"
        if output in seen_outputs:
            output = f"{output}:{index}"
        seen_outputs.add(output)
        category = category_from_sentence_type(row.get("sentence_type"))
        for k in slots:
            raw = _number(row.get(f"rating_{k}"))
            if raw is None:
                continue
            column = z_column[k]
            records.append(
                RatingRecord(
                    source=source,
                    output=output,
                    system=system,
                    rater=f"slot-{k}",
                    raw=raw,
                    z=_number(row.get(column)) if column else None,
                    category=category,
                )
            )
    return records


def simpeval_records(path: str | Path) -> list[RatingRecord]:
    """Load a released SimpEval CSV (``simpeval_2022.csv`` or ``simpeval_past.csv``).

    Output ids are ``"{original_id}:{system}"``; categories come from
    ``sentence_type`` when the file has that column.
    """
    with Path(path).open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return simpeval_rows_to_records(reader, reader.fieldnames or [])
