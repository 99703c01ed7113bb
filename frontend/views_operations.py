"""Campaign operations on the research pages (people, invites, crowd links, one item) and the public pages
an invited person or a crowd worker lands on. Every write goes through `annotation.services`."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.auth import request_user
from annotation.models import AnnotatorExclusion, Assignment, Campaign, CrowdWorker, User
from annotation.rules import completion_url_for
from annotation.selectors import CampaignPurpose, assignment_item_view, campaign_get_visible
from annotation.services.annotations import annotation_reopen
from annotation.services.assignments import (
    annotator_unfinished_count,
    annotators_by_username,
    campaign_add_annotators,
    campaign_allocation_set,
    campaign_annotator_by_username,
    campaign_remove_annotator,
)
from annotation.services.campaigns import campaign_update
from annotation.services.operations import (
    CrowdEnd,
    CrowdEntry,
    StudyFull,
    account_password_token,
    account_password_user,
    annotator_account_create,
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
from core.numbers import duration_words, whole_number
from evaluation.services.quality import (
    annotator_exclude,
    annotator_reinclude,
    campaign_quality_setup,
    crowd_end_choice,
)
from frontend.confirm import Confirmation, confirm_page, confirmed
from frontend.errors import not_found_page
from frontend.forms_dashboard import (
    AccountForm,
    AddAnnotatorsForm,
    AllocationForm,
    BatchForm,
    CompletionUrlForm,
    CrowdPlacesForm,
    DashboardForm,
    InviteForm,
    QualitySetupForm,
    TimeoutForm,
)
from frontend.throttling import address_throttled
from frontend.views_annotator import crowd_personal_link
from frontend.views_research import dashboard_page, researcher_required

_USERNAMES = re.compile(r"[\s,;]+")


def _managed(request: HttpRequest, slug: str) -> Campaign:
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


def _dashboard_url(campaign: Campaign, anchor: str) -> str:
    return reverse("frontend:research-dashboard", kwargs={"slug": campaign.slug}) + f"#{anchor}"


def _back(campaign: Campaign) -> HttpResponse:
    return redirect(_dashboard_url(campaign, "people-title"))


@require_POST
@researcher_required
def campaign_people_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST action=add (usernames) or action=remove (username, confirmed: ``frontend.confirm``): the
    dashboard's people panel. A failed add renders the dashboard with the error next to the field."""
    campaign = _managed(request, slug)
    action = request.POST.get("action")
    try:
        if action == "add":
            form = AddAnnotatorsForm(request.POST)
            try:
                users = annotators_by_username(_USERNAMES.split(request.POST.get("usernames", "")))
                created = campaign_add_annotators(campaign=campaign, annotators=users)
            except ServiceError as error:
                form.fail(error)
                return dashboard_page(request, campaign, failed=form)
            messages.success(request, f"Added {', '.join(u.username for u in users)}; "
                                      f"{len(created)} source(s) assigned.")
        elif action == "remove":
            user = campaign_annotator_by_username(campaign=campaign, username=request.POST.get("username", ""))
            if not confirmed(request):
                unfinished = annotator_unfinished_count(campaign=campaign, annotator=user)
                return confirm_page(request, Confirmation(
                    title=f"Remove {user.username} ({user.pseudonym}) from {campaign.name}?",
                    consequences=[
                        f"{unfinished} unfinished source(s) of theirs go back to the pool and are handed to the "
                        "other annotators (their drafts of them are dropped).",
                        "What they submitted stays in the campaign's results.",
                        f"{user.username} can no longer take or submit sources of this campaign; adding them again "
                        "gives them new work.",
                    ],
                    button=f"Remove {user.username}", cancel=_dashboard_url(campaign, "people-title"),
                ))
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
        form = InviteForm(request.POST)
        form.fail(error)
        return dashboard_page(request, campaign, failed=form)
    else:
        url = request.build_absolute_uri(reverse("frontend:invite", kwargs={"token": invite.token}))
        messages.success(request, f"Invite link: {url}")
    return _back(campaign)


@require_POST
@researcher_required
def campaign_account_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST username (and optional email): a new annotator account on the campaign, and the link (shown once,
    in this answer's message) with which its owner sets a password."""
    campaign = _managed(request, slug)
    try:
        user = annotator_account_create(campaign=campaign, by=request_user(request),
                                        username=request.POST.get("username", "").strip(),
                                        email=request.POST.get("email", "").strip())
    except ServiceError as error:
        form = AccountForm(request.POST)
        form.fail(error)
        return dashboard_page(request, campaign, failed=form, status=error.status)
    else:
        uid, token = account_password_token(user)
        url = request.build_absolute_uri(reverse("frontend:set-password", kwargs={"uid": uid, "token": token}))
        messages.success(request, f"Account {user.username} made and added to the campaign. Give them this link to "
                                  f"set their password (shown this once; it works once, for "
                                  f"{duration_words(settings.PASSWORD_RESET_TIMEOUT)}): {url}")
    return _back(campaign)


@require_http_methods(["GET", "POST"])
@address_throttled("auth", what="password settings from this address")
def set_password_view(request: HttpRequest, uid: str, token: str) -> HttpResponse:
    """The link a researcher handed over with a new account: choose a password (once), then sign in."""
    try:
        user = account_password_user(uid=uid, token=token)
    except NotFound as missing:
        raise Http404(missing.message) from None
    form = SetPasswordForm(user, request.POST if request.method == "POST" else None)  # an empty POST is bound
    if request.method == "POST" and form.is_valid():
        form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, "Your password is set.")
        return redirect("frontend:home")
    return render(request, "frontend/set_password.html", {"form": form, "person": user},
                  status=400 if form.errors else 200)


@require_POST
@researcher_required
def campaign_crowd_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST action=open|close the crowd link; action=places|completion_url|timeout|batch set the study's places,
    the platform's completion URL, the time after which idle work goes back to the pool, the batch per worker."""
    campaign = _managed(request, slug)
    action = request.POST.get("action")
    forms_by_action: dict[str, type[DashboardForm]] = {
        "places": CrowdPlacesForm, "completion_url": CompletionUrlForm, "timeout": TimeoutForm, "batch": BatchForm,
    }
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
        elif action == "completion_url":
            url = request.POST.get("crowd_completion_url", "").strip()
            campaign_update(campaign=campaign, crowd_completion_url=url)
            messages.success(request, f"Completion URL: {url}" if url else "No completion URL: workers copy the code.")
        elif action == "timeout":
            minutes = whole_number(request.POST.get("idle_release_minutes", ""), field="idle_release_minutes")
            campaign_update(campaign=campaign, idle_release_minutes=minutes)
            messages.success(request, f"Unfinished work idle for {minutes} minute(s) goes back to the pool."
                             if minutes else "Unfinished work never goes back to the pool by itself.")
        elif action == "batch":
            batch_size = whole_number(request.POST.get("batch_size", ""), field="batch_size")
            campaign_update(campaign=campaign, batch_size=batch_size)
            messages.success(request, f"Batch per annotator: {batch_size or 'no limit'}.")
        else:
            raise ServiceError("action must be open, close, places, completion_url, timeout or batch", field="action")
    except ServiceError as error:
        if action in forms_by_action:
            form = forms_by_action[action](request.POST)
            form.fail(error)
            return dashboard_page(request, campaign, failed=form)
        return dashboard_page(request, campaign, failure=error, form_id="crowd-link-form")
    return _back(campaign)


@require_POST
@researcher_required
def campaign_allocation_setting_view(request: HttpRequest, slug: str) -> HttpResponse:
    """POST allocation (uniform or adaptive): the dashboard's allocation card, the order the campaign's sources
    are handed out in (``annotation.services.allocation``); a bad value comes back next to the field."""
    campaign = _managed(request, slug)
    try:
        campaign_allocation_set(campaign=campaign, allocation=request.POST.get("allocation", "").strip())
    except ServiceError as error:
        form = AllocationForm(request.POST)
        form.fail(error)
        return dashboard_page(request, campaign, failed=form, status=error.status)
    messages.success(request, f"Allocation: {campaign.get_allocation_display()}.")
    return redirect(_dashboard_url(campaign, "allocation-title"))


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
        return render(request, "frontend/crowd_error.html", {
            "error": error, "full": True, "platform": CrowdWorker.Platform(visit.platform).label}, status=409)
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


COMPLETION_REDIRECT_SECONDS = 10  # the visible countdown before a finished worker goes back to the platform


@login_required
@require_GET
def completion_view(request: HttpRequest, slug: str) -> HttpResponse:
    """The end of a crowd worker's batch: the completion code to paste back into the platform, or (excluded,
    as the researcher chose) a page saying their submission was excluded."""
    user = request_user(request)
    campaign = campaign_get_visible(user=user, slug=slug, purpose=CampaignPurpose.ANNOTATE)
    end = crowd_end(campaign=campaign, annotator=user)
    code = campaign.completion_code if end is CrowdEnd.CODE else None
    return render(request, "frontend/crowd_done.html", {
        "campaign": campaign, "code": code,
        "completion_url": completion_url_for(campaign.crowd_completion_url, code)
        if code and campaign.crowd_completion_url else None,
        "redirect_seconds": COMPLETION_REDIRECT_SECONDS,
        "excluded": end is CrowdEnd.EXCLUDED, "lapsed": end is CrowdEnd.LAPSED,
        "personal_link": crowd_personal_link(request, campaign, user),
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
            form = QualitySetupForm(request.POST)
            try:
                done = campaign_quality_setup(campaign=campaign,
                                              attention_rate=request.POST.get("attention_rate", "").strip() or "0",
                                              repeat_share=request.POST.get("repeat_share", "").strip() or "0")
            except ServiceError as error:
                form.fail(error)
                return dashboard_page(request, campaign, failed=form)
            messages.success(request, f"Attention items added to {done.attention_sources} source(s); "
                                      f"{done.repeats} source(s) repeated.")
        elif action in ("exclude", "include"):
            annotator = User.objects.filter(pseudonym=request.POST.get("pseudonym", "")).first()
            if annotator is None:
                raise ServiceError("unknown annotator", field="pseudonym")
            if action == "exclude" and not confirmed(request):
                return _exclude_confirmation(request, campaign, annotator)
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
    return redirect(_dashboard_url(campaign, "quality-title"))


def _exclude_confirmation(request: HttpRequest, campaign: Campaign, annotator: User) -> HttpResponse:
    unfinished = annotator_unfinished_count(campaign=campaign, annotator=annotator)
    end = dict(AnnotatorExclusion.CrowdEnd.choices).get(request.POST.get("crowd_end", ""),
                                                       AnnotatorExclusion.CrowdEnd.EXCLUDED.label)
    reason = request.POST.get("reason", "").strip()
    return confirm_page(request, Confirmation(
        title=f"Exclude {annotator.pseudonym} from {campaign.name}?",
        consequences=[
            "Their ratings leave the leaderboard, α and the exports (you can include them again later)."
            + (f" Flagged for: {reason}." if reason else ""),
            f"Their work ends at once: {unfinished} unfinished source(s) go back to the pool.",
            f"If they came through the crowd link, at the end they see {end}.",
        ],
        button=f"Exclude {annotator.pseudonym}", cancel=_dashboard_url(campaign, "quality-title"),
    ))
