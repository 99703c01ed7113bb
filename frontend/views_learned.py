"""Learned-metric admin pages. Each view checks the role, calls one service or selector, and renders or redirects."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.auth import request_user
from core.errors import ServiceError
from core.numbers import yes_or_no
from frontend.confirm import Confirmation, confirm_page, confirmed
from metrics.admin import LearnedTrainForm, learned_train_from_form
from metrics.models import LearnedVersion
from metrics.selectors import learned_version_get_for, learned_version_list_for
from metrics.services.learned import learned_version_components, learned_version_preview
from metrics.services.training import (
    Promotion,
    learned_version_cancel,
    learned_version_promote,
    learned_version_promotion,
    learned_version_promotions,
)


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
            for line in learned_version_preview(version):  # e.g. the blend's cross-fitting, cancellable
                messages.info(request, f"{version.label} v{version.pk}: {line}")
            return redirect("frontend:learned-index")
    versions = list(learned_version_list_for(user=request_user(request)))
    promotions = learned_version_promotions(versions)
    rows = [{"version": v, "promotion": promotions[v.pk]} for v in versions]
    return render(request, "frontend/learned/index.html", {"versions": versions, "rows": rows, "form": form})


def checkpoint_shown(path: str) -> str:
    """A checkpoint's place as a page shows it: relative to the models directory (``LEARNED_CHECKPOINT_DIR``),
    or just its name when it lies elsewhere; never the server's absolute path."""
    if not path:
        return ""
    try:
        return str(Path(path).resolve().relative_to(Path(settings.LEARNED_CHECKPOINT_DIR).resolve()))
    except ValueError:
        return Path(path).name


def _in_models_dir(path: str) -> bool:
    return bool(path) and Path(path).resolve().is_relative_to(Path(settings.LEARNED_CHECKPOINT_DIR).resolve())


def _settings_rows(settings_: Any) -> list[tuple[str, str]]:
    """A version's training settings (a JSON object) as (name, value) rows, values as JSON would print them."""
    if not isinstance(settings_, dict):
        return []
    return [(str(key), json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value)
            for key, value in sorted(settings_.items())]


def _crossfit_rows(results: Any) -> tuple[str, list[dict[str, Any]]]:
    """A blend's cross-fitting record (``heldout_results["crossfit"]``): its mode and one row per cross-fitted
    component (folds, trainings, seconds, shared sources); ("", []) for a version without one."""
    crossfit = results.get("crossfit") if isinstance(results, dict) else None
    if not isinstance(crossfit, dict):
        return "", []
    components = crossfit.get("components")
    rows = [{"name": str(name), **record} for name, record in sorted(components.items())
            if isinstance(record, dict)] if isinstance(components, dict) else []
    return str(crossfit.get("mode") or ""), rows


@admin_only
def learned_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = learned_version_get_for(user=request_user(request), version_id=version_id)
    components = learned_version_components(version)
    crossfit_mode, crossfit_rows = _crossfit_rows(version.heldout_results)
    return render(request, "frontend/learned/detail.html", {
        "version": version, "promotion": learned_version_promotion(version),
        "checkpoint": checkpoint_shown(version.checkpoint_path),
        "checkpoint_in_models_dir": _in_models_dir(version.checkpoint_path),
        "settings_rows": _settings_rows(version.hyperparameters),
        "components": components, "changed": [c.name for c in components if c.changed],
        "crossfit_mode": crossfit_mode, "crossfit_rows": crossfit_rows,
    })


def _described(version: LearnedVersion) -> str:
    tau = f"held-out τ_all {version.tau_all:.3f}" if version.tau_all is not None else "no held-out τ_all"
    note = f" “{version.note}”" if version.note else ""
    return f"{version.label} v{version.pk}{note} ({tau}, trained {version.created_at:%Y-%m-%d %H:%M})"


def _promotion_confirmation(promotion: Promotion) -> Confirmation:
    version, active = promotion.version, promotion.active
    consequences = [f"{_described(version)} serves every {version.label} score from now on."]
    if active is not None:
        consequences.append(f"{_described(active)} stops serving; you can roll back to it later from the list.")
    else:
        consequences.append(f"No {version.label} version serves now.")
    consequences.append(f"Scores already stored under another version's name ({version.kind}:<id>) stay as they are; "
                        "a campaign is scored with this version when it is scored again.")
    name = f"{version.label} v{version.pk}"
    verb = f"Roll back {version.label} to v{version.pk}" if promotion.rollback else f"Promote {name}"
    return Confirmation(
        title=f"{verb}?", consequences=consequences, button=verb,
        cancel=reverse("frontend:learned-index"),
        warning=(f"{promotion.worse}. Promoting it may make every {version.label} score worse."
                 if promotion.worse else ""),
        checkbox=({"name": "force", "label": f"Promote {name} although its held-out figure is worse"}
                  if promotion.worse else None),
    )


@require_POST
@admin_only
def learned_promote(request: HttpRequest, version_id: int) -> HttpResponse:
    """POST: promote (or roll back to) a version, after a confirmation step (``frontend.confirm``); a version
    worse than the active one needs the confirmation's box ticked (``force``)."""
    version = get_object_or_404(LearnedVersion, pk=version_id)
    promotion = learned_version_promotion(version)
    if not confirmed(request):
        return confirm_page(request, _promotion_confirmation(promotion))
    try:
        force = yes_or_no(request.POST.get("force"), field="force")
        learned_version_promote(version=version, user=request_user(request), force=force)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        done = "rolled back to" if promotion.rollback else "promoted:"
        messages.success(request, f"{version.label} {done} v{version.pk}; it is now active.")
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
