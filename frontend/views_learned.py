"""Learned-metric admin pages. Each view checks the role, calls one service or selector, and renders or redirects."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.auth import request_user
from core.errors import ServiceError
from metrics.admin import LearnedTrainForm, learned_train_from_form
from metrics.models import LearnedVersion
from metrics.selectors import learned_version_get_for, learned_version_list_for
from metrics.services.training import learned_version_cancel, learned_version_promote


def admin_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request_user(request).is_platform_admin:
            raise PermissionDenied("Only admins may manage learned metrics.")
        return view(request, *args, **kwargs)

    return wrapped


@admin_only
def learned_index(request: HttpRequest) -> HttpResponse:
    form = LearnedTrainForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            version = learned_train_from_form(form, request_user(request))
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"{version.label} v{version.pk} queued for training.")
            return redirect("frontend:learned-index")
    versions = list(learned_version_list_for(user=request_user(request)))
    return render(request, "frontend/learned/index.html", {"versions": versions, "form": form})


@admin_only
def learned_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = learned_version_get_for(user=request_user(request), version_id=version_id)
    return render(request, "frontend/learned/detail.html", {"version": version})


@require_POST
@admin_only
def learned_promote(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(LearnedVersion, pk=version_id)
    try:
        learned_version_promote(version=version, user=request_user(request))
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{version.label} v{version.pk} is now active.")
    return redirect("frontend:learned-index")


@require_POST
@admin_only
def learned_cancel(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(LearnedVersion, pk=version_id)
    try:
        learned_version_cancel(version=version)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Cancel requested for {version.label} v{version.pk}.")
    return redirect("frontend:learned-index")
