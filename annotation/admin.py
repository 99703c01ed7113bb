"""Django admin: people and roles, campaigns (with SimpEval/DA/JSONL import), and read-only annotations.

The campaign export action is added by `evaluation.admin`, which owns the exports.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import URLPattern, path, reverse

from annotation.auth import request_user
from annotation.formats import FormatError
from annotation.models import (
    Annotation,
    AspectJudgement,
    Assignment,
    Campaign,
    CampaignAnnotator,
    ImportBatch,
    Output,
    OutputJudgement,
    Source,
    User,
)
from annotation.services.assignments import campaign_allocation_set
from annotation.services.imports import campaign_import
from annotation.services.practice import source_practice_check, source_practice_set
from core.errors import ServiceError


@admin.register(User)
class RankRateUserAdmin(UserAdmin[User]):
    list_display = ("username", "email", "role", "pseudonym", "is_active", "last_login")
    list_filter = ("role", "is_active")
    readonly_fields = ("pseudonym",)
    fieldsets = (*(UserAdmin.fieldsets or ()), ("Rank & Rate", {"fields": ("role", "pseudonym")}))
    add_fieldsets = (*UserAdmin.add_fieldsets, ("Rank & Rate", {"fields": ("role",)}))


class ImportForm(forms.Form):
    file = forms.FileField()
    kind = forms.ChoiceField(choices=[("jsonl", "JSONL (new study)"), ("simpeval", "SimpEval CSV"),
                                      ("da", "Multi-aspect ratings CSV (Simplicity-DA, crowd DA/Likert)")])


class CampaignAnnotatorInline(admin.TabularInline[CampaignAnnotator, Campaign]):
    model = CampaignAnnotator
    extra = 0
    readonly_fields = ("added_at", "removed_at")


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin[Campaign]):
    list_display = ("name", "slug", "ratings_per_output", "compression_threshold", "allocation", "created_at")
    prepopulated_fields = {"slug": ("name",)}
    filter_horizontal = ("owners",)
    inlines = [CampaignAnnotatorInline]

    def save_model(self, request: HttpRequest, obj: Campaign, form: Any, change: bool) -> None:
        """The allocation changes through its service (the free slots' order follows), like on the dashboard
        and in the API."""
        allocation = obj.allocation
        if change and "allocation" in form.changed_data:
            obj.allocation = form.initial.get("allocation", Campaign.Allocation.UNIFORM)
        super().save_model(request, obj, form, change)
        if obj.allocation != allocation:
            campaign_allocation_set(campaign=obj, allocation=allocation)

    def get_urls(self) -> list[URLPattern]:
        return [
            path("<int:pk>/import/", self.admin_site.admin_view(self.import_view), name="annotation_campaign_import"),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        campaign = get_object_or_404(Campaign, pk=pk)
        form = ImportForm(request.POST or None, request.FILES or None)
        status = 200
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                result = campaign_import(kind=form.cleaned_data["kind"], file=upload, filename=upload.name,
                                         campaign_slug=campaign.slug, user=request_user(request))
            except (FormatError, ServiceError) as exc:  # the form again, with the error's status (413: too large)
                messages.error(request, str(exc))
                status = exc.status if isinstance(exc, ServiceError) else 400
            else:
                messages.success(request, result.summary())
                return HttpResponseRedirect(reverse("admin:annotation_campaign_change", args=[pk]))
        return render(request, "admin/annotation/campaign_import.html",
                      {"form": form, "campaign": campaign, "opts": self.model._meta, "title": "Import data"},
                      status=status)


class SourceAdminForm(forms.ModelForm[Source]):
    """A practice sentence's expected answer is checked by the rule of the research page and the API
    (``annotation.services.practice.source_practice_check``)."""

    class Meta:
        model = Source
        fields = ("campaign", "external_id", "text", "order", "is_tutorial", "repeat_of", "tutorial_key",
                  "import_batch")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.instance.pk is not None and data.get("is_tutorial"):
            try:
                data["tutorial_key"] = source_practice_check(source=self.instance, practice=True,
                                                             key=data.get("tutorial_key"))
            except ServiceError as exc:
                self.add_error("is_tutorial" if exc.field == "is_tutorial" else "tutorial_key", exc.message)
        return data


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin[Source]):
    form = SourceAdminForm
    list_display = ("external_id", "campaign", "order", "is_tutorial")
    list_filter = ("campaign", "is_tutorial")
    search_fields = ("external_id", "text")

    def save_model(self, request: HttpRequest, obj: Source, form: forms.ModelForm[Source], change: bool) -> None:
        """Practice or not goes through `source_practice_set` (free slots removed, or made again)."""
        practice, key = obj.is_tutorial, obj.tutorial_key
        if change and {"is_tutorial", "tutorial_key"} & set(form.changed_data):
            stored = Source.objects.get(pk=obj.pk)
            obj.is_tutorial, obj.tutorial_key = stored.is_tutorial, stored.tutorial_key
            super().save_model(request, obj, form, change)
            source_practice_set(source=obj, practice=practice, key=key)
            obj.refresh_from_db()
        else:
            super().save_model(request, obj, form, change)


@admin.register(Output)
class OutputAdmin(admin.ModelAdmin[Output]):
    list_display = ("id", "source", "system", "unit", "given_category")
    list_filter = ("source__campaign", "system")
    search_fields = ("text",)
    list_select_related = ("source", "system")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin[Assignment]):
    list_display = ("id", "campaign", "source", "annotator", "status", "assigned_at", "submitted_at")
    list_filter = ("campaign", "status")
    list_select_related = ("campaign", "source", "annotator")


class AspectJudgementInline(admin.TabularInline[AspectJudgement, Annotation]):
    model = AspectJudgement
    extra = 0
    can_delete = False
    readonly_fields = ("output", "aspect", "raw", "z", "scale")

    def has_add_permission(self, request: HttpRequest, obj: Annotation | None = None) -> bool:
        return False


class JudgementInline(admin.TabularInline[OutputJudgement, Annotation]):
    model = OutputJudgement
    extra = 0
    can_delete = False
    readonly_fields = ("output", "category", "auto_category", "edits", "rank", "rating", "z_score")

    def has_add_permission(self, request: HttpRequest, obj: Annotation | None = None) -> bool:
        return False


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin[Annotation]):
    """Read-only: annotations change only through the annotation services (submitted ones never)."""

    list_display = ("id", "source", "annotator", "rater_slot", "status", "version", "submitted_at")
    list_filter = ("status", "source__campaign")
    inlines = [JudgementInline, AspectJudgementInline]
    list_select_related = ("source", "annotator")

    def has_change_permission(self, request: HttpRequest, obj: Annotation | None = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ImportBatch)
class ImportBatchAdmin(admin.ModelAdmin[ImportBatch]):
    list_display = ("filename", "campaign", "kind", "rows", "created_by", "created_at")
    readonly_fields = ("layout", "sha256")
