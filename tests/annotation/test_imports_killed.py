"""Imports killed partway (daphne restarted, the process killed) are cleaned up, not left half-written."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Campaign, ImportBatch, Output, RatingUnit, Reference, Slot, Source, System
from annotation.services import imports
from annotation.services.imports import ImportTakenOver, campaign_import, imports_clean_up
from core.errors import Conflict
from core.services import work_reap_all
from tests.annotation.test_imports_steps import jsonl


def run(payload: bytes, slug: str = "killed", filename: str = "f.jsonl") -> imports.ImportResult:
    return campaign_import(kind="jsonl", file=io.BytesIO(payload), filename=filename, campaign_slug=slug,
                           analyse=False)


def counts(slug: str) -> dict[str, int]:
    return {
        "sources": Source.objects.filter(campaign__slug=slug).count(),
        "outputs": Output.objects.filter(source__campaign__slug=slug).count(),
        "units": RatingUnit.objects.filter(source__campaign__slug=slug).count(),
        "references": Reference.objects.filter(source__campaign__slug=slug).count(),
        "systems": System.objects.filter(campaign__slug=slug).count(),
        "slots": Slot.objects.filter(campaign__slug=slug).count(),
        "batches": ImportBatch.objects.filter(campaign__slug=slug).count(),
    }


def kill_an_import(monkeypatch: pytest.MonkeyPatch, slug: str, *, seconds_ago: int) -> ImportBatch:
    """An import into `slug` that stops after two of its write steps, as if its process was killed (nothing
    undone), its last step `seconds_ago`; returns its batch."""
    calls = {"n": 0}
    real = Output.objects.bulk_create

    def die_on_third(objs: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return real(objs, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(Output.objects, "bulk_create", die_on_third)
        patch.setattr(imports._Writes, "undo", lambda self, error: None)  # a killed process undoes nothing
        with pytest.raises(KeyboardInterrupt):
            run(jsonl(40, start=100), slug=slug, filename="killed.jsonl")
    batch = ImportBatch.objects.get(campaign__slug=slug, complete=False)
    assert Source.objects.filter(import_batch=batch).exists()  # the partial rows are there
    ImportBatch.objects.filter(pk=batch.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=seconds_ago))
    return batch


@pytest.fixture
def kept(settings: Any) -> dict[str, int]:
    """A campaign with a complete import of 5 sources (which every clean-up must keep), small write steps."""
    settings.IMPORT_ROWS_PER_WRITE = 20
    settings.IMPORT_STALE_SECONDS = 300
    run(jsonl(5))
    return counts("killed")


@pytest.mark.django_db
def test_the_next_import_removes_a_killed_one_and_goes_on(kept, monkeypatch):
    kill_an_import(monkeypatch, "killed", seconds_ago=301)
    result = run(jsonl(3, start=500), filename="next.jsonl")
    assert result.sources == 3
    after = counts("killed")
    assert after["sources"] == kept["sources"] + 3 and after["outputs"] == kept["outputs"] + 6
    assert after["slots"] == kept["slots"] + 3 * result.campaign.ratings_per_output
    assert after["batches"] == 2 and not ImportBatch.objects.filter(filename="killed.jsonl").exists()
    assert not Source.objects.filter(external_id__in=["s100", "s101"]).exists()
    assert ImportBatch.objects.get(filename="next.jsonl").heartbeat_at is None  # done: no heartbeat left


@pytest.mark.django_db
def test_a_live_import_still_gives_409_saying_it_is_writing(kept, monkeypatch):
    batch = kill_an_import(monkeypatch, "killed", seconds_ago=30)
    with pytest.raises(Conflict, match=r"killed\.jsonl is being imported .*started .* UTC, still writing") as err:
        run(jsonl(3, start=500), filename="next.jsonl")
    assert "30 s ago" in str(err.value) or "31 s ago" in str(err.value)
    assert imports_clean_up() == [] and work_reap_all() == 0
    call_command("import_cleanup", stdout=io.StringIO(), stderr=io.StringIO())
    assert ImportBatch.objects.filter(pk=batch.pk, complete=False).exists()
    assert Source.objects.filter(import_batch=batch).exists()


@pytest.mark.django_db
def test_the_job_reaper_removes_a_killed_import(kept, monkeypatch):
    kill_an_import(monkeypatch, "killed", seconds_ago=301)
    assert work_reap_all() == 1
    assert counts("killed") == kept
    assert work_reap_all() == 0


@pytest.mark.django_db
def test_the_command_removes_a_killed_import(kept, monkeypatch):
    batch = kill_an_import(monkeypatch, "killed", seconds_ago=301)
    out, err = io.StringIO(), io.StringIO()
    call_command("import_cleanup", "--campaign", "killed", stdout=out, stderr=err)
    assert "removed the abandoned import of killed.jsonl into campaign 'killed'" in out.getvalue()
    assert "1 abandoned import(s) cleaned up" in err.getvalue()
    assert counts("killed") == kept and not ImportBatch.objects.filter(pk=batch.pk).exists()


@pytest.mark.django_db
def test_the_clean_up_of_one_campaign_leaves_the_others(kept, monkeypatch):
    run(jsonl(2), slug="other")
    kill_an_import(monkeypatch, "other", seconds_ago=301)
    assert imports_clean_up(campaign_slug="killed") == []
    assert ImportBatch.objects.filter(campaign__slug="other", complete=False).exists()
    assert len(imports_clean_up(campaign_slug="other")) == 1
    assert counts("other")["sources"] == 2


@pytest.mark.django_db
def test_an_import_killed_while_making_slots_gets_the_rest_of_them(kept):
    result = run(jsonl(30, start=200), filename="slots.jsonl")
    batch = result.batch
    new = Source.objects.filter(import_batch=batch)
    assert new.count() == 30
    wanted = counts("killed")["slots"]
    Slot.objects.filter(source__in=new.order_by("order")[10:]).delete()  # killed after the first slot step
    ImportBatch.objects.filter(pk=batch.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=301))
    assert len(imports_clean_up()) == 1
    assert counts("killed")["slots"] == wanted and counts("killed")["sources"] == kept["sources"] + 30
    assert ImportBatch.objects.get(pk=batch.pk).heartbeat_at is None


@pytest.mark.django_db
def test_an_import_taken_over_by_the_clean_up_stops_writing(kept, monkeypatch):
    """A live import that went silent for too long and was taken over stops at its next step and leaves the
    removal to the clean-up (which then removes everything it wrote)."""
    calls = {"n": 0}
    real = Output.objects.bulk_create

    def taken_over_after_second(objs: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            ImportBatch.objects.filter(complete=False).update(heartbeat_at=timezone.now() - timedelta(days=1))
        return real(objs, *args, **kwargs)

    monkeypatch.setattr(Output.objects, "bulk_create", taken_over_after_second)
    with pytest.raises(ImportTakenOver, match="IMPORT_STALE_SECONDS"):
        run(jsonl(40, start=100), filename="slow.jsonl")
    assert calls["n"] == 2
    assert ImportBatch.objects.filter(filename="slow.jsonl", complete=False).exists()  # left to the clean-up
    assert len(imports_clean_up()) == 1
    assert counts("killed") == kept
    assert Campaign.objects.filter(slug="killed").exists()
