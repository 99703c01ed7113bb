"""Distributing sources to annotators.

Each non-tutorial source has `ratings_per_output` slots. Adding annotators distributes the free
slots so that every source gets its wanted number of annotators, the load is balanced and nobody
gets a source twice. Slots are taken under row locks (SELECT ... FOR UPDATE SKIP LOCKED on
PostgreSQL), so two annotators asking for work at the same moment never take the same slot.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, Q, QuerySet
from django.utils import timezone

from annotation.models import Assignment, Campaign, CampaignAnnotator, Slot, Source, User
from annotation.selectors import (
    EXCLUDED_MESSAGE,
    CampaignPurpose,
    UserShape,
    annotator_excluded_exists,
    campaign_visible_exists,
    excluded_annotators,
    user_of_shape,
    user_shape,
)
from annotation.services.allocation import allocation_check, campaign_allocation_refresh, slots_free
from annotation.services.tutorials import annotator_must_pass_tutorial
from core.errors import NotAllowed, ServiceError
from core.planner import analyze_after_bulk_write
from core.prepared import PreparedQuery

LIVE = ~Q(status=Assignment.Status.RELEASED)
UNFINISHED = (Assignment.Status.ASSIGNED, Assignment.Status.IN_PROGRESS)


def campaign_ensure_slots(*, campaign: Campaign, source_ids: Sequence[int] | None = None,
                          statistics: bool = True) -> int:
    """Create the missing slots of every non-tutorial source (of those in `source_ids` where given); returns
    how many were created. `statistics=False`: the caller refreshes the planner's statistics itself, once
    after many calls (an import's steps), and an adaptive campaign's allocation keys with them."""
    wanted = campaign.ratings_per_output
    sources = Source.objects.filter(campaign=campaign, is_tutorial=False)
    if source_ids is not None:
        sources = sources.filter(pk__in=source_ids)
    have = (
        sources
        .annotate(n=Count("slots"))
        .values_list("id", "order", "n")
    )
    new = [
        Slot(source_id=source_id, campaign=campaign, position=order, index=i)
        for source_id, order, n in have
        for i in range(n, wanted)
    ]
    Slot.objects.bulk_create(new, batch_size=2000)
    if statistics:
        analyze_after_bulk_write(Slot, len(new))
        if new and campaign.allocation == Campaign.Allocation.ADAPTIVE:
            campaign_allocation_refresh(campaign=campaign)
    return len(new)


def campaign_missing_slots(*, campaign: Campaign) -> bool:
    """Whether a non-tutorial source has fewer slots than the campaign wants (``campaign_ensure_slots``
    would make some); read only."""
    return (Source.objects.filter(campaign=campaign, is_tutorial=False)
            .annotate(n=Count("slots")).filter(n__lt=campaign.ratings_per_output).exists())


def _free_slots(campaign: Campaign) -> QuerySet[Slot]:
    """The campaign's free slots in the order work is handed out: by allocation key (highest first; 0
    throughout a uniform campaign), then source order, then slot (read from the partial index
    ``slot_free_in_order``; ``annotation.services.allocation`` keeps the keys)."""
    return Slot.objects.filter(campaign=campaign, assignment__isnull=True).order_by(
        "-allocation_key", "position", "source_id", "index")


def _new_assignment(campaign: Campaign, slot: Slot, annotator: User) -> Assignment:
    assignment = Assignment.objects.create(
        campaign=campaign, source_id=slot.source_id, annotator=annotator,
        shuffle_seed=random.SystemRandom().randrange(2**31),
    )
    slot.assignment = assignment
    slot.save(update_fields=["assignment"])
    return assignment


@transaction.atomic
def campaign_distribute(*, campaign: Campaign, only: Sequence[User] | None = None) -> list[Assignment]:
    """Give every free slot to the least-loaded active annotator who does not have that source yet (never to
    an excluded one); with ``only``, to those of ``only`` alone (a crowd worker let in for the free work).

    An adaptive campaign deals nothing to its members: its free slots stay in the pool and ``next`` hands them
    out one screen at a time in the policy's order. Dealt out in advance, each member would hold every source
    and work through them in source order, as under uniform allocation. A crowd worker's batch (``only``) is
    still dealt, in the policy's order."""
    campaign_release_idle(campaign=campaign)
    if only is None and campaign.allocation == Campaign.Allocation.ADAPTIVE:
        return []
    members = User.objects.filter(memberships__campaign=campaign, memberships__active=True)
    if only is not None:
        members = members.filter(pk__in=[user.pk for user in only])
    annotators = list(members.exclude(pk__in=excluded_annotators(campaign_id=campaign.pk)).order_by("id"))
    if not annotators:
        return []
    free = list(_free_slots(campaign).select_for_update())
    load = Counter(
        dict(
            Assignment.objects.filter(LIVE, campaign=campaign)
            .values_list("annotator_id")
            .annotate(n=Count("id"))
            .values_list("annotator_id", "n")
        )
    )
    # A source released from someone (removed or idle) is not pushed back to them; they may still
    # take it again themselves through assignment_claim_next.
    has: set[tuple[int, int]] = set(
        Assignment.objects.filter(campaign=campaign).values_list("annotator_id", "source_id")
    )
    created: list[Assignment] = []
    for slot in free:
        candidates = [
            a for a in annotators
            if (a.pk, slot.source_id) not in has and not _batch_full(campaign, load[a.pk])
        ]
        if not candidates:
            continue
        chosen = min(candidates, key=lambda a: (load[a.pk], a.pk))
        created.append(_new_assignment(campaign, slot, chosen))
        load[chosen.pk] += 1
        has.add((chosen.pk, slot.source_id))
    return created


def _batch_full(campaign: Campaign, load: int) -> bool:
    """The campaign's fixed batch per annotator (``batch_size``) is reached."""
    return campaign.batch_size is not None and load >= campaign.batch_size


MAX_USERNAMES = 500
"""At most this many usernames in one request to add annotators."""


def annotators_by_username(names: Sequence[str], *, field: str = "usernames") -> list[User]:
    """The annotator accounts named, for adding them to a campaign (API, dashboard, import form).

    A name that is no account and a name whose account is no annotator get the same answer, without the
    role: a researcher learns which names can be added, never whether a username exists or what it is.

    Raises:
        ServiceError: on ``field``: no name, too many, or names that cannot be added.
    """
    wanted = list(dict.fromkeys(n for n in names if n))
    if not wanted:
        raise ServiceError("give at least one username", field=field)
    if len(wanted) > MAX_USERNAMES:
        raise ServiceError(f"at most {MAX_USERNAMES} usernames at a time (got {len(wanted)})", field=field)
    users = list(User.objects.filter(username__in=wanted, role=User.Role.ANNOTATOR))
    found = {u.username for u in users}
    refused = [n for n in wanted if n not in found]
    if refused:
        shown = ", ".join(n if len(n) <= 40 else n[:40] + "…" for n in refused[:20])
        raise ServiceError(f"no annotator with the username(s) {shown} can be added", field=field)
    return users


def campaign_annotator_by_username(*, campaign: Campaign, username: str, field: str = "username") -> User:
    """The active annotator of ``campaign`` named ``username``; the same answer for a username that is no
    account and for one that is not an active annotator here (remove, reassign)."""
    membership = (
        CampaignAnnotator.objects.select_related("annotator")
        .filter(campaign=campaign, annotator__username=username, active=True)
        .first()
    )
    if membership is None:
        shown = username if len(username) <= 40 else username[:40] + "…"
        raise ServiceError(f"{shown} is not an active annotator of this campaign", field=field)
    return membership.annotator


@transaction.atomic
def campaign_add_annotators(*, campaign: Campaign, annotators: Iterable[User], only_them: bool = False
                            ) -> list[Assignment]:
    """Make the annotators active members and distribute the free slots: among every active annotator, or
    with ``only_them`` among the annotators added alone (a crowd worker is let in because there is free
    work, so that work must go to them, not to a member who was waiting)."""
    annotators = list(annotators)
    for user in annotators:
        if user.role != User.Role.ANNOTATOR:
            raise ServiceError(f"{user.username} is not an annotator", field="annotators")
        membership, created = CampaignAnnotator.objects.get_or_create(campaign=campaign, annotator=user)
        if not created and not membership.active:
            membership.active = True
            membership.removed_at = None
            membership.save(update_fields=["active", "removed_at"])
    campaign_ensure_slots(campaign=campaign)
    return campaign_distribute(campaign=campaign, only=annotators if only_them else None)


def _release(assignments: Iterable[Assignment]) -> int:
    count = 0
    now = timezone.now()
    for assignment in assignments:
        slots_free([assignment])
        assignment.status = Assignment.Status.RELEASED
        assignment.released_at = now
        assignment.save(update_fields=["status", "released_at"])
        assignment.annotations.filter(status="draft").update(status="superseded")
        count += 1
    return count


def annotator_unfinished_count(*, campaign: Campaign, annotator: User) -> int:
    """How many sources ``annotator_release_unfinished`` would put back into the pool now (what a page asks
    the researcher to confirm before removing or excluding the annotator)."""
    return Assignment.objects.filter(campaign=campaign, annotator=annotator, status__in=UNFINISHED).count()


def annotator_release_unfinished(*, campaign: Campaign, annotator: User) -> int:
    """Put the annotator's unfinished sources of the campaign back into the pool (drafts are dropped) and
    hand them to the other annotators; how many were released. Inside the caller's transaction."""
    # only the assignments' rows, in key order: the model's default ordering joins (and would lock) the
    # campaign's and the sources' rows, so a removal would wait for an open allocation switch
    unfinished = Assignment.objects.select_for_update(of=("self",)).filter(
        campaign=campaign, annotator=annotator, status__in=UNFINISHED
    ).order_by("pk")
    released = _release(list(unfinished))
    campaign_distribute(campaign=campaign)
    return released


@transaction.atomic
def campaign_remove_annotator(*, campaign: Campaign, annotator: User) -> int:
    """Deactivate the annotator; their unfinished sources go back into the pool and are redistributed."""
    updated = CampaignAnnotator.objects.filter(campaign=campaign, annotator=annotator, active=True).update(
        active=False, removed_at=timezone.now()
    )
    if not updated:
        raise ServiceError(f"{annotator.username} is not an active annotator of this campaign")
    return annotator_release_unfinished(campaign=campaign, annotator=annotator)


def idle_assignments(*, campaign: Campaign) -> QuerySet[Assignment]:
    """The unfinished assignments idle for longer than the campaign's limit (none without one): those
    ``campaign_release_idle`` releases."""
    if not campaign.idle_release_minutes:
        return Assignment.objects.none()
    return _idle(campaign, timezone.now() - timedelta(minutes=campaign.idle_release_minutes))


def campaign_release_idle(*, campaign: Campaign) -> int:
    """Release unfinished assignments idle for longer than the campaign's limit."""
    if not campaign.idle_release_minutes:
        return 0
    with transaction.atomic():
        return _release(list(idle_assignments(campaign=campaign).select_for_update(skip_locked=True)))


def _idle(campaign: Campaign, cutoff: datetime) -> QuerySet[Assignment]:
    """The campaign's unfinished assignments with no activity since ``cutoff``, oldest first; read through
    ``assignment_campaign_status``, so finished work costs the search nothing, and without the default
    ordering's joins, which would also lock the campaign's and the sources' rows."""
    return Assignment.objects.filter(
        Q(last_activity_at__lt=cutoff) | Q(last_activity_at__isnull=True, assigned_at__lt=cutoff),
        campaign=campaign, status__in=UNFINISHED,
    ).order_by("pk")


def _annotator_lock(shape: UserShape, *, user_id: int, campaign_id: int) -> QuerySet[Any, Any]:
    """Locks the annotator's row and reads whether they are an active annotator of the campaign (the
    ANNOTATE rule of `campaign_list_visible`), whether they are excluded from it and whether the campaign has
    tutorials."""
    return (
        User.objects.select_for_update(of=("self",)).filter(pk=user_id)
        .annotate(
            annotating=campaign_visible_exists(user=user_of_shape(shape, user_id), purpose=CampaignPurpose.ANNOTATE,
                                               campaign=campaign_id),
            excluded=annotator_excluded_exists(annotator_id=user_id, campaign_id=campaign_id),
            has_tutorials=Exists(Source.objects.filter(campaign_id=campaign_id, is_tutorial=True)),
        )
        .values("annotating", "excluded", "has_tutorials")[:1]
    )


def _current_assignment(*, campaign_id: int, annotator_id: int) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(campaign_id=campaign_id, annotator_id=annotator_id, status__in=UNFINISHED)
        .order_by("source__order", "id")[:1]
    )


def _first_free_slot(*, campaign_id: int, annotator_id: int) -> QuerySet[Slot]:
    """The first free slot that is not locked by another claim and is not of a source the annotator has:
    one walk of the index, which passes over this annotator's own sources only."""
    mine = Assignment.objects.filter(LIVE, campaign_id=campaign_id, annotator_id=annotator_id).values("source_id")
    return _free_slots(Campaign(pk=campaign_id)).select_for_update(skip_locked=True).exclude(source_id__in=mine)[:1]


# A claim's reads, compiled once per process (core.prepared): building and compiling them cost more CPU
# than running them.
_ANNOTATOR_LOCK = PreparedQuery(_annotator_lock)
_CURRENT_ASSIGNMENT = PreparedQuery(_current_assignment)
_FIRST_FREE_SLOT = PreparedQuery(_first_free_slot)


@transaction.atomic
def assignment_claim_next(*, campaign: Campaign, annotator: User) -> Assignment | None:
    """The annotator's next unfinished assignment, or a free slot taken from the pool under a row lock.

    The annotator's own row is locked first, so the same person asking twice at once (a double click,
    two tabs) is served one call after the other: the second sees the assignment the first created.
    """
    locked: list[Any] = _ANNOTATOR_LOCK.run(user_shape(annotator), user_id=annotator.pk, campaign_id=campaign.pk)
    if not locked or not locked[0]["annotating"]:
        raise ServiceError("you are not an annotator of this campaign")
    if locked[0]["excluded"]:
        raise NotAllowed(EXCLUDED_MESSAGE, field="exclusion")
    if locked[0]["has_tutorials"]:
        annotator_must_pass_tutorial(campaign=campaign, annotator=annotator)
    current = _CURRENT_ASSIGNMENT.run(campaign_id=campaign.pk, annotator_id=annotator.pk)
    if current:
        return current[0]
    campaign_release_idle(campaign=campaign)
    if campaign.batch_size is not None:  # counted only where capped
        mine = Assignment.objects.filter(LIVE, campaign=campaign, annotator=annotator)
        if _batch_full(campaign, mine.count()):
            return None
    slot = _FIRST_FREE_SLOT.run(campaign_id=campaign.pk, annotator_id=annotator.pk)
    if not slot:
        return None
    return _new_assignment(campaign, slot[0], annotator)


# --- The allocation setting: how free slots are handed out ----------------------------------------------

@transaction.atomic
def campaign_allocation_set(*, campaign: Campaign, allocation: object) -> Campaign:
    """Set how the campaign hands out its free slots (the dashboard, the API and the admin all come here).
    Switching to adaptive computes the source priorities from the stored metric scores now and puts the
    sources dealt to members but never opened back into the pool (``next`` hands them out in the policy's
    order; ``campaign_distribute`` deals nothing to an adaptive campaign's members); switching back to uniform
    puts every free slot back into source order and deals them to the members again.

    Raises:
        ServiceError: ``allocation`` is neither ``uniform`` nor ``adaptive`` (400, field ``allocation``).
    """
    value = allocation_check(allocation)
    changed = value != campaign.allocation
    campaign.allocation = value
    Campaign.objects.filter(pk=campaign.pk).update(allocation=value)
    if changed:
        if value == Campaign.Allocation.ADAPTIVE:
            _undeal_unopened(campaign)
        campaign_allocation_refresh(campaign=campaign)
        if value != Campaign.Allocation.ADAPTIVE:
            campaign_distribute(campaign=campaign)
    return campaign


def _undeal_unopened(campaign: Campaign) -> int:
    """Put the campaign's assignments that were dealt but never opened (no annotation, not started) back into
    the pool, so that ``next`` hands their sources out by the policy; how many."""
    unopened = list(Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.ASSIGNED, started_at__isnull=True, annotations__isnull=True,
    ).values_list("pk", flat=True))
    Slot.objects.filter(assignment_id__in=unopened).update(assignment=None)
    Assignment.objects.filter(pk__in=unopened).delete()
    return len(unopened)
