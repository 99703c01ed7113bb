from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def data_dir() -> Path:
    return Path(os.environ.get("SIMPEVAL_DATA_DIR", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def simpeval_2022() -> list[dict[str, str]]:
    path = data_dir() / "simpeval" / "simpeval_2022.csv"
    if not path.exists():
        pytest.skip(f"released data not found at {path}")
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
