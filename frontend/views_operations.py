"""Campaign operations on the research pages (people, invites, crowd links, one item) and the public pages
an invited person or a crowd worker lands on. Every write goes through `annotation.services`."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.auth import request_user
from annotation.models import Assignment, Campaign, User
from annotation.selectors import CampaignPurpose, assignment_item_view, campaign_get_visible
from annotation.services.annotations import annotation_reopen
from annotation.services.assignments import (
    annotators_by_username,
    campaign_add_annotators,
    campaign_annotator_by_username,
    campaign_remove_annotator,
)
from annotation.services.campaigns import campaign_update
from annotation.services.operations import (
    CrowdEnd,
    CrowdEntry,
    StudyFull,
    assignment_reassign,
    crowd_close,
    crowd_end,
    crowd_enter,
    crowd_open,
    crowd_resume,
    crowd_visit_from_query,
    invite_accept,
    invite_create,
    invite_get_open,
)
from core.errors import NotAllowed, NotFound, ServiceError
from core.numbers import whole_number
from evaluation.services.quality import (
    annotator_exclude,
    annotator_reinclude,
    campaign_quality_setup,
    crowd_end_choice,
)
from frontend.errors import not_found_page
from frontend.throttling import address_throttled
from frontend.views_annotator import crowd_personal_link
from frontend.views_research import researcher_required

_USERNAMES = re.compile(r"[\s,;]+")


def _managed(request: HttpRequest, slug: str) -> Campaign:
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


def _back(campaign: Campaign) -> HttpResponse:
    return redirect(reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + "#people-title")


@require_POST
@researcher_required
def campaign_people_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST action=add (usernames) or action=remove (username): the dashboard's people panel."""
    campaign = _managed(request, slug)
    action = request.POST.get("action")
    try:
        if action == "add":
            users = annotators_by_username(_USERNAMES.split(request.POST.get("usernames", "")))
            created = campaign_add_annotators(campaign=campaign, annotators=users)
            messages.success(request, f"Added {', '.join(u.username for u in users)}; "
                                      f"{len(created)} source(s) assigned.")
        elif action == "remove":
            user = campaign_annotator_by_username(campaign=campaign, username=request.POST.get("username", ""))
            released = campaign_remove_annotator(campaign=campaign, annotator=user)
            messages.success(request, f"Removed {user.username}; {released} unfinished source(s) back in the pool.")
        else:
            raise ServiceError("action must be add or remove", field="action")
    except ServiceError as error:
        messages.error(request, error.message)
    return _back(campaign)


@require_POST
@researcher_required
def campaign_invite_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST: a new invite link (optional max_uses)."""
    campaign = _managed(request, slug)
    try:
        max_uses = whole_number(request.POST.get("max_uses", ""), field="max_uses")
        invite = invite_create(campaign=campaign, by=request_user(request), max_uses=max_uses)
    except ServiceError as error:
        messages.error(request, error.message)
    else:
        url = request.build_absolute_uri(reverse("frontend:invite", kwargs={"token": invite.token}))
        messages.success(request, f"Invite link: {url}")
    return _back(campaign)


@require_POST
@researcher_required
def campaign_crowd_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST action=open|close the crowd link; action=batch sets the fixed batch per worker."""
    campaign = _managed(request, slug)
    action = request.POST.get("action")
    try:
        if action == "open":
            crowd_open(campaign=campaign)
            messages.success(request, f"Crowd link open; completion code {campaign.completion_code}.")
        elif action == "close":
            crowd_close(campaign=campaign)
            messages.success(request, "Crowd link closed.")
        elif action == "places":
            places = whole_number(request.POST.get("places", ""), field="places")
            campaign_update(campaign=campaign, crowd_places=places)
            messages.success(request, f"Crowd places: {places or 'as many as there is free work for'}.")
        elif action == "batch":
            batch_size = whole_number(request.POST.get("batch_size", ""), field="batch_size")
            campaign_update(campaign=campaign, batch_size=batch_size)
            messages.success(request, f"Batch per annotator: {batch_size or 'no limit'}.")
        else:
            raise ServiceError("action must be open, close, places or batch", field="action")
    except ServiceError as error:
        messages.error(request, error.message)
    return _back(campaign)


def _item(request: HttpRequest, slug: str, pk: int) -> tuple[Campaign, Assignment]:
    campaign = _managed(request, slug)
    assignment = get_object_or_404(
        Assignment.objects.select_related("source", "annotator", "campaign"), pk=pk, campaign=campaign
    )
    return campaign, assignment


@require_http_methods(["GET", "POST"])
@researcher_required
def campaign_item_view(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One annotator's annotation of one source; POST action=reopen (new version) or action=reassign."""
    campaign, assignment = _item(request, slug, pk)
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "reopen":
                annotation = assignment.annotations.filter(status="submitted").order_by("-version").first()
                if annotation is None:
                    raise ServiceError("nothing submitted to reopen", field="action")
                new = annotation_reopen(annotation=annotation, by=request_user(request))
                messages.success(request, f"Reopened as version {new.version}.")
            elif action == "reassign":
                to = campaign_annotator_by_username(campaign=campaign, username=request.POST.get("username", ""))
                new_assignment = assignment_reassign(assignment=assignment, to=to)
                messages.success(request, f"Reassigned to {to.username}.")
                return redirect("frontend:research-item", slug=campaign.slug, pk=new_assignment.pk)
            else:
                raise ServiceError("action must be reopen or reassign", field="action")
        except ServiceError as error:
            messages.error(request, error.message)
        return redirect("frontend:research-item", slug=campaign.slug, pk=assignment.pk)
    others = campaign.memberships.filter(active=True).exclude(annotator=assignment.annotator).select_related(
        "annotator")
    return render(request, "frontend/research/item.html", {
        "campaign": campaign, **assignment_item_view(assignment=assignment),
        "others": [m.annotator for m in others],
        "unfinished": assignment.status in (Assignment.Status.ASSIGNED, Assignment.Status.IN_PROGRESS),
    })


# --- Public landing pages ----------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@address_throttled("invite", what="sign-ups through invite links from this address")
def invite_view(request: HttpRequest, token: str) -> HttpResponse:
    """An invite link: a form for a username, a password and (optionally) an e-mail address."""
    try:
        invite = invite_get_open(token=token)
    except NotFound as missing:
        raise Http404(missing.message) from None
    error: ServiceError | None = None
    if request.method == "POST":
        try:
            user = invite_accept(token=token, username=request.POST.get("username", "").strip(),
                                 password=request.POST.get("password", ""),
                                 email=request.POST.get("email", "").strip())
        except NotFound as exc:
            raise Http404(exc.message) from None
        except ServiceError as exc:
            error = exc
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("frontend:instructions", slug=invite.campaign.slug)
    return render(request, "frontend/invite.html", {"campaign": invite.campaign, "error": error,
                                                    "values": request.POST}, status=400 if error else 200)


CROWD_COOKIE_DAYS = 90


def crowd_cookie_name(slug: str) -> str:
    return f"rr_crowd_{slug}"


def _crowd_cookie_salt(slug: str) -> str:
    return f"frontend.crowd:{slug}"


def _crowd_signed_in(request: HttpRequest, entry: CrowdEntry, slug: str) -> HttpResponse:
    """Sign the worker in and bind this browser to their account (a signed cookie holding their key)."""
    login(request, entry.user, backend="django.contrib.auth.backends.ModelBackend")
    response = redirect("frontend:instructions", slug=slug)
    response.set_signed_cookie(
        crowd_cookie_name(slug), entry.key, salt=_crowd_cookie_salt(slug), max_age=CROWD_COOKIE_DAYS * 86400,
        secure=settings.SESSION_COOKIE_SECURE, httponly=True, samesite="Lax",
    )
    return response


@require_GET
@address_throttled("crowd", what="arrivals through crowd links from this address", methods=("GET",))
def crowd_view(request: HttpRequest, slug: str, token: str) -> HttpResponse:
    """A crowd platform's link: creates the worker's passwordless account on the first visit (while the study
    has a place) and binds it to this browser; later visits resume it only from that browser."""
    key = request.get_signed_cookie(crowd_cookie_name(slug), default="", salt=_crowd_cookie_salt(slug))
    signed_in = request_user(request) if request.user.is_authenticated else None
    try:
        visit = crowd_visit_from_query(request.GET)
        entry = crowd_enter(slug=slug, token=token, visit=visit, key=key or "", signed_in=signed_in)
    except NotFound as error:
        return not_found_page(request, error.message)  # the styled page in development too (frontend.errors)
    except NotAllowed as error:
        return render(request, "frontend/crowd_error.html", {"error": error, "bound_elsewhere": True}, status=403)
    except StudyFull as error:
        return render(request, "frontend/crowd_error.html", {"error": error, "full": True}, status=409)
    except ServiceError as error:
        return render(request, "frontend/crowd_error.html", {"error": error}, status=400)
    return _crowd_signed_in(request, entry, slug)


@require_GET
@address_throttled("crowd", what="arrivals through crowd links from this address", methods=("GET",))
def crowd_return_view(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """A crowd worker's personal link: back to their work from any browser (which it then binds)."""
    try:
        entry = crowd_resume(slug=slug, key=key)
    except NotFound as error:
        return not_found_page(request, error.message)
    return _crowd_signed_in(request, entry, slug)


@login_required
@require_GET
def completion_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The end of a crowd worker's batch: the completion code to paste back into the platform, or (excluded,
    as the researcher chose) a page saying their submission was excluded."""
    user = request_user(request)
    campaign = campaign_get_visible(user=user, slug=slug, purpose=CampaignPurpose.ANNOTATE)
    end = crowd_end(campaign=campaign, annotator=user)
    return render(request, "frontend/crowd_done.html", {
        "campaign": campaign, "code": campaign.completion_code if end is CrowdEnd.CODE else None,
        "excluded": end is CrowdEnd.EXCLUDED, "personal_link": crowd_personal_link(request, campaign, user),
    })


@require_POST
@researcher_required
def campaign_quality_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST action=setup (attention_rate, repeat_share) or action=exclude|include (pseudonym)."""
    campaign = _managed(request, slug)
    action = request.POST.get("action")
    user = request_user(request)
    try:
        if action == "setup":
            done = campaign_quality_setup(campaign=campaign,
                                          attention_rate=request.POST.get("attention_rate", "").strip() or "0",
                                          repeat_share=request.POST.get("repeat_share", "").strip() or "0")
            messages.success(request, f"Attention items added to {done.attention_sources} source(s); "
                                      f"{done.repeats} source(s) repeated.")
        elif action in ("exclude", "include"):
            annotator = User.objects.filter(pseudonym=request.POST.get("pseudonym", "")).first()
            if annotator is None:
                raise ServiceError("unknown annotator", field="pseudonym")
            if action == "exclude":
                excluded = annotator_exclude(campaign=campaign, annotator=annotator, by=user,
                                             reason=request.POST.get("reason", ""),
                                             crowd_end=crowd_end_choice(request.POST.get("crowd_end")))
                messages.success(request, f"{annotator.pseudonym} excluded from reports, alpha and exports; "
                                          f"{excluded.released} unfinished source(s) back in the pool.")
            else:
                annotator_reinclude(campaign=campaign, annotator=annotator, by=user)
                messages.success(request, f"{annotator.pseudonym} included again.")
        else:
            raise ServiceError("action must be setup, exclude or include", field="action")
    except ServiceError as error:
        messages.error(request, error.message)
    return redirect(reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + "#quality-title")
