"""The engine run over a campaign: stored per rating unit, re-run when stale, exported by `analyze`."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Output, RatingUnit
from annotation.selectors import units_needing_analysis
from annotation.services.analysis import campaign_analyse
from annotation.services.queue import campaign_schedule_analysis
from core.models import BackgroundJob
from core.services import background_job_create
from tests.factories import public_id

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
    outputs = list(Output.objects.filter(source__campaign=demo_campaign).select_related("source", "system", "unit")
                   .order_by("source__order", "row_index", "id"))
    assert [(r["original_id"], r["system"]) for r in rows] == [(o.source.external_id, o.system.name) for o in outputs]
    # Each row is its output's analysis, the category the one the unit stores for the reports.
    assert [r["category"] for r in rows] == [o.unit.auto_category for o in outputs]
    assert all(r["category"] in {"split", "deletion", "paraphrase"} for r in rows)
    copies = [r for r in rows if r["system"] in {"Copy", "Copy-2"}]
    assert len(copies) == 8 and all(r["edits"] == [] for r in copies)
    # Copy and Copy-2 output the same text: one unit, one analysis, the same row but for the system's name.
    by_source: dict[str, list[dict[str, object]]] = {}
    for r in copies:
        by_source.setdefault(str(r["original_id"]), []).append({k: v for k, v in r.items() if k != "system"})
    assert all(len(pair) == 2 and pair[0] == pair[1] for pair in by_source.values())


class _BrokenEncoder:
    def encode(self, texts, spans):
        raise RuntimeError("CUDA out of memory")


def test_degraded_analysis_is_stored_as_such_and_redone_when_the_encoder_works(
    demo_campaign, annotators, client_for, monkeypatch
):
    from annotation.analysis import ENGINE_VERSION
    from annotation.analysis import engine as engine_module
    from annotation.selectors import campaign_analysis_counts
    from annotation.services.assignments import campaign_add_annotators
    from evaluation.selectors import campaign_report_fingerprint
    from evaluation.services.report import campaign_report_build

    with monkeypatch.context() as patch:
        patch.setattr(engine_module, "get_encoder", _BrokenEncoder)
        job = background_job_create(kind="analysis", subject=demo_campaign)
        assert campaign_analyse(campaign=demo_campaign, job=job) == 32
    degraded = RatingUnit.objects.filter(analysis_version=f"{ENGINE_VERSION}+lexical")
    n_degraded = degraded.count()
    assert 0 < n_degraded < 32  # only the texts that needed the encoder
    unit = degraded.first()
    assert unit.analysis["degraded"] is True and unit.analysis_error == "" and unit.analysis["edits"] is not None
    assert RatingUnit.objects.filter(analysis_version=ENGINE_VERSION).count() == 32 - n_degraded
    # Reported: the job's note, the campaign's counts, the annotator's unit payload.
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.DONE
    assert job.error.startswith(f"{n_degraded} of 32 output texts were analysed without the token encoder")
    counts = campaign_analysis_counts(campaign=demo_campaign)
    assert (counts["units"], counts["analysed"], counts["degraded"], counts["pending"]) == (32, 32, n_degraded,
                                                                                          n_degraded)
    assert campaign_report_build(campaign=demo_campaign, n_boot=10)["analysis"]["degraded"] == n_degraded
    fingerprint = campaign_report_fingerprint(campaign=demo_campaign)
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:1])
    assignment = annotators[0].assignments.get(source=unit.source)
    payload = client_for(annotators[0]).get(f"/api/assignments/{assignment.pk}/").json()
    flags = {u["id"]: u["analysis_degraded"] for u in payload["units"]}
    assert flags[public_id(assignment, unit.pk)] is True  # the page names units by opaque ids
    flagged = {public_id(assignment, u.pk) for u in degraded.filter(source=unit.source)}
    assert flags == {pk: pk in flagged for pk in flags}  # True exactly for the degraded units
    # The encoder works again: the next run redoes exactly the degraded units.
    assert units_needing_analysis(demo_campaign).count() == n_degraded
    assert campaign_analyse(campaign=demo_campaign) == n_degraded
    unit.refresh_from_db()
    assert unit.analysis_version == ENGINE_VERSION and unit.analysis["degraded"] is False
    assert campaign_analysis_counts(campaign=demo_campaign)["degraded"] == 0
    assert campaign_report_fingerprint(campaign=demo_campaign) != fingerprint  # the cached report is recomputed
    assert campaign_analyse(campaign=demo_campaign) == 0
    payload = client_for(annotators[0]).get(f"/api/assignments/{assignment.pk}/").json()
    assert not any(u["analysis_degraded"] for u in payload["units"])
