"""Importing a released SimpEval file and exporting it gives the file back, byte for byte."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.django_db, pytest.mark.data]


@pytest.mark.parametrize("name", ["simpeval_2022.csv", "simpeval_past.csv"])
def test_import_then_export_round_trips_exactly(simpeval_data_dir, tmp_path, name):
    released = simpeval_data_dir / "simpeval" / name
    call_command("import_simpeval", str(released), "--campaign", "rt", "--no-analysis", stdout=io.StringIO())
    out = tmp_path / name
    call_command("export_simpeval", "--campaign", "rt", "--out", str(out), stdout=io.StringIO())
    original_rows = list(csv.DictReader(released.open(newline="", encoding="utf-8")))
    exported_rows = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
    # Same row set with the same values (floats unchanged) ...
    key = lambda r: (r["original_id"], r["system"])  # noqa: E731
    assert {key(r): r for r in exported_rows} == {key(r): r for r in original_rows}
    # ... and in fact the very same bytes.
    assert out.read_bytes() == released.read_bytes()


def test_past_with_ten_asset_references(simpeval_data_dir):
    from annotation.models import Reference, Source

    asset = simpeval_data_dir / "asset"
    past = simpeval_data_dir / "simpeval" / "simpeval_past.csv"
    call_command(
        "import_simpeval", str(past), "--campaign", "past", "--no-analysis",
        "--references", str(asset / "asset.test.orig"), *[str(asset / f"asset.test.simp.{i}") for i in range(10)],
        stdout=io.StringIO(),
    )
    assert Source.objects.filter(campaign__slug="past").count() == 100
    assert Reference.objects.filter(source__campaign__slug="past").count() == 1000
