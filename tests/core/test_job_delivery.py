"""Delivery that survives a killed worker: claim, reap (requeue or fail), retry; nothing disguised."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from annotation.analysis import ENGINE_VERSION, Analysis
from annotation.models import Campaign, RatingUnit
from annotation.selectors import unit_payload
from core.models import BackgroundJob
from core.services import (
    background_job_claim,
    background_job_create,
    background_job_reap,
    background_job_retry,
)

pytestmark = pytest.mark.django_db
STATUS = BackgroundJob.Status


def fake_results(pairs: Any, *, compression_threshold: float = 0.5, **kwargs: Any) -> list[Analysis]:
    return [Analysis(category="deletion", reasons={}, edits=[], features={}, engine_version=ENGINE_VERSION)
            for _ in pairs]


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    import annotation.analysis

    monkeypatch.setattr(annotation.analysis, "analyze_many", fake_results)


def claim(job: BackgroundJob, worker: str = "celery@a") -> bool:
    return background_job_claim(job_id=job.pk, task_name="annotation.tasks.analysis_run",
                                task_args={"args": [job.pk], "kwargs": {}}, worker=worker)


def test_a_job_is_claimed_once_and_again_only_when_its_worker_went_silent() -> None:
    job = background_job_create(kind="analysis")
    assert claim(job)
    assert not claim(job, "celery@b")  # a second delivery while the first runs is dropped
    BackgroundJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert claim(job, "celery@b")
    job.refresh_from_db()
    assert (job.status, job.worker, job.attempts) == (STATUS.RUNNING, "celery@b", 2)
    BackgroundJob.objects.filter(pk=job.pk).update(status=STATUS.DONE)
    assert not claim(job, "celery@c")


def test_a_job_left_running_by_a_restarted_worker_is_queued_again_and_finishes(
    demo_campaign: Campaign, fake_engine: None, django_capture_on_commit_callbacks: Any
) -> None:
    job = background_job_create(kind="analysis", subject=demo_campaign)
    assert claim(job, "celery@killed")
    first = list(RatingUnit.objects.filter(source__campaign=demo_campaign).order_by("id")[:5])
    for unit in first:  # the part the killed worker stored
        unit.analysis_version, unit.auto_category, unit.analysed_threshold = ENGINE_VERSION, "split", 0.5
    RatingUnit.objects.bulk_update(first, ["analysis_version", "auto_category", "analysed_threshold"])
    rest = RatingUnit.objects.filter(source__campaign=demo_campaign, analysis_version="")
    # Not analysed is shown as not analysed: no category, no edits presented as the engine's.
    shown = [unit_payload(u, public_id="u0") for u in rest]
    assert shown and all(p["analysed"] is False and p["auto_category"] is None for p in shown)
    assert background_job_reap(dead_workers=["celery@other"]) == []  # its heartbeat is fresh
    with django_capture_on_commit_callbacks(execute=True):
        handled = background_job_reap(dead_workers=["celery@killed"])
    assert [j.pk for j in handled] == [job.pk]
    job.refresh_from_db()
    assert job.status == STATUS.DONE and job.attempts == 2
    assert job.done == RatingUnit.objects.filter(source__campaign=demo_campaign).count() - 5
    assert not RatingUnit.objects.filter(source__campaign=demo_campaign, analysis_version="").exists()


def test_a_silent_job_out_of_attempts_fails_visibly_and_retry_runs_it(
    demo_campaign: Campaign, fake_engine: None, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.JOB_MAX_ATTEMPTS = 1
    job = background_job_create(kind="analysis", subject=demo_campaign)
    assert claim(job)
    BackgroundJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=True):
        background_job_reap()
    job.refresh_from_db()
    assert job.status == STATUS.FAILED and "Interrupted" in job.error and "Retry" in job.error
    with django_capture_on_commit_callbacks(execute=True):
        background_job_retry(job=job)
    job.refresh_from_db()
    assert (job.status, job.error) == (STATUS.DONE, "")
    assert not RatingUnit.objects.filter(source__campaign=demo_campaign, analysis_version="").exists()


def test_only_a_failed_job_that_ran_on_a_worker_can_be_retried() -> None:
    from core.errors import Conflict, ServiceError

    job = background_job_create(kind="analysis")
    with pytest.raises(Conflict):
        background_job_retry(job=job)
    BackgroundJob.objects.filter(pk=job.pk).update(status=STATUS.FAILED)
    with pytest.raises(ServiceError, match="never started"):
        background_job_retry(job=job)


def test_the_dashboard_lists_a_failed_job_with_a_retry_button(
    demo_campaign: Campaign, researcher: Any, fake_engine: None, django_capture_on_commit_callbacks: Any
) -> None:
    from django.test import Client
    from django.urls import reverse

    job = background_job_create(kind="analysis", subject=demo_campaign)
    claim(job)
    BackgroundJob.objects.filter(pk=job.pk).update(status=STATUS.FAILED, error="Interrupted: the worker stopped")
    client = Client()
    client.force_login(researcher)
    page = client.get(reverse("frontend:research-dashboard", kwargs={"slug": "demo"})).content.decode()
    retry_url = reverse("frontend:research-job-retry", kwargs={"slug": "demo", "job_id": job.pk})
    assert "Interrupted: the worker stopped" in page and retry_url in page
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(retry_url).status_code == 302
    job.refresh_from_db()
    assert job.status == STATUS.DONE


def test_the_admin_retries_failed_jobs(
    demo_campaign: Campaign, make_user: Any, fake_engine: None, django_capture_on_commit_callbacks: Any
) -> None:
    from django.test import Client
    from django.urls import reverse

    job = background_job_create(kind="analysis", subject=demo_campaign)
    claim(job)
    BackgroundJob.objects.filter(pk=job.pk).update(status=STATUS.FAILED)
    client = Client()
    client.force_login(make_user("boss", "admin"))
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("admin:core_backgroundjob_changelist"),
                    {"action": "retry", "_selected_action": [job.pk]})
    job.refresh_from_db()
    assert job.status == STATUS.DONE


def test_a_training_left_running_by_a_dead_worker_restarts_then_fails(
    monkeypatch: pytest.MonkeyPatch, settings: Any, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    from metrics import tasks
    from metrics.models import LearnedVersion
    from metrics.services.training import learned_version_dir, learned_version_reap, learned_version_train

    settings.JOB_MAX_ATTEMPTS = 2
    queued: list[int] = []
    monkeypatch.setattr(tasks.learned_train_run, "delay", lambda version_id: queued.append(version_id))
    version = LearnedVersion.objects.create(
        status=LearnedVersion.Status.RUNNING, encoder="tiny", worker="celery@gpu", attempts=1,
        started_at=timezone.now(), heartbeat_at=timezone.now(),
    )
    # A second delivery while it trains elsewhere does not start it twice.
    assert learned_version_train(version=version, worker="celery@other").status == LearnedVersion.Status.RUNNING
    version.refresh_from_db()
    assert version.attempts == 1
    with django_capture_on_commit_callbacks(execute=True):
        learned_version_reap(dead_workers=["celery@gpu"])
    version.refresh_from_db()
    assert version.status == LearnedVersion.Status.QUEUED and queued == [version.pk]
    assert "Restarting" in version.error
    LearnedVersion.objects.filter(pk=version.pk).update(
        status=LearnedVersion.Status.RUNNING, attempts=2, heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    settings.LEARNED_CHECKPOINT_DIR = tmp_path
    best = learned_version_dir(version) / "best"  # what the killed run saved of its first epochs
    best.mkdir(parents=True)
    (best / "head.pt").write_bytes(b"half-trained")
    with django_capture_on_commit_callbacks(execute=True):
        learned_version_reap()
    version.refresh_from_db()
    assert version.status == LearnedVersion.Status.FAILED and "Interrupted" in version.error
    assert not version.is_active and version.checkpoint_path == ""
    assert not best.exists() and best.parent.is_dir()


def test_every_workers_reaper_handles_jobs_and_training_runs_through_one_mechanism(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """``work_reap_all`` (what ``config.celery.reap`` runs) reaps background jobs and the training runs that
    the metrics app registered, with the same staleness rule and the same message shape."""
    from core.services import work_reap_all
    from metrics import tasks
    from metrics.models import LearnedVersion

    queued: list[int] = []
    monkeypatch.setattr(tasks.learned_train_run, "delay", lambda version_id: queued.append(version_id))
    long_ago = timezone.now() - timedelta(hours=1)
    job = background_job_create(kind="analysis")
    BackgroundJob.objects.filter(pk=job.pk).update(status=STATUS.RUNNING, worker="celery@a", heartbeat_at=long_ago,
                                                   attempts=3)
    version = LearnedVersion.objects.create(status=LearnedVersion.Status.RUNNING, encoder="tiny",
                                            worker="celery@gpu", attempts=1, started_at=long_ago)
    fresh = LearnedVersion.objects.create(status=LearnedVersion.Status.RUNNING, encoder="tiny",
                                          worker="celery@gpu2", attempts=1, started_at=long_ago,
                                          heartbeat_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert work_reap_all() == 2
    job.refresh_from_db()
    version.refresh_from_db()
    fresh.refresh_from_db()
    assert job.status == STATUS.FAILED and job.error.startswith("Interrupted: the worker running it (celery@a)")
    assert version.status == LearnedVersion.Status.QUEUED and queued == [version.pk]
    assert version.error.startswith("Restarting: the worker training it (celery@gpu) stopped; last sign of life")
    assert fresh.status == LearnedVersion.Status.RUNNING
