from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ServiceError
from core.models import BackgroundJob
from core.services import background_job_retry

if TYPE_CHECKING:  # ModelAdmin is generic for the type checker only
    _JobAdminBase = admin.ModelAdmin[BackgroundJob]
else:
    _JobAdminBase = admin.ModelAdmin


@admin.register(BackgroundJob)
class BackgroundJobAdmin(_JobAdminBase):
    list_display = ("id", "subject", "kind", "status", "done", "total", "attempts", "heartbeat_at", "created_at",
                    "finished_at")
    list_filter = ("kind", "status")
    actions = ["retry"]

    @admin.action(description="Retry the selected failed jobs")
    def retry(self, request: HttpRequest, queryset: QuerySet[BackgroundJob]) -> None:
        for job in queryset:
            try:
                background_job_retry(job=job)
            except ServiceError as error:
                self.message_user(request, f"{job}: {error}", messages.WARNING)
            else:
                self.message_user(request, f"{job}: queued again")

    def get_queryset(self, request: HttpRequest) -> QuerySet[BackgroundJob]:
        return super().get_queryset(request).prefetch_related("subject")
