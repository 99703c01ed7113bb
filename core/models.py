"""Background jobs: a long piece of work run by a Celery worker, with its progress for the pages.

A job is about a *subject* (today always a campaign) held as a generic relation (content type + id), so
``core`` needs no import of the app that owns the subject. The owning model declares
``jobs = GenericRelation("core.BackgroundJob")``, which gives ``campaign.jobs`` and deletes a campaign's
jobs with it.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models


class BackgroundJob(models.Model):
    """A long job run by a Celery worker (analysis of a large import, rescoring), with its progress.

    Written only through the services in ``core.services`` (``background_job_*``).
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    subject_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, null=True, blank=True)
    subject_id = models.PositiveBigIntegerField(null=True, blank=True)
    subject = GenericForeignKey("subject_type", "subject_id")
    kind = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, help_text="Why it failed; for a finished job, a note (e.g. what was skipped).")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Delivery bookkeeping, written when a worker claims the job (``background_job_claim``): which task
    # works for it (to queue it again), which worker runs it, and when it last said it is alive.
    task_name = models.CharField(max_length=200, blank=True)
    task_args = models.JSONField(default=dict, blank=True, help_text="The task's args and kwargs.")
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker started it.")
    # Budgets (``core.services.background_job_queue``): who asked for it (counted against their cap of queued
    # and running jobs; none for a command-line or system job), and what exactly was asked, so that the same
    # request while the job is still queued gets that job instead of a second one.
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    request_key = models.CharField(max_length=64, blank=True, help_text="Hash of the request that queued it.")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["subject_type", "subject_id"], name="core_job_subject"),
                   models.Index(fields=["status", "owner"], name="core_job_status_owner")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"


class LiveEvent(models.Model):
    """One live event for the pages, stored so that a web process other than the sender's relays it.

    Used when the processes share no channel layer (``LIVE_EVENTS_FEED``: no Redis, as under ``make run``):
    ``core.events.broadcast`` writes a row, and each open websocket reads its groups' new rows
    (``core.consumers.LiveGroupsConsumer``). Rows are pruned as new ones come (``core.events``), so the table
    stays small.
    """

    group = models.CharField(max_length=100)
    payload = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["group", "id"], name="core_live_group_id")]

    def __str__(self) -> str:
        return f"{self.group} #{self.pk}"
