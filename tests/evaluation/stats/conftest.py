from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluation.stats.records import RatingRecord

REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_DIR = Path(os.environ.get("SIMPEVAL_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture
def simpeval_dir() -> Path:
    folder = DATA_DIR / "simpeval"
    if not folder.is_dir():
        pytest.skip(f"released SimpEval data not found in {folder}")
    return folder


def make_records(
    table: dict[str, dict[str, dict[str, float]]],
    *,
    source_of: dict[str, str] | None = None,
    category: str | None = None,
) -> list[RatingRecord]:
    """Records from ``{system: {output: {rater: raw}}}``; each output its own source unless given."""
    records = []
    for system, outputs in table.items():
        for output, ratings in outputs.items():
            source = (source_of or {}).get(output, output)
            for rater, raw in ratings.items():
                records.append(
                    RatingRecord(
                        source=source, output=output, system=system, rater=rater, raw=raw, category=category
                    )
                )
    return records
