"""Django admin of the LENS registry: start a training run, retrain, promote (or roll back), cancel."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse

from annotation.models import Campaign
from core.errors import ServiceError
from metrics.lens import DEFAULT_ENCODER
from metrics.models import LensModelVersion
from metrics.services.training import (
    MODEL_OPTIONS,
    TRAIN_OPTIONS,
    lens_version_cancel,
    lens_version_create,
    lens_version_promote,
)

OPTION_KEYS = ("batch_size", "encoder_lr", "head_lr", "freeze_epochs", "patience")


class LensTrainForm(forms.Form):
    campaigns = forms.ModelMultipleChoiceField(queryset=Campaign.objects.order_by("slug"),
                                               help_text="Their ratings are combined.")
    encoder = forms.CharField(max_length=500, initial=DEFAULT_ENCODER,
                              help_text="Bundled MiniLM alias, a Hugging Face name in the local cache, or a path.")
    k = forms.IntegerField(min_value=1, max_value=20, initial=3, help_text="Top-k references in the loss.")
    epochs = forms.IntegerField(min_value=1, max_value=100, initial=20)
    heldout = forms.FloatField(min_value=0, max_value=0.5, initial=0.1, help_text="Share of sources held out.")
    seed = forms.IntegerField(initial=0)
    batch_size = forms.IntegerField(min_value=1, required=False)
    encoder_lr = forms.FloatField(min_value=0, required=False)
    head_lr = forms.FloatField(min_value=0, required=False)
    freeze_epochs = forms.IntegerField(min_value=0, required=False)
    patience = forms.IntegerField(min_value=1, required=False, help_text="Stop after this many epochs without gain.")
    note = forms.CharField(max_length=200, required=False)

    def options(self) -> dict[str, object]:
        return {key: self.cleaned_data[key] for key in OPTION_KEYS if self.cleaned_data.get(key) is not None}


def lens_train_from_form(form: LensTrainForm, user) -> LensModelVersion:  # type: ignore[no-untyped-def]
    data = form.cleaned_data
    return lens_version_create(
        campaigns=list(data["campaigns"]), started_by=user, encoder=data["encoder"], k=data["k"],
        epochs=data["epochs"], heldout_fraction=data["heldout"], seed=data["seed"], options=form.options(),
        note=data.get("note") or "",
    )


@admin.register(LensModelVersion)
class LensModelVersionAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "is_active", "encoder", "k", "tau_all", "best_epoch", "device",
                    "started_by", "created_at", "finished_at")
    list_filter = ("status", "is_active")
    readonly_fields = [f.name for f in LensModelVersion._meta.concrete_fields if f.name != "note"] + ["campaigns"]
    actions = ["promote", "retrain", "cancel"]
    change_list_template = "frontend/lens/admin_change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # versions are created by training ("Train LENS" button)

    # Only platform admins see the registry (staff researchers do not).
    def has_module_permission(self, request: HttpRequest) -> bool:
        return bool(getattr(request.user, "is_platform_admin", False))

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return self.has_module_permission(request)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return self.has_module_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:  # type: ignore[no-untyped-def]
        return self.has_module_permission(request) and not (obj is not None and obj.is_active)

    def get_urls(self):  # type: ignore[no-untyped-def]
        return [
            path("train/", self.admin_site.admin_view(self.train_view), name="metrics_lensmodelversion_train"),
            *super().get_urls(),
        ]

    def train_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_platform_admin:
            self.message_user(request, "Only admins may train LENS.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:metrics_lensmodelversion_changelist"))
        form = LensTrainForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                version = lens_train_from_form(form, request.user)
            except ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                self.message_user(request, f"LENS v{version.pk} queued for training.", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:metrics_lensmodelversion_changelist"))
        context = {**self.admin_site.each_context(request), "title": "Train a LENS version", "form": form,
                   "opts": self.model._meta}
        return render(request, "frontend/lens/admin_train.html", context)

    @admin.action(description="Promote the selected version (or roll back to it)")
    def promote(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to promote.", messages.ERROR)
            return
        try:
            version = lens_version_promote(version=queryset.get(), user=request.user)
        except ServiceError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(request, f"LENS v{version.pk} is now active.", messages.SUCCESS)

    @admin.action(description="Retrain with the same campaigns and settings")
    def retrain(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        for old in queryset.prefetch_related("campaigns"):
            params = dict(old.hyperparameters or {})
            model = params.pop("model", {}) or {}
            options = {key: value for key, value in params.items() if key in TRAIN_OPTIONS}
            options.update({key: value for key, value in model.items() if key in MODEL_OPTIONS})
            try:
                version = lens_version_create(
                    campaigns=list(old.campaigns.all()), started_by=request.user, encoder=old.encoder, k=old.k,
                    epochs=int(params.get("epochs", 20)), heldout_fraction=old.heldout_fraction, seed=old.seed,
                    options=options, note=f"retrain of v{old.pk}",
                )
            except ServiceError as exc:
                self.message_user(request, f"v{old.pk}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"LENS v{version.pk} queued (retrain of v{old.pk}).", messages.SUCCESS)

    @admin.action(description="Cancel the selected queued or running trainings")
    def cancel(self, request: HttpRequest, queryset) -> None:  # type: ignore[no-untyped-def]
        for version in queryset:
            try:
                lens_version_cancel(version=version)
            except ServiceError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                self.message_user(request, f"Cancel requested for LENS v{version.pk}.", messages.SUCCESS)
