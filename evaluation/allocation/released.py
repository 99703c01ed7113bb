"""The released studies as :class:`~evaluation.allocation.study.Study` grids, read from the data folder.

``past`` (SimpEval_past, 100 sources x 24 systems x 5 rater slots), ``2022`` (SimpEval_2022, 60 x 6 x 3)
and ``simpda`` (SimpDA_2022's simplicity ratings by 11 named workers, whose z-scores are recomputed).
The folder is ``SIMPEVAL_DATA_DIR`` (``config.datasets.simpeval_data_dir``); nothing is copied into the
repository. The product's study planner and the experiments read them through :func:`released_study`.
"""

from __future__ import annotations

import csv
from pathlib import Path

from evaluation.allocation.study import Study
from evaluation.stats.records import RatingRecord, simpeval_records

RELEASED = {"past": "SimpEval_past", "2022": "SimpEval_2022", "simpda": "SimpDA_2022"}
FILES = {"past": "simpeval_past.csv", "2022": "simpeval_2022.csv", "simpda": "simpDA_2022.csv"}


def released_path(name: str, root: Path) -> Path:
    """The CSV file of released study ``name`` under the data folder ``root``."""
    if name not in RELEASED:
        raise ValueError(f"unknown released study {name!r}; known: {', '.join(RELEASED)}")
    return root / "simpeval" / FILES[name]


def released_records(name: str, root: Path) -> list[RatingRecord]:
    """The rating records of released study ``name`` (SimpEval: released z-scores; SimpDA_2022: raw only)."""
    path = released_path(name, root)
    if name in ("past", "2022"):
        return simpeval_records(path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["Answer.simplicity"].strip()]
    return [
        RatingRecord(source=row["Input.id"], output=f"{row['Input.id']}:{row['Input.system']}",
                     system=row["Input.system"], rater=f"worker-{row['WorkerId']}",
                     raw=float(row["Answer.simplicity"]))
        for row in rows
    ]


def released_study(name: str, root: Path) -> Study:
    """Released study ``name`` as a grid (raises FileNotFoundError when the data folder lacks it)."""
    return Study.from_records(released_records(name, root), name=RELEASED[name])
