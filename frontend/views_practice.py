"""The research page of a campaign's practice sentences: which sources are practice, and the answer each
expects (the ranking, best first, and the groups), which annotators must give before real work.

Every write goes through ``annotation.services.practice`` (the check the admin and the API use too)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.auth import request_user
from annotation.models import Campaign, Category, Source
from annotation.selectors import CampaignPurpose, campaign_get_visible
from annotation.services.practice import source_practice_set
from core.errors import ServiceError
from core.numbers import whole_number
from frontend.views_research import researcher_required

PRACTICE_LISTED_MAX = 50  # practice sentences shown on the page (a tutorial has a handful)


def _source(campaign: Campaign, external_id: str) -> Source | None:
    return Source.objects.filter(campaign=campaign, external_id=external_id.strip()).first() if external_id else None


def _rows(source: Source, post: Any = None) -> list[dict[str, Any]]:
    """One row per system of the source: its output, and the rank and group expected (as stored, or as posted)."""
    key = source.tutorial_key or {}
    ranking = list(key.get("ranking") or [])
    groups = key.get("categories") or {}
    rows = []
    for output in source.outputs.select_related("system").order_by("system__name"):
        name = output.system.name
        rank = str(ranking.index(name) + 1) if name in ranking else ""
        group = groups.get(name, "")
        if post is not None:
            rank, group = post.get(f"rank-{output.pk}", "").strip(), post.get(f"group-{output.pk}", "")
        rows.append({"output": output, "system": name, "rank": rank, "group": group})
    return rows


def _posted_key(rows: list[dict[str, Any]], stored: Any = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The expected answer the form describes, and the errors of its rank fields (by output id). The form has
    no field for expected scores, so those of the ``stored`` key (set by the API or the admin) are kept."""
    errors: dict[str, str] = {}
    ranked: list[tuple[int, str]] = []
    for row in rows:
        if row["rank"]:
            try:
                rank = whole_number(row["rank"], field="rank")
            except ServiceError:
                rank = None
            if not rank:
                errors[str(row["output"].pk)] = "A rank is a whole number from 1 (the best)."
                continue
            ranked.append((rank, row["system"]))
    key: dict[str, Any] = {"ranking": [name for _, name in sorted(ranked)],
                           "categories": {row["system"]: row["group"] for row in rows if row["group"]}}
    if isinstance(stored, dict) and stored.get("ratings"):
        key["ratings"] = stored["ratings"]
    return key, errors


@require_http_methods(["GET", "POST"])
@researcher_required
def campaign_practice_view(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the practice sentences (``?source=ID`` opens one to add). POST action=save (source, rank-<output>,
    group-<output>) or action=remove (source)."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    here = reverse("frontend:research-practice", kwargs={"slug": campaign.slug})
    editing: dict[str, Any] | None = None
    add_error = ""
    status = 200
    if request.method == "POST":
        source = _source(campaign, request.POST.get("source", ""))
        action = request.POST.get("action")
        if source is None:
            add_error, status = "No source of this campaign has that id.", 400
        elif action == "remove":
            source_practice_set(source=source, practice=False)
            messages.success(request, f"Source {source.external_id} is real work again.")
            return redirect(here)
        elif action == "save":
            rows = _rows(source, request.POST)
            key, field_errors = _posted_key(rows, source.tutorial_key)
            error = None
            if not field_errors:
                try:
                    source_practice_set(source=source, practice=True, key=key)
                except ServiceError as exc:
                    error = exc
                else:
                    messages.success(request, f"Source {source.external_id} is a practice sentence.")
                    return redirect(f"{here}#practice-{source.pk}")
            status = error.status if error else 400
            editing = {"source": source, "rows": rows, "field_errors": field_errors,
                       "error": error.message if error else "", "error_field": error.field if error else None}
        else:
            add_error, status = "Choose save or remove.", 400
    elif request.GET.get("source"):
        source = _source(campaign, request.GET["source"])
        if source is None:
            add_error, status = f"No source of this campaign has the id {request.GET['source'][:100]!r}.", 400
        elif not source.is_tutorial:
            editing = {"source": source, "rows": _rows(source), "field_errors": {}, "error": "", "error_field": None}
    practice = []
    for source in campaign.sources.filter(is_tutorial=True).order_by("order", "id")[:PRACTICE_LISTED_MAX]:
        if editing is not None and editing["source"].pk == source.pk:
            practice.append(editing)
            editing = None
        else:
            practice.append({"source": source, "rows": _rows(source), "field_errors": {}, "error": "",
                             "error_field": None})
    return render(request, "frontend/research/practice.html", {
        "campaign": campaign, "practice": practice, "adding": editing, "add_error": add_error,
        "categories": Category.choices, "source_value": request.GET.get("source") or request.POST.get("source", ""),
    }, status=status)
