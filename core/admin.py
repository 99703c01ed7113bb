from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.models import BackgroundJob

if TYPE_CHECKING:  # ModelAdmin is generic for the type checker only
    _JobAdminBase = admin.ModelAdmin[BackgroundJob]
else:
    _JobAdminBase = admin.ModelAdmin


@admin.register(BackgroundJob)
class BackgroundJobAdmin(_JobAdminBase):
    list_display = ("id", "subject", "kind", "status", "done", "total", "created_at", "finished_at")
    list_filter = ("kind", "status")

    def get_queryset(self, request: HttpRequest) -> QuerySet[BackgroundJob]:
        return super().get_queryset(request).prefetch_related("subject")
