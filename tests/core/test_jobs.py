"""Background-job bookkeeping: the services, the tasks' one failure path, and a job's subject."""

from __future__ import annotations

from typing import Any

import pytest

from annotation.models import Campaign
from core.models import BackgroundJob
from core.services import (
    background_job_create,
    background_job_fail,
    background_job_finish,
    background_job_progress,
    background_job_start,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign() -> Campaign:
    return Campaign.objects.create(name="Jobs", slug="jobs")


def test_a_job_goes_from_queued_to_done_with_its_progress(campaign: Campaign) -> None:
    job = background_job_create(kind="analysis", subject=campaign, total=3)
    assert (job.status, job.total, job.subject) == (BackgroundJob.Status.QUEUED, 3, campaign)
    background_job_start(job_id=job.pk, total=10)
    job.refresh_from_db()
    assert (job.status, job.total, job.done) == (BackgroundJob.Status.RUNNING, 10, 0)
    background_job_progress(job_id=job.pk, done=4)
    job.refresh_from_db()
    assert job.done == 4 and job.finished_at is None
    background_job_finish(job_id=job.pk, done=10, note="2 skipped")
    job.refresh_from_db()
    assert (job.status, job.done, job.error) == (BackgroundJob.Status.DONE, 10, "2 skipped")
    assert job.finished_at is not None


def test_a_failure_records_the_exception_type_and_message(campaign: Campaign) -> None:
    job = background_job_create(kind="analysis", subject=campaign)
    background_job_fail(job.pk, ValueError("no encoder"))
    job.refresh_from_db()
    assert (job.status, job.error) == (BackgroundJob.Status.FAILED, "ValueError: no encoder")
    assert job.finished_at is not None
    background_job_fail(job.pk, "stopped by hand")
    job.refresh_from_db()
    assert job.error == "stopped by hand"


def test_a_campaign_lists_its_jobs_and_takes_them_along_when_deleted(campaign: Campaign) -> None:
    other = Campaign.objects.create(name="Other", slug="other")
    first = background_job_create(kind="analysis", subject=campaign)
    second = background_job_create(kind="lens-rescore", subject=campaign)
    kept = background_job_create(kind="analysis", subject=other)
    unrelated = background_job_create(kind="maintenance")
    assert list(campaign.jobs.all()) == [second, first]  # newest first
    assert Campaign.objects.get(jobs=first) == campaign
    campaign.delete()
    assert set(BackgroundJob.objects.all()) == {kept, unrelated}
    assert unrelated.subject is None


def test_the_analysis_task_reports_its_failure_through_the_job(
    campaign: Campaign, monkeypatch: pytest.MonkeyPatch
) -> None:
    from annotation import tasks

    def broken(**kwargs: object) -> int:
        raise RuntimeError("encoder down")

    monkeypatch.setattr(tasks, "campaign_analyse", broken)
    job = background_job_create(kind="analysis", subject=campaign)
    # As a worker runs it (the test settings' eager mode re-raises before Celery's failure hooks run).
    result = tasks.analysis_run.apply(args=(job.pk,), throw=False)
    assert result.failed() and isinstance(result.result, RuntimeError)  # the task still fails for Celery
    job.refresh_from_db()
    assert (job.status, job.error) == (BackgroundJob.Status.FAILED, "RuntimeError: encoder down")


def test_the_rescoring_task_reports_its_failure_through_the_job(campaign: Campaign) -> None:
    from metrics.models import LearnedVersion
    from metrics.tasks import lens_campaign_score_run

    job = background_job_create(kind="lens-rescore", subject=campaign)
    result = lens_campaign_score_run.apply(kwargs={"job_id": job.pk, "version_id": 987654}, throw=False)
    assert result.failed() and isinstance(result.result, LearnedVersion.DoesNotExist)
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.FAILED
    assert job.error.startswith("DoesNotExist: LearnedVersion matching query does not exist")


def test_no_code_outside_core_services_writes_a_job_status() -> None:
    """Job statuses are written by core.services only (core.selectors reads them); tasks report failure through
    background_job_fail."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for app in ("annotation", "evaluation", "metrics", "frontend", "core")
        for path in (root / app).rglob("*.py")
        if path.relative_to(root).as_posix() not in ("core/services.py", "core/selectors.py")
        and "migrations" not in path.parts
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "BackgroundJob.Status." in line or "BackgroundJob.objects.create" in line
    ]
    assert offenders == []


def test_the_admin_lists_jobs_with_their_subject(make_user: Any) -> None:
    from django.test import Client
    from django.urls import reverse

    background_job_create(kind="analysis", subject=Campaign.objects.create(name="Harbour study", slug="hs"))
    background_job_create(kind="maintenance")
    client = Client()
    client.force_login(make_user("boss", "admin"))
    page = client.get(reverse("admin:core_backgroundjob_changelist")).content.decode()
    assert "Harbour study" in page and "maintenance" in page  # the campaign's name, and a job without subject
