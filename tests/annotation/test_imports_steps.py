"""Imports that do not hold the database: bounded, written in short steps, undone when a step fails."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest

from annotation.formats import FormatError
from annotation.models import Campaign, ImportBatch, Output, RatingUnit, Reference, Slot, Source, System
from annotation.services.imports import campaign_import
from core.errors import Conflict, TooLarge
from tests.conftest import REPO


def jsonl(n: int, *, start: int = 0, text: str = "The original sentence {i}.") -> bytes:
    return "\n".join(
        json.dumps({"id": f"s{i}", "source": text.format(i=i), "references": [f"Simple {i}."],
                    "outputs": [{"system": s, "text": f"Output {i} of {s}."} for s in "AB"]})
        for i in range(start, start + n)
    ).encode()


def run(payload: bytes, slug: str = "steps", **kwargs: Any):
    return campaign_import(kind="jsonl", file=io.BytesIO(payload), filename="f.jsonl", campaign_slug=slug,
                           analyse=False, **kwargs)


@pytest.mark.django_db
def test_an_import_writes_in_many_short_steps_and_completes(settings):
    settings.IMPORT_ROWS_PER_WRITE = 20
    result = run(jsonl(30))
    assert result.writes > 5
    assert result.batch.complete and ImportBatch.objects.get().complete
    assert Source.objects.count() == 30 and Output.objects.count() == 60 and Reference.objects.count() == 30
    assert Slot.objects.count() == 30 * result.campaign.ratings_per_output
    assert list(Source.objects.order_by("order").values_list("external_id", flat=True)[:3]) == ["s0", "s1", "s2"]


@pytest.mark.django_db
def test_a_step_that_fails_leaves_nothing_of_the_import(settings, monkeypatch):
    settings.IMPORT_ROWS_PER_WRITE = 20
    run(jsonl(5), slug="kept")
    before = {m: m.objects.count() for m in (Source, Output, RatingUnit, Reference, System, Slot, ImportBatch)}
    calls = {"n": 0}
    real = Output.objects.bulk_create

    def fail_third(objs, *args: Any, **kwargs: Any):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full")
        return real(objs, *args, **kwargs)

    monkeypatch.setattr(Output.objects, "bulk_create", fail_third)
    with pytest.raises(RuntimeError):
        run(jsonl(40, start=100), slug="kept")  # into an existing campaign: its rows stay
    assert calls["n"] == 3  # two steps of the import had been written before the one that failed
    calls["n"] = 0
    with pytest.raises(RuntimeError):
        run(jsonl(40, start=100), slug="fresh")  # a campaign made by the import goes too
    after = {m: m.objects.count() for m in before}
    assert after == before
    assert not Campaign.objects.filter(slug="fresh").exists()


@pytest.mark.django_db
def test_an_unfinished_import_blocks_a_second_one_and_gives_no_work(settings):
    run(jsonl(3), slug="busy")
    campaign = Campaign.objects.get(slug="busy")
    ImportBatch.objects.create(campaign=campaign, kind="jsonl", filename="running.jsonl", sha256="x", complete=False)
    with pytest.raises(Conflict, match=r"running\.jsonl is being imported"):
        run(jsonl(3, start=10), slug="busy")
    assert Source.objects.filter(campaign=campaign).count() == 3


@pytest.mark.django_db
def test_one_text_longer_than_the_limit_is_refused_naming_line_and_column(settings):
    settings.IMPORT_MAX_TEXT_CHARS = 100
    lines = jsonl(3).decode().splitlines()
    lines[1] = json.dumps({"id": "long", "source": "ok", "outputs": [{"system": "A", "text": "x" * 101}]})
    with pytest.raises(FormatError) as err:
        run("\n".join(lines).encode())
    assert err.value.to_dict()["line"] == 2 and err.value.to_dict()["column"] == "outputs[0].text"
    assert "IMPORT_MAX_TEXT_CHARS" in str(err.value)
    assert not Source.objects.exists() and not Campaign.objects.filter(slug="steps").exists()


@pytest.mark.django_db
def test_more_sources_or_outputs_than_the_limit_are_refused(settings):
    settings.IMPORT_MAX_SOURCES = 4
    with pytest.raises(TooLarge, match="IMPORT_MAX_SOURCES"):
        run(jsonl(5))
    settings.IMPORT_MAX_SOURCES = 10
    settings.IMPORT_MAX_OUTPUTS = 9
    with pytest.raises(TooLarge, match="IMPORT_MAX_OUTPUTS"):
        run(jsonl(5))
    assert not Source.objects.exists()


def test_a_text_over_the_limit_is_a_400_on_the_api(client_for, researcher, demo_campaign, settings):
    settings.IMPORT_MAX_TEXT_CHARS = 50
    upload = io.BytesIO(json.dumps({"id": "n1", "source": "y" * 51, "outputs": [{"system": "A", "text": "t"}]})
                        .encode())
    upload.name = "long.jsonl"
    got = client_for(researcher).post(f"/api/campaigns/{demo_campaign.slug}/imports/",
                                      {"file": upload, "kind": "jsonl"}, format="multipart")
    assert got.status_code == 400, got.content
    assert got.json()["line"] == 1 and got.json()["column"] == "source"


@pytest.mark.slow
def test_small_writes_go_on_during_an_import_on_a_sqlite_file(tmp_path):
    """With a one-second busy timeout: before, the import held the write lock for its whole run and every
    write beside it failed with "database is locked"."""
    run_ = subprocess.run(
        [sys.executable, "-m", "tests.annotation.sqlite_import_load", str(tmp_path / "import.sqlite3"), "2000"],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )
    assert run_.returncode == 0, run_.stderr[-3000:]
    result = json.loads(run_.stdout.strip().splitlines()[-1])
    assert result["writes_failed"] == 0, result["errors"]
    assert result["writes_ok"] >= 10
    assert result["sources"] == result["imported"] == 2000 and result["slots"] == 6000
