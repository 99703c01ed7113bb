"""The research page of a campaign's practice sentences: which sources are practice, and the answer each
expects (the ranking, best first, the scores and the groups), which annotators must give before real work.

Every write goes through ``annotation.services.practice`` (the check the admin and the API use too)."""

from __future__ import annotations

import re
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
from annotation.services.tutorials import PRACTICE_SCORE_TOLERANCE
from core.errors import ServiceError
from core.numbers import whole_number
from frontend.views_research import researcher_required

PRACTICE_LISTED_MAX = 50  # practice sentences shown on the page (a tutorial has a handful)


def _source(campaign: Campaign, external_id: str) -> Source | None:
    return Source.objects.filter(campaign=campaign, external_id=external_id.strip()).first() if external_id else None


def _rows(source: Source, post: Any = None) -> list[dict[str, Any]]:
    """One row per system of the source: its output, and the rank, score and group expected (as stored, or as
    posted), with the errors of its fields (``errors["rank"]``, ``errors["score"]``)."""
    key = source.tutorial_key or {}
    ranking = list(key.get("ranking") or [])
    scores = key.get("ratings") or {}
    groups = key.get("categories") or {}
    rows = []
    for output in source.outputs.select_related("system").order_by("system__name"):
        name = output.system.name
        rank = str(ranking.index(name) + 1) if name in ranking else ""
        score = f"{scores[name]:g}" if isinstance(scores.get(name), int | float) else ""
        group = groups.get(name, "")
        if post is not None:
            rank, score, group = (post.get(f"rank-{output.pk}", "").strip(), post.get(f"score-{output.pk}", "").strip(),
                                  post.get(f"group-{output.pk}", ""))
        rows.append({"output": output, "system": name, "rank": rank, "score": score, "group": group, "errors": {}})
    return rows


_SCORE = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3})?")


def _posted_key(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The expected answer the form describes; a field that cannot be read gets its error on its row (the
    range of a score is the service's rule, `tutorial_key_check`)."""
    ranked: list[tuple[int, str]] = []
    scores: dict[str, float | int] = {}
    for row in rows:
        if row["rank"]:
            try:
                rank = whole_number(row["rank"], field="rank")
            except ServiceError:
                rank = None
            if rank:
                ranked.append((rank, row["system"]))
            else:
                row["errors"]["rank"] = "A rank is a whole number from 1 (the best)."
        if row["score"]:
            if _SCORE.fullmatch(row["score"]):
                number = float(row["score"])
                scores[row["system"]] = int(number) if number.is_integer() else number
            else:
                row["errors"]["score"] = "A score is a number from 0 to 100 (such as 80 or 72.5)."
    return {"ranking": [name for _, name in sorted(ranked)], "ratings": scores,
            "categories": {row["system"]: row["group"] for row in rows if row["group"]}}


@require_http_methods(["GET", "POST"])
@researcher_required
def campaign_practice_view(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the practice sentences (``?source=ID`` opens one to add). POST action=save (source, rank-<output>,
    score-<output>, group-<output>) or action=remove (source)."""
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
            key = _posted_key(rows)
            error = None
            if not any(row["errors"] for row in rows):
                try:
                    source_practice_set(source=source, practice=True, key=key)
                except ServiceError as exc:
                    error = exc
                else:
                    messages.success(request, f"Source {source.external_id} is a practice sentence.")
                    return redirect(f"{here}#practice-{source.pk}")
            status = error.status if error else 400
            if error is not None and error.field == "ratings" and isinstance(error.details, dict):
                beside = next((row for row in rows if row["system"] == error.details.get("entry")), None)
                if beside is not None:  # a refused score is shown next to that output's field
                    beside["errors"]["score"], error = error.reason, None
            editing = {"source": source, "rows": rows, "fields_in_error": sum(bool(row["errors"]) for row in rows),
                       "error": error.message if error else "", "error_field": error.field if error else None}
        else:
            add_error, status = "Choose save or remove.", 400
    elif request.GET.get("source"):
        source = _source(campaign, request.GET["source"])
        if source is None:
            add_error, status = f"No source of this campaign has the id {request.GET['source'][:100]!r}.", 400
        elif not source.is_tutorial:
            editing = {"source": source, "rows": _rows(source), "error": "", "error_field": None}
    practice = []
    for source in campaign.sources.filter(is_tutorial=True).order_by("order", "id")[:PRACTICE_LISTED_MAX]:
        if editing is not None and editing["source"].pk == source.pk:
            practice.append(editing)
            editing = None
        else:
            practice.append({"source": source, "rows": _rows(source), "error": "", "error_field": None})
    return render(request, "frontend/research/practice.html", {
        "campaign": campaign, "practice": practice, "adding": editing, "add_error": add_error,
        "categories": Category.choices, "tolerance": PRACTICE_SCORE_TOLERANCE,
        "source_value": request.GET.get("source") or request.POST.get("source", ""),
    }, status=status)
