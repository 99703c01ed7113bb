"""Researcher pages: the list of their campaigns, a campaign's live dashboard and the import page.

Reads go through the selectors; the dashboard's numbers come from the report API
(`/api/campaigns/<slug>/report/`) and its live progress from the websocket `ws/campaigns/<slug>/`,
both named to the page's scripts through data-* attributes. The import page is a plain form that
calls the same services as the REST API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET

from annotation.auth import request_user
from annotation.formats import FormatError
from annotation.models import AnnotatorExclusion, Campaign, User
from annotation.selectors import (
    CampaignPurpose,
    campaign_aspects,
    campaign_get_visible,
    campaign_list_visible,
    campaign_people,
    campaign_progress,
)
from annotation.services.assignments import annotators_by_username, campaign_add_annotators
from annotation.services.campaigns import campaign_create
from annotation.services.imports import ImportResult, campaign_import, import_references_check, references_read
from annotation.services.operations import crowd_room, crowd_turned_away_summary
from core.errors import NotFound, ServiceError
from core.selectors import background_job_list_failed
from core.services import background_job_retry
from evaluation.selectors import campaign_list_for_researcher
from evaluation.services.quality import campaign_quality, quality_rows
from evaluation.services.report import campaign_exclusion_note, campaign_report
from evaluation.services.stoprule import campaign_settledness
from frontend.errors import not_found_page
from frontend.forms_dashboard import DashboardForm, dashboard_forms
from metrics.perturb.sanity import SANITY_TOLERANCE, sanity_table
from metrics.services.metric_card import campaign_metric_card
from metrics.services.metric_scores import (
    campaign_lens_beside_human,
    campaign_lens_rescore,
    campaign_metric_scores_panel,
    campaign_metric_scores_queue,
)

NEW = "__new__"


def researcher_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Logged-in researchers and admins; annotators get 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request_user(request).is_researcher:
            raise PermissionDenied("Only researchers and admins may see this page.")
        return view(request, *args, **kwargs)

    return wrapped


@researcher_required
def research_home(request: HttpRequest) -> HttpResponse:
    return render(request, "frontend/research/home.html",
                  {"campaigns": campaign_list_for_researcher(user=request_user(request))})


@researcher_required
def campaign_dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    return dashboard_page(request, campaign)


def dashboard_page(request: HttpRequest, campaign: Campaign, *, failed: DashboardForm | None = None,
                   failure: ServiceError | None = None, form_id: str = "", status: int = 400) -> HttpResponse:
    """The dashboard; after a failed form, rendered in answer to its POST (status: the error's) with the
    error next to the field that caused it and what was typed kept: ``failed`` (a dashboard form, bound) or
    ``failure`` (the error of the button-only form ``form_id``); ``status`` is a failed form's (400 unless the
    service said otherwise, as a throttle's 429)."""
    user = request_user(request)
    progress = campaign_progress(campaign=campaign)
    summary = campaign_list_for_researcher(user=user, slug=campaign.slug)[0]
    if failure is not None:
        status = failure.status
    elif failed is None:
        status = 200
    return render(request, "frontend/research/dashboard.html", {
        "forms": dashboard_forms(campaign, failed),
        "failure": {"form_id": form_id, "message": failure.message} if failure is not None else None,
        "campaign": campaign,
        "summary": summary,
        "progress": progress,
        "lens": campaign_lens_beside_human(campaign),
        "aspects": _aspect_panel(campaign),
        "metric_panel": campaign_metric_scores_panel(campaign),
        "settled": campaign_settledness(campaign=campaign, live=True),
        "failed_jobs": background_job_list_failed(subject=campaign)[:5],
        "people": campaign_people(campaign=campaign),
        "quality": quality_rows(campaign_quality(campaign=campaign)),
        "excluded": campaign_exclusion_note(campaign=campaign),
        "crowd_end_choices": AnnotatorExclusion.CrowdEnd.choices,
        "invites": campaign.invites.filter(active=True)[:10],
        "crowd_room": crowd_room(campaign=campaign).value,
        "crowd_turned_away": crowd_turned_away_summary(campaign=campaign),
        "urls": {
            "metrics": reverse("campaign-metrics", kwargs={"slug": campaign.slug}),
            "metric_points": reverse("campaign-metric-points", kwargs={"slug": campaign.slug}),
            "metric_scores_csv": reverse("campaign-metric-scores-csv", kwargs={"slug": campaign.slug}),
            "report": reverse("campaign-report", kwargs={"slug": campaign.slug}),
            "settledness": reverse("campaign-settledness", kwargs={"slug": campaign.slug}),
            "csv": reverse("campaign-leaderboard-csv", kwargs={"slug": campaign.slug}),
            "export_csv": reverse("campaign-export", kwargs={"slug": campaign.slug}) + "?type=csv",
            "export_jsonl": reverse("campaign-export", kwargs={"slug": campaign.slug}) + "?type=jsonl",
            "ws": f"/ws/campaigns/{campaign.slug}/",
        },
    }, status=status)


def _aspect_panel(campaign: Campaign) -> dict[str, Any] | None:
    """The "Aspects" section's table (multi-aspect campaigns only; None otherwise): one row per system, a
    (raw, z) cell pair per aspect, from the cached report's ``aspects`` block."""
    if not campaign_aspects(campaign):
        return None
    tables = campaign_report(campaign=campaign)["aspects"]
    systems = sorted({row["system"] for table in tables for row in table["systems"]})
    cells = {(t["aspect"], row["system"]): {**row, "aspect": t["aspect"]} for t in tables for row in t["systems"]}
    return {
        "aspects": tables,
        "rows": [{"system": s, "cells": [cells.get((t["aspect"], s)) for t in tables]} for s in systems],
        "warnings": [w for t in tables for w in t["warnings"]],
    }


@researcher_required
def campaign_lens_rescore_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST: score every output of the campaign with the active LENS version in the background."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    if request.method != "POST":
        return redirect("frontend:research-dashboard", slug=campaign.slug)
    try:
        job = campaign_lens_rescore(campaign=campaign, owner=request_user(request))
    except ServiceError as error:
        return dashboard_page(request, campaign, failure=error, form_id="lens-rescore")
    else:
        messages.success(request, f"Scoring {job.total} outputs with LENS in the background; reload to see them.")
    return redirect(reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + "#lens-title")


@researcher_required
def campaign_metrics_score_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST: score every output of the campaign with every suite metric (and learned version) in the background."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    if request.method != "POST":
        return redirect("frontend:research-dashboard", slug=campaign.slug)
    try:
        queued = campaign_metric_scores_queue(campaign=campaign, metric="all", owner=request_user(request))
    except ServiceError as error:
        return dashboard_page(request, campaign, failure=error, form_id="metrics-score")
    else:
        messages.success(request, f"Scoring with every metric in the background ({len(queued.jobs)} job(s)); "
                                  "reload to see the table.")
        for why in queued.skipped.values():
            messages.warning(request, f"Not scored: {why}")
    return redirect(reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + "#metrics-title")


# What each system-level figure of a metric card is, in a researcher's words (the card's keys name them in code).
SYSTEM_FIGURE_LABELS = {
    "pearson": "Pearson r of the system means",
    "kendall": "Kendall τ-b of the two system orders",
    "accuracy": "Pairwise accuracy: system pairs ordered as the humans order them",
    "acc_eq": "Pairwise accuracy with tie calibration (acc_eq)",
}


def _against(human: str) -> str:
    """What a card's figures are measured against: the humans' mean z-score, or one rated aspect."""
    return "the humans' mean z-score" if human == "z" else f"the humans' {human} ratings"


def _metric_card_tables(card: dict[str, Any]) -> dict[str, Any]:
    """The card's nested figures as the page's rows, each figure named in words."""
    output = card["output"]
    acc_eq = [{"human": h, "against": _against(h), "cell": cell, "place": (output.get("clusters") or {}).get(h)}
              for h, cell in (output.get("acc_eq") or {}).items()]
    system = card.get("system")
    tables = [] if not system else [{
        "human": h, "against": _against(h), "means": system["mean_rows"][h],
        "rows": [{"figure": f, "label": SYSTEM_FIGURE_LABELS.get(f, f), "cell": cell,
                  "place": (system["clusters"].get(h) or {}).get(f)}
                 for f, cell in system["figures"][h].items()],
    } for h in system["humans"]]
    return {"acc_eq_rows": acc_eq, "system_tables": tables}


@require_GET
@researcher_required
def campaign_metric_card_view(request: HttpRequest, slug: str, metric: str) -> HttpResponse:
    """One stored metric's card on the campaign (``metrics.services.metric_card``: the figures the API, the
    dashboard's metrics panel and ``meta_evaluate --metric NAME`` show); an unknown metric is a 404 naming it."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    try:
        card = campaign_metric_card(campaign=campaign, metric=metric)
    except NotFound as error:
        return not_found_page(request, error.message)
    except ServiceError as error:  # the heavy-computation gate is taken (429): say so, and to reload
        return render(request, "frontend/research/metric_card.html",
                      {"campaign": campaign, "error": error.message, "metric": metric}, status=error.status)
    return render(request, "frontend/research/metric_card.html", {
        "campaign": campaign, "card": card, **_metric_card_tables(card),
        "sanity": sanity_table({card["metric"]: card["sanity"]}),
        "sanity_tolerance": SANITY_TOLERANCE,
        "api_url": reverse("campaign-metric-card", kwargs={"slug": campaign.slug, "metric": card["metric"]}),
    })


@researcher_required
def campaign_job_retry_view(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    """POST: queue a failed background job of the campaign again (analysis, LENS scoring)."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    if request.method != "POST":
        return redirect("frontend:research-dashboard", slug=campaign.slug)
    job = get_object_or_404(background_job_list_failed(subject=campaign), pk=job_id)
    try:
        background_job_retry(job=job)
    except ServiceError as error:
        return dashboard_page(request, campaign, failure=error, form_id=f"job-retry-{job.pk}")
    else:
        messages.success(request, f"The {job.kind} job #{job.pk} is queued again; reload to follow it.")
    return redirect(reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + "#jobs-title")


# --- Import -------------------------------------------------------------------------------------

_USERNAMES = re.compile(r"[\s,;]+")


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (``<input type=file multiple>``); cleans to a list."""

    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = data if isinstance(data, list | tuple) else [data] if data else []
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class ImportForm(forms.Form):
    target = forms.ChoiceField(label="Campaign")
    name = forms.CharField(max_length=200, required=False, label="Name")
    slug = forms.SlugField(max_length=100, required=False, label="Slug",
                           help_text="Lowercase letters, digits and hyphens; taken from the name when empty.")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                                   help_text="Shown to annotators. **bold** and *italics* work.")
    ratings_per_output = forms.IntegerField(min_value=1, max_value=50, initial=3, required=False,
                                            label="Ratings per output")
    file = forms.FileField(label="File", help_text="JSONL (sources and outputs), a SimpEval CSV (with ratings) or a "
                                                   "multi-aspect rating CSV (Simplicity-DA, crowd DA/Likert).")
    kind = forms.ChoiceField(choices=[("auto", "From the file"), ("jsonl", "JSONL"), ("simpeval", "SimpEval CSV"),
                                      ("da", "Multi-aspect ratings CSV")], initial="auto", label="Format")
    reference_source = forms.FileField(
        required=False, label="Reference sources",
        help_text="SimpEval and multi-aspect CSVs: the source sentences, one per line (e.g. simpeval_2022.src).")
    references = MultipleFileField(
        required=False, label="References",
        help_text="One or more files line-aligned with the reference sources; a line holds one or more "
                  "tab-separated references (SimpEval's .dst, or ASSET's ten files). Matched to the sources by text.")
    annotators = forms.CharField(required=False, label="Annotators",
                                 help_text="Usernames, separated by commas or spaces (optional).")

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mine = campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE)
        target = self.fields["target"]
        if isinstance(target, forms.ChoiceField):
            target.choices = [(NEW, "New campaign…")] + [
                (c.slug, f"{c.name} ({c.slug})") for c in mine.order_by("name")
            ]

    def clean_annotators(self) -> list[User]:
        names = [n for n in _USERNAMES.split(self.cleaned_data.get("annotators", "")) if n]
        if not names:
            return []
        try:
            return annotators_by_username(names, field="annotators")
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is None:
            return None
        if data.get("target") == NEW:
            if not data.get("name"):
                self.add_error("name", "A new campaign needs a name.")
            elif not (data.get("slug") or slugify(data["name"])):
                self.add_error("slug", "Give a slug of letters and digits.")
        upload = data.get("file")
        if upload is not None and data.get("kind") == "auto":
            suffix = Path(upload.name).suffix.lower()
            if suffix in (".jsonl", ".json", ".ndjson"):
                data["kind"] = "jsonl"
            elif suffix in (".csv", ".tsv"):
                data["kind"] = "da" if _looks_multi_aspect(upload) else "simpeval"
            else:
                self.add_error("kind", f"Cannot tell the format from {upload.name!r}: choose it.")
        data["reference_map"] = self._references(data)
        return data

    def _references(self, data: dict[str, Any]) -> dict[str, list[str]] | None:
        """The reference files read by the import's own reader (``references_read``), each error on its field."""
        source, files = data.get("reference_source"), data.get("references") or []
        try:
            import_references_check(kind=data.get("kind") or "", source_given=source is not None,
                                    files_given=bool(files))
        except ServiceError as exc:
            self.add_error(exc.field, exc.message)
            return None
        if source is None:
            return None
        try:
            return references_read(source=(source, source.name), files=[(f, f.name) for f in files])
        except FormatError as exc:
            self.add_error("reference_source" if exc.file == source.name else "references", str(exc))
        except ServiceError as exc:
            self.add_error(exc.field if exc.field in ("reference_source", "references") else "references",
                           exc.message)
        return None


def _looks_multi_aspect(upload: Any) -> bool:
    """A CSV whose header names the crowd (``WorkerId``) or Simplicity-DA (``sent_id``) layout's key column."""
    head = upload.read(4096)
    upload.seek(0)
    first = head.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf")
    columns = {c.strip().strip(b'"') for c in first.split(b",")}
    return bool(columns & {b"WorkerId", b"sent_id"})


def _import_upload(*, user: User, data: dict[str, Any]) -> ImportResult:
    """Create the campaign (if asked), import the file and add annotators.

    Not one transaction: the import writes in short steps of its own (so that annotators' writes go on
    beside it) and deletes what it wrote if it fails; a campaign created here is deleted if the import or
    adding the annotators fails.
    """
    upload = data["file"]
    created = None
    if data["target"] == NEW:
        fields: dict[str, Any] = {"instructions": data.get("instructions") or ""}
        if data.get("ratings_per_output"):
            fields["ratings_per_output"] = data["ratings_per_output"]
        with transaction.atomic():
            campaign = created = campaign_create(name=data["name"], slug=data.get("slug") or None, owner=user,
                                                 **fields)
    else:
        campaign = campaign_get_visible(user=user, slug=data["target"], purpose=CampaignPurpose.MANAGE)
    try:
        result = campaign_import(kind=data["kind"], file=upload, filename=upload.name, campaign_slug=campaign.slug,
                                 user=user, references=data.get("reference_map"))
        if data["annotators"]:
            with transaction.atomic():
                campaign_add_annotators(campaign=campaign, annotators=data["annotators"])
    except BaseException:
        if created is not None:
            created.delete()
        raise
    return result


@researcher_required
def research_import(request: HttpRequest) -> HttpResponse:
    error: dict[str, Any] | None = None
    status = 200
    if request.method == "POST":
        status = 400  # unless the import succeeds (a redirect) or its error has its own status
        form = ImportForm(request.POST, request.FILES, user=request_user(request))
        if form.is_valid():
            try:
                result = _import_upload(user=request_user(request), data=form.cleaned_data)
            except FormatError as exc:
                error = {"title": "The file could not be imported", **exc.to_dict()}
            except ServiceError as exc:  # e.g. a file over MAX_UPLOAD_BYTES: 413, the message on the form
                error = {"title": "Nothing was imported", "message": exc.message, "field": exc.field}
                status = exc.status
            else:
                messages.success(request, result.summary())
                return redirect("frontend:research-dashboard", slug=result.campaign.slug)
    else:
        form = ImportForm(user=request_user(request), initial={"target": request.GET.get("campaign", NEW)})
    return render(request, "frontend/research/import.html", {"form": form, "error": error, "new": NEW},
                  status=status)
