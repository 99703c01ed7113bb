"""Annotator pages: home, campaign instructions with the tutorial, and the annotation page.

The pages only render; reads go through `annotation.selectors`, writes through the services (the
annotation page itself talks to the REST API). Tutorial gating is the services' rule
(`annotation.services.tutorials`): the pages only send the annotator to the instructions first.
"""

from __future__ import annotations

import random
import re
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation.auth import request_user
from annotation.blinding import answers_with_unit_ids, tokens_for, tutorial_scope, unit_token
from annotation.models import Assignment, Campaign, RatingUnit, Source, User
from annotation.rules import ORDER_CONTRADICTION_POINTS, percent
from annotation.selectors import (
    CampaignPurpose,
    assignment_detail,
    assignment_list_for_annotator,
    assignment_position,
    assignment_progress_after_submit,
    campaign_get_visible,
    campaign_list_visible,
    campaign_progress_for_annotator,
    unit_payload,
)
from annotation.services.assignments import assignment_claim_next
from annotation.services.operations import CrowdEnd, crowd_end, crowd_key_of
from annotation.services.tutorials import (
    assignment_must_pass_tutorial,
    tutorial_answer_check,
    tutorial_passed_ids,
    tutorial_pending,
    tutorial_sources,
)
from core.api.parsers import json_load_checked
from core.concurrency import annotation_lane
from core.errors import NotAllowed, ServiceError
from core.throttle import Throttled
from frontend.errors import not_found_page
from frontend.throttling import throttled_response

# The rating scale's anchors (LENS Appendix F), shown on the instructions and on step 3 from this one list.
SCALE_ANCHORS = [
    (100, "Fully simplified, entirely fluent and keeps the core meaning of the original sentence."),
    (75, "Somewhat simpler, mostly fluent, and the meaning is close to the original."),
    (50, "Simpler, somewhat fluent, and the meaning is similar to the original."),
    (25, "About as simple as the original, still somewhat fluent, but the meaning is lost."),
    (0, "Completely unreadable."),
]


# --- Instructions text ------------------------------------------------------------------------
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", re.S)


def render_instructions(text: str) -> SafeString:
    """Researcher-written text as HTML: everything escaped, then **bold**, *italics* and paragraphs."""
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]
    html = []
    for paragraph in paragraphs:
        body: str = escape(paragraph)
        body = _BOLD.sub(r"<strong>\1</strong>", body)
        body = _ITALIC.sub(r"<em>\1</em>", body)
        html.append("<p>" + body.replace("\n", "<br>") + "</p>")
    return mark_safe("\n".join(html))  # escaped above


# --- Access -----------------------------------------------------------------------------------
def _membership_campaign(user: User, slug: str) -> Campaign:
    """A campaign the user annotates (404 otherwise, so slugs do not leak)."""
    return campaign_get_visible(user=user, slug=slug, purpose=CampaignPurpose.ANNOTATE)


def _own_assignment(user: User, pk: int) -> Assignment | None:
    """The assignment, for its annotator only: None for anyone else (and for none), so that the page answers
    the same styled 404 either way (frontend.errors.not_found_page)."""
    assignment = Assignment.objects.select_related("campaign", "source").filter(pk=pk).first()
    if assignment is None or assignment.annotator_id != user.pk or assignment.status == Assignment.Status.RELEASED:
        return None
    return assignment


# --- Tutorial ---------------------------------------------------------------------------------
def _tutorial_detail(source: Source, user: User) -> dict[str, Any]:
    """The annotation page's data for a tutorial source (same shape as `assignment_detail`)."""
    units = list(RatingUnit.objects.filter(source=source).order_by("id"))
    random.Random(f"{user.pk}:{source.pk}").shuffle(units)
    scope = tutorial_scope(annotator_id=user.pk, source_id=source.pk)
    return {
        "id": f"tutorial-{source.pk}",
        "campaign": source.campaign.slug,
        "campaign_name": source.campaign.name,
        "status": "tutorial",
        "source": {"id": source.external_id, "text": source.text, "is_tutorial": True},
        "units": [unit_payload(u, public_id=unit_token(scope=scope, unit_id=u.pk)) for u in units],
        "annotation": None,
    }


# --- Pages ------------------------------------------------------------------------------------
@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    if user.is_researcher:
        try:
            return redirect(reverse("frontend:research-home"))
        except NoReverseMatch:
            pass  # research pages not installed: show the (empty) annotator home with a link
    progress = campaign_progress_for_annotator(annotator=user)
    assignments = list(assignment_list_for_annotator(annotator=user))
    active = set(
        campaign_list_visible(user=user, purpose=CampaignPurpose.ANNOTATE).values_list("slug", flat=True)
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
            "percent": percent(row["done"], row["total"]),
            "assignments": mine,
            "unfinished": [a for a in mine if a.status != Assignment.Status.SUBMITTED],
        })
    return render(request, "frontend/home.html", {"campaigns": campaigns, "is_researcher": user.is_researcher})


@annotation_lane
@login_required
@require_POST
def continue_next(request: HttpRequest, slug: str) -> HttpResponse:
    """Open the next unfinished source of a campaign (taken from the pool if needed)."""
    user = request_user(request)
    campaign = _membership_campaign(user, slug)
    try:
        assignment = assignment_claim_next(campaign=campaign, annotator=user)
    except NotAllowed as exc:
        if exc.field == "exclusion":
            if crowd_end(campaign=campaign, annotator=user) is not CrowdEnd.NOT_CROWD:
                return redirect("frontend:completion", slug=slug)
            messages.error(request, exc.message)
            return redirect("frontend:home")
        if exc.field != "tutorial":
            raise
        messages.info(request, "Please complete the tutorial before starting.")
        return redirect("frontend:instructions", slug=slug)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("frontend:home")
    if assignment is None:
        if crowd_end(campaign=campaign, annotator=user) in (CrowdEnd.CODE, CrowdEnd.LAPSED):
            return redirect("frontend:completion", slug=slug)
        messages.success(request, f"Nothing left to annotate in “{campaign.name}”. Thank you!")
        return redirect("frontend:home")
    return redirect("frontend:annotate", pk=assignment.pk)


@login_required
@require_GET
def instructions(request: HttpRequest, slug: str) -> HttpResponse:
    user = request_user(request)
    campaign = _membership_campaign(user, slug)
    tutorials = tutorial_sources(campaign=campaign)
    passed = tutorial_passed_ids(campaign=campaign, annotator=user, tutorials=tutorials)
    return render(request, "frontend/instructions.html", {
        "campaign": campaign,
        "instructions_html": render_instructions(campaign.instructions),
        "anchors": SCALE_ANCHORS,
        "tutorials": [{"n": i + 1, "source": s, "passed": s.pk in passed} for i, s in enumerate(tutorials)],
        "tutorials_done": all(s.pk in passed for s in tutorials),
        "personal_link": crowd_personal_link(request, campaign, user),
    })


def crowd_personal_link(request: HttpRequest, campaign: Campaign, user: User) -> str | None:
    """A crowd worker's personal link (None for anyone else): it brings them back to their work from another
    browser, where the crowd link alone would not."""
    key = crowd_key_of(campaign=campaign, annotator=user)
    if key is None:
        return None
    return request.build_absolute_uri(reverse("frontend:crowd-return", kwargs={"slug": campaign.slug, "key": key}))


def _tutorial_source(campaign: Campaign, n: int) -> Source:
    tutorials = tutorial_sources(campaign=campaign)
    if not 1 <= n <= len(tutorials):
        raise Http404("No such tutorial step.")
    return tutorials[n - 1]


@login_required
@require_GET
def tutorial(request: HttpRequest, slug: str, n: int) -> HttpResponse:
    user = request_user(request)
    campaign = _membership_campaign(user, slug)
    source = _tutorial_source(campaign, n)
    return render(request, "frontend/annotate.html", {
        "detail": _tutorial_detail(source, user),
        "campaign": campaign,
        "mode": "tutorial",
        "anchors": SCALE_ANCHORS,
        "order_points": ORDER_CONTRADICTION_POINTS,
        "tutorial_n": n,
        "tutorial_total": len(tutorial_sources(campaign=campaign)),
        "check_url": reverse("frontend:tutorial-check", kwargs={"slug": slug, "n": n}),
        "storage_key": f"rr:u{user.pk}:tutorial:{source.pk}",
    })


@login_required
@require_POST
def tutorial_check_view(request: HttpRequest, slug: str, n: int) -> HttpResponse:
    """Check a tutorial answer (the page's submit body); the service remembers a pass."""
    user = request_user(request)
    campaign = _membership_campaign(user, slug)
    source = _tutorial_source(campaign, n)
    try:
        body = json_load_checked(request.body)
    except ServiceError as error:
        return JsonResponse(error.to_dict(), status=error.status)
    units = body.get("units") if isinstance(body, dict) else None
    # The page names outputs by their opaque ids; the check works on the units' ids.
    tokens = tokens_for(scope=tutorial_scope(annotator_id=user.pk, source_id=source.pk),
                        units=RatingUnit.objects.filter(source=source).values_list("pk", flat=True),
                        key=lambda pk: pk)
    answers = answers_with_unit_ids(units, tokens=tokens) if isinstance(units, list) else []
    try:
        problems = tutorial_answer_check(source=source, annotator=user, units=answers)
    except Throttled as error:
        return throttled_response(request, error)
    pending = tutorial_pending(campaign=campaign, annotator=user)
    return JsonResponse({"passed": not problems, "problems": problems, "tutorials_left": len(pending)})


@annotation_lane
@login_required
@require_GET
def annotate(request: HttpRequest, pk: int) -> HttpResponse:
    user = request_user(request)
    assignment = _own_assignment(user, pk)
    if assignment is None:
        return not_found_page(request, "There is no such sentence among your work.")
    campaign = assignment.campaign
    try:
        assignment_must_pass_tutorial(assignment=assignment, user=user)
    except NotAllowed:
        messages.info(request, "Please complete the tutorial before starting.")
        return redirect("frontend:instructions", slug=campaign.slug)
    return render(request, "frontend/annotate.html", {
        "detail": assignment_detail(assignment=assignment),
        "campaign": campaign,
        "mode": "assignment",
        "anchors": SCALE_ANCHORS,
        "order_points": ORDER_CONTRADICTION_POINTS,
        "assignment": assignment,
        "position": assignment_position(assignment=assignment),
        "progress": assignment_progress_after_submit(assignment=assignment),
        "storage_key": f"rr:u{user.pk}:assignment:{assignment.pk}",
    })
