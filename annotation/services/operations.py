"""Running a study from the web: invite links, crowd-platform links, batches and reassigning a source.

Every interface (research pages, REST API, commands) calls these functions; the rules live here once.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.models import Assignment, Campaign, CampaignInvite, CrowdWorker, Slot, User
from annotation.services.assignments import UNFINISHED, _new_assignment, _release, campaign_add_annotators
from core.errors import Conflict, NotFound, ServiceError

USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
PLATFORM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


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


@transaction.atomic
def invite_accept(*, token: str, username: str, password: str, email: str = "") -> User:
    """Create an annotator account from an invite link and add it to the invite's campaign."""
    invite = invite_get_open(token=token)
    CampaignInvite.objects.select_for_update().filter(pk=invite.pk).first()
    if not USERNAME.match(username):
        raise ServiceError("a username has 1-150 letters, digits and @ . + - _", field="username")
    if User.objects.filter(username__iexact=username).exists():
        raise Conflict(f"the username {username!r} is taken", field="username")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise ServiceError("this is not an e-mail address", field="email") from None
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


@transaction.atomic
def crowd_enter(*, slug: str, token: str, visit: CrowdVisit) -> User:
    """The passwordless account of a crowd worker on the campaign: created on the first visit, resumed after."""
    campaign = Campaign.objects.filter(slug=slug).exclude(crowd_token="").first()
    if campaign is None or not secrets.compare_digest(campaign.crowd_token, token):
        raise NotFound("this crowd link is not valid (any more)")
    worker = CrowdWorker.objects.select_related("user").filter(
        campaign=campaign, platform=visit.platform, worker_id=visit.worker_id
    ).first()
    if worker is None:
        user = User(username=f"{visit.platform}-{campaign.pk}-{visit.worker_id}", role=User.Role.ANNOTATOR)
        user.set_unusable_password()
        try:
            with transaction.atomic():
                user.save()
                worker = CrowdWorker.objects.create(
                    platform=visit.platform, worker_id=visit.worker_id, user=user, campaign=campaign,
                    study_id=visit.study_id, session_id=visit.session_id,
                )
        except IntegrityError:  # the same worker opened the link twice at once
            worker = CrowdWorker.objects.select_related("user").get(
                campaign=campaign, platform=visit.platform, worker_id=visit.worker_id
            )
        campaign_add_annotators(campaign=campaign, annotators=[worker.user])
    else:
        CrowdWorker.objects.filter(pk=worker.pk).update(study_id=visit.study_id, session_id=visit.session_id)
    return worker.user


def crowd_completion_code(*, campaign: Campaign, annotator: User) -> str | None:
    """The code a crowd worker pastes back into the platform, once they have nothing left to do."""
    if not campaign.completion_code or not CrowdWorker.objects.filter(campaign=campaign, user=annotator).exists():
        return None
    mine = Assignment.objects.filter(campaign=campaign, annotator=annotator)
    if not mine.filter(status=Assignment.Status.SUBMITTED).exists() or mine.filter(status__in=UNFINISHED).exists():
        return None
    return campaign.completion_code


# --- Reassigning a source ---------------------------------------------------------------------------


@transaction.atomic
def assignment_reassign(*, assignment: Assignment, to: User) -> Assignment:
    """Move an unfinished assignment's slot to another annotator of the campaign (drafts are dropped)."""
    assignment = Assignment.objects.select_for_update().select_related("campaign").get(pk=assignment.pk)
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
