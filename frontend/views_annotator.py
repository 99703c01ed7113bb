"""Annotator pages: home, campaign instructions with the tutorial, and the annotation page.

The pages only render; reads go through `annotation.selectors`, writes through the services (the
annotation page itself talks to the REST API). Tutorial answers are checked here because they are
never stored as annotations: a passed tutorial is remembered in the session, and an annotator who
has already submitted real work in the campaign is never sent back to it.
"""

from __future__ import annotations

import random
import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation.analysis import is_degraded_version
from annotation.errors import ServiceError
from annotation.models import Assignment, Campaign, CampaignAnnotator, Category, RatingUnit, Source, User
from annotation.selectors import (
    assignment_detail,
    assignment_list_for_annotator,
    campaign_progress_for_annotator,
)
from annotation.services.assignments import assignment_claim_next

SCALE_ANCHORS = [
    (100, "Fully simplified, entirely fluent and keeps the core meaning of the original sentence."),
    (75, "Somewhat simpler, mostly fluent, and the meaning is close to the original."),
    (50, "Simpler, somewhat fluent, and the meaning is similar to the original."),
    (25, "About as simple as the original, still somewhat fluent, but the meaning is lost."),
    (0, "Completely unreadable."),
]
SESSION_TUTORIALS = "tutorials_passed"


# --- Instructions text ------------------------------------------------------------------------
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", re.S)


def render_instructions(text: str) -> SafeString:
    """Researcher-written text as HTML: everything escaped, then **bold**, *italics* and paragraphs."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]
    html = []
    for paragraph in paragraphs:
        body = escape(paragraph)
        body = _BOLD.sub(r"<strong>\1</strong>", body)
        body = _ITALIC.sub(r"<em>\1</em>", body)
        html.append("<p>" + body.replace("\n", "<br>") + "</p>")
    return mark_safe("\n".join(html))  # escaped above


# --- Access -----------------------------------------------------------------------------------
def _membership_campaign(user: User, slug: str) -> Campaign:
    """A campaign the user annotates (404 otherwise, so slugs do not leak)."""
    membership = (
        CampaignAnnotator.objects.select_related("campaign")
        .filter(campaign__slug=slug, annotator=user, active=True)
        .first()
    )
    if membership is None:
        raise Http404("No such campaign.")
    return membership.campaign


def _own_assignment(user: User, pk: int) -> Assignment:
    """The page is for the assignment's annotator only; anyone else gets a 404."""
    assignment = get_object_or_404(Assignment.objects.select_related("campaign", "source"), pk=pk)
    if assignment.annotator_id != user.pk or assignment.status == Assignment.Status.RELEASED:
        raise Http404("No such assignment.")
    return assignment


# --- Tutorial ---------------------------------------------------------------------------------
def _tutorial_sources(campaign: Campaign) -> list[Source]:
    return list(campaign.sources.filter(is_tutorial=True).order_by("order", "id"))


def _tutorials_passed(request: HttpRequest, campaign: Campaign, tutorials: list[Source]) -> set[int]:
    if not tutorials:
        return set()
    if Assignment.objects.filter(campaign=campaign, annotator=request.user,
                                 status=Assignment.Status.SUBMITTED).exists():
        return {s.pk for s in tutorials}
    return set(request.session.get(SESSION_TUTORIALS, {}).get(campaign.slug, []))


def _tutorials_pending(request: HttpRequest, campaign: Campaign) -> list[Source]:
    tutorials = _tutorial_sources(campaign)
    passed = _tutorials_passed(request, campaign, tutorials)
    return [s for s in tutorials if s.pk not in passed]


def _tutorial_detail(source: Source, user: User) -> dict[str, Any]:
    """The annotation page's data for a tutorial source (same shape as `assignment_detail`)."""
    units = list(RatingUnit.objects.filter(source=source).order_by("id"))
    random.Random(f"{user.pk}:{source.pk}").shuffle(units)
    return {
        "id": f"tutorial-{source.pk}",
        "campaign": source.campaign.slug,
        "campaign_name": source.campaign.name,
        "status": "tutorial",
        "source": {"id": source.external_id, "text": source.text, "is_tutorial": True},
        "units": [
            {
                "id": u.pk, "text": u.text, "auto_category": u.auto_category or "paraphrase",
                "reasons": (u.analysis or {}).get("reasons", {}), "auto_edits": (u.analysis or {}).get("edits", []),
                "analysis_error": u.analysis_error or None,
                "analysis_degraded": is_degraded_version(u.analysis_version),
            }
            for u in units
        ],
        "annotation": None,
    }


def _key_to_units(source: Source, names: list[Any]) -> list[set[int]]:
    """Map tutorial-key entries (system names or exact output texts) to rating-unit ids."""
    by_name: dict[str, set[int]] = {}
    for output in source.outputs.select_related("system"):
        by_name.setdefault(output.system.name, set()).add(output.unit_id)
        by_name.setdefault(output.text, set()).add(output.unit_id)
    return [by_name.get(str(name), set()) for name in names]


def tutorial_check(source: Source, units: list[dict[str, Any]]) -> list[str]:
    """Problems with a tutorial answer; empty when it passes.

    `tutorial_key` may hold "ranking" (system names or output texts, best first: the annotator's
    best and worst must match its first and last entries) and "categories" ({name: category}).
    """
    key = source.tutorial_key or {}
    if not units or any(not isinstance(u, dict) for u in units):
        return ["Rate and rank every output first."]
    ranked = sorted(units, key=lambda u: u.get("rank") or 0)
    problems = []
    ranking = key.get("ranking") or []
    if len(ranking) >= 2:
        best, worst = _key_to_units(source, [ranking[0], ranking[-1]])
        if ranked[0].get("unit") not in best:
            problems.append("The output you ranked first is not the best one. Look again at meaning and fluency.")
        if ranked[-1].get("unit") not in worst:
            problems.append("The output you ranked last is not the worst one.")
    for name, category in (key.get("categories") or {}).items():
        wanted = _key_to_units(source, [name])[0]
        for u in units:
            if u.get("unit") in wanted and u.get("category") != category:
                label = Category(category).label if category in Category.values else category
                problems.append(f"One output belongs in the {label} group: “{_short(source, u['unit'])}”.")
    return problems


def _short(source: Source, unit_id: int) -> str:
    text = RatingUnit.objects.filter(source=source, pk=unit_id).values_list("text", flat=True).first() or ""
    return text if len(text) <= 80 else text[:77] + "…"


# --- Pages ------------------------------------------------------------------------------------
@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    user: User = request.user  # type: ignore[assignment]
    if user.is_researcher:
        try:
            return redirect(reverse("frontend:research-home"))
        except NoReverseMatch:
            pass  # research pages not installed: show the (empty) annotator home with a link
    progress = campaign_progress_for_annotator(annotator=user)
    assignments = list(assignment_list_for_annotator(annotator=user))
    active = set(
        CampaignAnnotator.objects.filter(annotator=user, active=True).values_list("campaign__slug", flat=True)
    )
    campaigns = []
    known = {row["campaign"] for row in progress}
    joined = list(
        Campaign.objects.filter(slug__in=active - known).values_list("slug", "name")
    )
    rows = progress + [{"campaign": slug, "name": name, "done": 0, "total": 0} for slug, name in joined]
    for row in rows:
        mine = [a for a in assignments if a.campaign.slug == row["campaign"]]
        campaigns.append({
            **row,
            "percent": round(100 * row["done"] / row["total"]) if row["total"] else 0,
            "assignments": mine,
            "unfinished": [a for a in mine if a.status != Assignment.Status.SUBMITTED],
        })
    return render(request, "frontend/home.html", {"campaigns": campaigns, "is_researcher": user.is_researcher})


@login_required
@require_POST
def continue_next(request: HttpRequest, slug: str) -> HttpResponse:
    """Open the next unfinished source of a campaign (taken from the pool if needed)."""
    campaign = _membership_campaign(request.user, slug)  # type: ignore[arg-type]
    if _tutorials_pending(request, campaign):
        messages.info(request, "Please complete the tutorial before starting.")
        return redirect("frontend:instructions", slug=slug)
    try:
        assignment = assignment_claim_next(campaign=campaign, annotator=request.user)  # type: ignore[arg-type]
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("frontend:home")
    if assignment is None:
        messages.success(request, f"Nothing left to annotate in “{campaign.name}”. Thank you!")
        return redirect("frontend:home")
    return redirect("frontend:annotate", pk=assignment.pk)


@login_required
@require_GET
def instructions(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = _membership_campaign(request.user, slug)  # type: ignore[arg-type]
    tutorials = _tutorial_sources(campaign)
    passed = _tutorials_passed(request, campaign, tutorials)
    return render(request, "frontend/instructions.html", {
        "campaign": campaign,
        "instructions_html": render_instructions(campaign.instructions),
        "anchors": SCALE_ANCHORS,
        "tutorials": [{"n": i + 1, "source": s, "passed": s.pk in passed} for i, s in enumerate(tutorials)],
        "tutorials_done": all(s.pk in passed for s in tutorials),
    })


def _tutorial_source(campaign: Campaign, n: int) -> Source:
    tutorials = _tutorial_sources(campaign)
    if not 1 <= n <= len(tutorials):
        raise Http404("No such tutorial step.")
    return tutorials[n - 1]


@login_required
@require_GET
def tutorial(request: HttpRequest, slug: str, n: int) -> HttpResponse:
    campaign = _membership_campaign(request.user, slug)  # type: ignore[arg-type]
    source = _tutorial_source(campaign, n)
    return render(request, "frontend/annotate.html", {
        "detail": _tutorial_detail(source, request.user),  # type: ignore[arg-type]
        "campaign": campaign,
        "mode": "tutorial",
        "tutorial_n": n,
        "tutorial_total": len(_tutorial_sources(campaign)),
        "check_url": reverse("frontend:tutorial-check", kwargs={"slug": slug, "n": n}),
        "storage_key": f"rr:u{request.user.pk}:tutorial:{source.pk}",
    })


@login_required
@require_POST
def tutorial_check_view(request: HttpRequest, slug: str, n: int) -> JsonResponse:
    """Check a tutorial answer (the page's submit body); remember a pass in the session."""
    import json

    campaign = _membership_campaign(request.user, slug)  # type: ignore[arg-type]
    source = _tutorial_source(campaign, n)
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"detail": "The request body is not JSON.", "field": None}, status=400)
    units = body.get("units") if isinstance(body, dict) else None
    problems = tutorial_check(source, units if isinstance(units, list) else [])
    if not problems:
        passed = request.session.get(SESSION_TUTORIALS, {})
        passed[slug] = sorted(set(passed.get(slug, [])) | {source.pk})
        request.session[SESSION_TUTORIALS] = passed
    pending = _tutorials_pending(request, campaign)
    return JsonResponse({"passed": not problems, "problems": problems, "tutorials_left": len(pending)})


@login_required
@require_GET
def annotate(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = _own_assignment(request.user, pk)  # type: ignore[arg-type]
    campaign = assignment.campaign
    if assignment.status != Assignment.Status.SUBMITTED and _tutorials_pending(request, campaign):
        messages.info(request, "Please complete the tutorial before starting.")
        return redirect("frontend:instructions", slug=campaign.slug)
    return render(request, "frontend/annotate.html", {
        "detail": assignment_detail(assignment=assignment),
        "campaign": campaign,
        "mode": "assignment",
        "assignment": assignment,
        "storage_key": f"rr:u{request.user.pk}:assignment:{assignment.pk}",
    })
