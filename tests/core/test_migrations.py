"""BackgroundJob's move from annotation to core keeps every job of a database made before it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.migrating import migrate_to

BEFORE: list[tuple[str, str | None]] = [("annotation", "0001_initial"), ("core", None)]
BEFORE_STATE = [("annotation", "0001_initial")]



@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_jobs_made_before_the_move_keep_their_campaign_and_state_both_ways() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = migrate_to(BEFORE).loader.project_state(BEFORE_STATE).apps
    campaign = old.get_model("annotation", "Campaign").objects.create(name="Before", slug="before")
    old_job = old.get_model("annotation", "BackgroundJob")
    done = old_job.objects.create(campaign=campaign, kind="analysis", status="done", done=5, total=5)
    failed = old_job.objects.create(campaign=campaign, kind="lens-rescore", status="failed", error="RuntimeError: x")

    new = migrate_to(latest).loader.project_state(latest).apps
    jobs = new.get_model("core", "BackgroundJob").objects.order_by("pk")
    assert [(j.pk, j.subject_type.app_label, j.subject_type.model, j.subject_id, j.kind, j.status, j.done, j.error)
            for j in jobs] == [
        (done.pk, "annotation", "campaign", campaign.pk, "analysis", "done", 5, ""),
        (failed.pk, "annotation", "campaign", campaign.pk, "lens-rescore", "failed", 0, "RuntimeError: x"),
    ]
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
    assert "core_backgroundjob" in tables and "annotation_backgroundjob" not in tables

    # And back: the jobs return to annotation's table with their campaign.
    old = migrate_to(BEFORE).loader.project_state(BEFORE_STATE).apps
    assert list(old.get_model("annotation", "BackgroundJob").objects.order_by("pk").values_list("pk", "campaign_id")) \
        == [(done.pk, campaign.pk), (failed.pk, campaign.pk)]
    migrate_to(latest)
