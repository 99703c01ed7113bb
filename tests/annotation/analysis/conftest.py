from __future__ import annotations

import csv
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def simpeval_2022(simpeval_data_dir: Path) -> list[dict[str, str]]:
    """The rows of the released simpeval_2022.csv."""
    path = simpeval_data_dir / "simpeval" / "simpeval_2022.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
