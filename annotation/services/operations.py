"""Running a study from the web: invite links, crowd-platform links, batches and reassigning a source.

Every interface (research pages, REST API, commands) calls these functions; the rules live here once.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Count, Exists, F, Max, Min, OuterRef
from django.utils import timezone
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from annotation.models import (
    AnnotatorExclusion,
    Assignment,
    Campaign,
    CampaignInvite,
    CrowdTurnedAway,
    CrowdWorker,
    Slot,
    User,
)
from annotation.rules import is_crowd_username
from annotation.selectors import excluded_annotators
from annotation.services.assignments import (
    UNFINISHED,
    _new_assignment,
    _release,
    campaign_add_annotators,
    campaign_ensure_slots,
    campaign_missing_slots,
    campaign_release_idle,
    idle_assignments,
)
from core.errors import Conflict, NotAllowed, NotFound, ServiceError
from core.throttle import throttle_check

USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
PLATFORM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class StudyFull(Conflict):
    """A crowd link's study has no free place (409)."""


# --- Invite links ---------------------------------------------------------------------------------


MAX_INVITE_USES = 100_000  # people one link admits at most (empty: any number)


def invite_create(*, campaign: Campaign, by: User, max_uses: int | None = None) -> CampaignInvite:
    if max_uses is not None and not 1 <= max_uses <= MAX_INVITE_USES:
        raise ServiceError(f"max_uses must be from 1 to {MAX_INVITE_USES:,} (or empty for any number)",
                           field="max_uses")
    return CampaignInvite.objects.create(campaign=campaign, created_by=by, max_uses=max_uses)


def invite_get_open(*, token: str) -> CampaignInvite:
    """The invite behind a link, while it still admits people (404 otherwise)."""
    invite = CampaignInvite.objects.select_related("campaign").filter(token=token, active=True).first()
    if invite is None or (invite.max_uses is not None and invite.uses >= invite.max_uses):
        raise NotFound("this invite link is not valid (any more)")
    return invite


def _new_account_check(*, username: str, email: str) -> None:
    """The rules of a new annotator account's username and e-mail (invite sign-ups, accounts researchers make)."""
    if not USERNAME.match(username):
        raise ServiceError("a username has 1-150 letters, digits and @ . + - _", field="username")
    if is_crowd_username(username):
        raise ServiceError("usernames starting with a crowd platform's name and a hyphen (prolific-, mturk-) are "
                           "kept for crowd workers' accounts", field="username")
    if User.objects.filter(username__iexact=username).exists():
        raise Conflict(f"the username {username!r} is taken", field="username")
    if email:
        longest = User._meta.get_field("email").max_length or 254
        if len(email) > longest:
            raise ServiceError(f"an e-mail address has at most {longest} characters", field="email")
        try:
            validate_email(email)
        except ValidationError:
            raise ServiceError("this is not an e-mail address", field="email") from None


@transaction.atomic
def annotator_account_create(*, campaign: Campaign, by: User, username: str, email: str = "") -> User:
    """An annotator account a researcher makes for someone, added to ``campaign``. It has no password: the
    researcher hands the person the link of `account_password_token`, which sets one once.

    Counts against the researcher's ``accounts`` rate (core.throttle, THROTTLE_ACCOUNTS; 429 past it).
    """
    if not by.is_researcher:
        raise NotAllowed("only researchers and admins make accounts")
    throttle_check("accounts", str(by.pk), what="annotator accounts made", field="username")
    _new_account_check(username=username, email=email)
    user = User(username=username, email=email, role=User.Role.ANNOTATOR)
    user.set_unusable_password()
    user.save()
    campaign_add_annotators(campaign=campaign, annotators=[user])
    return user


def account_password_token(user: User) -> tuple[str, str]:
    """The (uid, token) of the link that lets ``user`` set their password: it works once (setting the password
    changes what the token was made of) and for PASSWORD_RESET_TIMEOUT seconds."""
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


def account_password_user(*, uid: str, token: str) -> User:
    """The user a set-password link is for; 404 once it was used or has expired."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uid)))
    except (ValueError, TypeError, OverflowError):
        pk = None
    user = User.objects.filter(pk=pk, is_active=True).first() if pk is not None else None
    if user is None or not default_token_generator.check_token(user, token):
        raise NotFound("this link to set a password is not valid (any more): ask your researcher for a new one")
    return user


@transaction.atomic
def invite_accept(*, token: str, username: str, password: str, email: str = "") -> User:
    """Create an annotator account from an invite link and add it to the invite's campaign."""
    invite = invite_get_open(token=token)
    CampaignInvite.objects.select_for_update().filter(pk=invite.pk).first()
    _new_account_check(username=username, email=email)
    user = User(username=username, email=email, role=User.Role.ANNOTATOR)
    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ServiceError(" ".join(error.messages), field="password") from None
    user.set_password(password)
    user.save()
    CampaignInvite.objects.filter(pk=invite.pk).update(uses=F("uses") + 1)
    campaign_add_annotators(campaign=invite.campaign, annotators=[user])
    return user


# --- Crowd platforms -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CrowdVisit:
    platform: str
    worker_id: str
    study_id: str = ""
    session_id: str = ""


def crowd_visit_from_query(query: Mapping[str, str]) -> CrowdVisit:
    """Read a platform's worker id from a link's query: Prolific (PROLIFIC_PID, STUDY_ID, SESSION_ID) or
    Mechanical Turk (workerId, assignmentId)."""
    if query.get("PROLIFIC_PID"):
        visit = CrowdVisit(CrowdWorker.Platform.PROLIFIC, query["PROLIFIC_PID"], query.get("STUDY_ID", ""),
                           query.get("SESSION_ID", ""))
    elif query.get("workerId"):
        visit = CrowdVisit(CrowdWorker.Platform.MTURK, query["workerId"], "", query.get("assignmentId", ""))
    else:
        raise ServiceError("the link carries no worker id (PROLIFIC_PID or workerId)", field="PROLIFIC_PID")
    for name, value in (("worker id", visit.worker_id), ("study id", visit.study_id),
                        ("session id", visit.session_id)):
        if value and not PLATFORM_ID.match(value):
            raise ServiceError(f"the {name} may hold 1-64 letters, digits, - and _", field=name)
    return visit


def crowd_open(*, campaign: Campaign) -> Campaign:
    """Give the campaign a crowd link token and a completion code (kept when it has them)."""
    fields = []
    if not campaign.crowd_token:
        campaign.crowd_token = secrets.token_urlsafe(16)
        fields.append("crowd_token")
    if not campaign.completion_code:
        campaign.completion_code = secrets.token_hex(4).upper()
        fields.append("completion_code")
    if fields:
        campaign.save(update_fields=fields)
    return campaign


def crowd_close(*, campaign: Campaign) -> None:
    Campaign.objects.filter(pk=campaign.pk).update(crowd_token="")
    campaign.crowd_token = ""


class CrowdRoom(StrEnum):
    """Whether a new crowd worker can get work on the campaign now, and if not, why."""

    OPEN = "open"
    CLOSED = "closed"
    """The crowd link is closed."""
    PLACES_FULL = "places_full"
    """Every place (``crowd_places``) is held."""
    NO_WORK = "no_work"
    """Every wanted rating is assigned or done: a new worker would get nothing to annotate."""


def crowd_places_held(*, campaign: Campaign, once_idle_released: bool = False) -> int:
    """The places held on the campaign: its crowd workers who are active, not excluded annotators and hold
    work, unfinished or submitted. A worker who returned the study or timed out on the platform gives their
    place back once their unfinished work is released (``idle_release_minutes``), as the platform gives the
    place to someone else; one who submitted part of their batch keeps it (``crowd_end`` gives them the
    code). ``once_idle_released``: as it will be once idle work is released, read without releasing it."""
    live = Assignment.objects.filter(campaign=campaign, annotator=OuterRef("user")).exclude(
        status=Assignment.Status.RELEASED)
    if once_idle_released:
        live = live.exclude(pk__in=idle_assignments(campaign=campaign).values("pk"))
    return (
        CrowdWorker.objects.filter(campaign=campaign, user__memberships__campaign=campaign,
                                   user__memberships__active=True)
        .exclude(user__in=excluded_annotators(campaign_id=campaign.pk))
        .filter(Exists(live)).count()
    )


def crowd_room(*, campaign: Campaign, settle: bool = False) -> CrowdRoom:
    """Whether a new crowd worker can get work now: a place left (``crowd_places_held`` below
    ``crowd_places``) and a free slot, counting idle work about to go back to the pool and slots not made
    yet (sources imported since). The one rule of the crowd link, its 409 page, the API and the researcher's
    warning.

    By default it only reads (the dashboard's and the API's GETs): idle work and missing slots are counted,
    not released or made. ``settle=True`` (the link's entry, whose caller holds the campaign's row lock)
    makes the missing slots and releases idle work before saying there is none, so the worker let in gets
    it."""
    if not campaign.crowd_token:
        return CrowdRoom.CLOSED
    free = Slot.objects.filter(campaign=campaign, assignment__isnull=True)
    if not settle:
        if not (free.exists() or campaign_missing_slots(campaign=campaign)
                or idle_assignments(campaign=campaign).exists()):
            return CrowdRoom.NO_WORK
        if campaign.crowd_places is not None and crowd_places_held(
                campaign=campaign, once_idle_released=True) >= campaign.crowd_places:
            return CrowdRoom.PLACES_FULL
        return CrowdRoom.OPEN
    released = False
    if not free.exists():
        campaign_ensure_slots(campaign=campaign)
        campaign_release_idle(campaign=campaign)
        released = True
        if not free.exists():
            return CrowdRoom.NO_WORK
    if campaign.crowd_places is not None and crowd_places_held(campaign=campaign) >= campaign.crowd_places:
        if released or not campaign_release_idle(campaign=campaign):  # a timed-out worker's place comes back
            return CrowdRoom.PLACES_FULL
        if crowd_places_held(campaign=campaign) >= campaign.crowd_places:
            return CrowdRoom.PLACES_FULL
    return CrowdRoom.OPEN


CROWD_REFUSED = {
    CrowdRoom.NO_WORK: "there is nothing left to annotate in this study: every sentence is already taken by "
                       "other participants.",
    CrowdRoom.PLACES_FULL: "this study is full: every place is taken by other participants.",
}


def _crowd_username(visit: CrowdVisit, campaign: Campaign) -> str:
    """The account's name, in the crowd namespace (``annotation.rules.is_crowd_username``). A name taken
    before that namespace was kept (an account registered by hand) gets a random ending instead."""
    name = f"{visit.platform}-{campaign.pk}-{visit.worker_id}"
    while User.objects.filter(username__iexact=name).exists():
        name = f"{visit.platform}-{campaign.pk}-{visit.worker_id}-{secrets.token_hex(4)}"
    return name


@dataclass(frozen=True)
class CrowdEntry:
    """A crowd worker let in: their account and their key (the browser's cookie, their personal link)."""

    user: User
    key: str
    created: bool


CROWD_BOUND_ELSEWHERE = (
    "this worker id has already started the study in another browser. Go back to the browser where you "
    "started, or open the personal link the study showed you there."
)


def crowd_enter(*, slug: str, token: str, visit: CrowdVisit, key: str = "", signed_in: User | None = None
                ) -> CrowdEntry:
    """The passwordless account of a crowd worker on the campaign: created on the first visit while a new
    worker can get work (``crowd_room``), and given that work at once; resumed after only by the browser it
    is bound to (``key``, from its cookie) or by the session already signed in as it. Knowing a worker's
    platform id is not enough to act as them. A newcomer turned away is recorded (``CrowdTurnedAway``) for
    the researcher's warning, and no account is made.

    Raises:
        NotFound: the link is not (any more) valid.
        NotAllowed: the worker started in another browser.
        StudyFull: nothing for a new worker (its ``field`` is the ``CrowdRoom``).
    """
    admitted = _crowd_admit(slug=slug, token=token, visit=visit, key=key, signed_in=signed_in)
    if isinstance(admitted, CrowdEntry):
        return admitted
    campaign, room = admitted
    _crowd_turn_away(campaign=campaign, visit=visit, room=room)
    raise StudyFull(CROWD_REFUSED[room], field=room.value)


@transaction.atomic
def _crowd_admit(*, slug: str, token: str, visit: CrowdVisit, key: str, signed_in: User | None
                 ) -> CrowdEntry | tuple[Campaign, CrowdRoom]:
    campaign = Campaign.objects.filter(slug=slug).exclude(crowd_token="").first()
    if campaign is None or not secrets.compare_digest(campaign.crowd_token, token):
        raise NotFound("this crowd link is not valid (any more)")
    known = CrowdWorker.objects.select_related("user").filter(
        campaign=campaign, platform=visit.platform, worker_id=visit.worker_id
    )
    worker = known.first()
    if worker is None:  # a newcomer: arrivals take places one after the other (the campaign's row lock)
        Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
        worker = known.first()
    if worker is not None:
        bound = (bool(key) and secrets.compare_digest(worker.key, key)) or (
            signed_in is not None and signed_in.pk == worker.user_id)
        if not bound:
            raise NotAllowed(CROWD_BOUND_ELSEWHERE, field="worker id")
        CrowdWorker.objects.filter(pk=worker.pk).update(study_id=visit.study_id, session_id=visit.session_id)
        return CrowdEntry(worker.user, worker.key, created=False)
    room = crowd_room(campaign=campaign, settle=True)
    if room is not CrowdRoom.OPEN:
        return campaign, room
    user = User(username=_crowd_username(visit, campaign), role=User.Role.ANNOTATOR)
    user.set_unusable_password()
    user.save()
    worker = CrowdWorker.objects.create(
        platform=visit.platform, worker_id=visit.worker_id, user=user, campaign=campaign,
        study_id=visit.study_id, session_id=visit.session_id,
    )
    campaign_add_annotators(campaign=campaign, annotators=[user], only_them=True)
    return CrowdEntry(user, worker.key, created=True)


def _crowd_turn_away(*, campaign: Campaign, visit: CrowdVisit, room: CrowdRoom) -> None:
    """Record a newcomer the link had nothing for (once per worker; later visits count and move ``last_at``)."""
    seen, created = CrowdTurnedAway.objects.get_or_create(
        campaign=campaign, platform=visit.platform, worker_id=visit.worker_id, defaults={"reason": room.value})
    if not created:
        CrowdTurnedAway.objects.filter(pk=seen.pk).update(visits=F("visits") + 1, reason=room.value,
                                                          last_at=timezone.now())


@dataclass(frozen=True)
class CrowdTurnedAwaySummary:
    workers: int
    first_at: datetime | None
    last_at: datetime | None


def crowd_turned_away_summary(*, campaign: Campaign) -> CrowdTurnedAwaySummary:
    """How many workers opened the crowd link when it had nothing for them, and when (first and latest)."""
    row = CrowdTurnedAway.objects.filter(campaign=campaign).aggregate(
        workers=Count("id"), first_at=Min("first_at"), last_at=Max("last_at"))
    return CrowdTurnedAwaySummary(row["workers"], row["first_at"], row["last_at"])


def crowd_resume(*, slug: str, key: str) -> CrowdEntry:
    """A worker's personal link: their account on the campaign, from any browser."""
    if not key or len(key) > 64:
        raise NotFound("this personal link is not valid")
    worker = CrowdWorker.objects.select_related("user").filter(campaign__slug=slug, key=key).first()
    if worker is None:
        raise NotFound("this personal link is not valid")
    return CrowdEntry(worker.user, worker.key, created=False)


def crowd_key_of(*, campaign: Campaign, annotator: User) -> str | None:
    """The crowd worker's key on the campaign (for their personal link), or None for anyone else."""
    return CrowdWorker.objects.filter(campaign=campaign, user=annotator).values_list("key", flat=True).first()


class CrowdEnd(StrEnum):
    """Where a crowd worker stands at the end of their batch."""

    NOT_CROWD = "not_crowd"
    UNFINISHED = "unfinished"
    CODE = "code"
    """Finished (or excluded with the code, the researcher's choice): the completion code."""
    EXCLUDED = "excluded"
    """Excluded, and the researcher chose that the worker sees so, without a code."""
    LAPSED = "lapsed"
    """Holding no work and having submitted none: what they held went back to the pool (the time-out)."""


def crowd_end(*, campaign: Campaign, annotator: User) -> CrowdEnd:
    """What a crowd worker is shown at the end: the one rule behind the completion page and the "continue"
    button. An excluded worker's end is the exclusion's ``crowd_end``, whatever they have done."""
    if not campaign.completion_code or not CrowdWorker.objects.filter(campaign=campaign, user=annotator).exists():
        return CrowdEnd.NOT_CROWD
    exclusion = AnnotatorExclusion.objects.filter(campaign=campaign, annotator=annotator,
                                                  reincluded_at__isnull=True).values_list("crowd_end", flat=True)
    for chosen in exclusion[:1]:
        return CrowdEnd.CODE if chosen == AnnotatorExclusion.CrowdEnd.CODE else CrowdEnd.EXCLUDED
    mine = Assignment.objects.filter(campaign=campaign, annotator=annotator)
    if mine.filter(status__in=UNFINISHED).exists():
        return CrowdEnd.UNFINISHED
    if not mine.filter(status=Assignment.Status.SUBMITTED).exists():
        return CrowdEnd.LAPSED if mine.exists() else CrowdEnd.UNFINISHED
    return CrowdEnd.CODE


# --- Reassigning a source ---------------------------------------------------------------------------


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, to: User) -> Assignment:
    """Move an unfinished assignment's slot to another annotator of the campaign (drafts are dropped)."""
    assignment = Assignment.objects.select_for_update(of=("self",)).select_related("campaign").get(pk=assignment.pk)
    if assignment.status not in UNFINISHED:
        raise ServiceError("only an unfinished assignment can be reassigned; reopen a submitted one instead",
                           field="assignment")
    campaign = assignment.campaign
    if to.pk == assignment.annotator_id:
        raise ServiceError("the source is already assigned to this annotator", field="annotator")
    if not campaign.memberships.filter(annotator=to, active=True).exists():
        raise ServiceError(f"{to.username} is not an active annotator of this campaign", field="annotator")
    if Assignment.objects.filter(source_id=assignment.source_id, annotator=to).exclude(
        status=Assignment.Status.RELEASED
    ).exists():
        raise Conflict(f"{to.username} already has this source", field="annotator")
    slot = Slot.objects.select_for_update().get(assignment=assignment)
    _release([assignment])
    slot.refresh_from_db()
    return _new_assignment(campaign, slot, to)
