"""The engine run over a campaign: stored per rating unit, re-run when stale, exported by `analyze`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import RatingUnit
from annotation.services.analysis import campaign_analyse, campaign_schedule_analysis, units_needing_analysis
from core.models import BackgroundJob

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_analysis_is_stored_and_rerun_only_when_stale(demo_campaign):
    assert campaign_analyse(campaign=demo_campaign) == 32
    unit = RatingUnit.objects.get(source__external_id="harbour", outputs__system__name="Trimmer")
    assert unit.auto_category == "deletion"
    assert unit.analysis["reasons"]["compression_ratio"] < 0.5
    assert units_needing_analysis(demo_campaign).count() == 0
    assert campaign_analyse(campaign=demo_campaign) == 0
    split = RatingUnit.objects.get(source__external_id="harbour", outputs__system__name="Splitter")
    assert split.auto_category == "split"
    assert any(e["type"] == "split" for e in split.analysis["edits"])
    # A new threshold makes every unit stale again.
    demo_campaign.compression_threshold = 0.3
    demo_campaign.save()
    assert units_needing_analysis(demo_campaign).count() == 32


def test_import_queues_a_job_that_the_worker_runs(demo_campaign, django_capture_on_commit_callbacks):
    RatingUnit.objects.update(analysis_version="")
    with django_capture_on_commit_callbacks(execute=True):
        job = campaign_schedule_analysis(campaign=demo_campaign)
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == (BackgroundJob.Status.DONE, 32, 32)


def test_analyze_command_writes_one_object_per_output(demo_campaign, tmp_path):
    out = tmp_path / "a.jsonl"
    call_command("analyze", "--campaign", "demo", "--jsonl", str(out), stdout=io.StringIO(), stderr=io.StringIO())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 36
    assert set(rows[0]) >= {"original_id", "system", "category", "reasons", "edits", "features"}
    copies = [r for r in rows if r["system"] in {"Copy", "Copy-2"}]
    assert all(r["edits"] == [] for r in copies)
