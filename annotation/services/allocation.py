"""A campaign's allocation: in which order its free slots are handed out (``uniform`` or ``adaptive``).

Uniform hands out sources in their order (every slot's ``allocation_key`` is 0). Adaptive follows the policy
recommended by the allocation research (``evaluation.allocation.policies.Adaptive``): whole screens, the source
with the highest ``priority / (1 + screens of it handed out)`` next, where the priority is the spread of the
automatic metric scores of the source's outputs (``metric_variance_priority``); every source alike, so once
before any twice (round-robin), while the campaign has no metric scores. With scores a source's second screen
comes before another's first only where its priority is more than twice the other's. Showing fewer outputs
per screen measured no better, so screens are whole and blinding and each assignment's shuffled order are
the same under both.

The policy's state lives on the slots, so a claim stays one walk of the index ``slot_free_in_order``: a free
slot's key is ``priority / (1 + taken + rank)``, ``taken`` the source's slots handed out and ``rank`` the
slot's place among the source's free ones. Taking the first free slot of a source leaves every other key right
(``taken`` grows by one where ``rank`` shrinks by one), so a claim writes nothing more; a slot put back into the
pool gets ``priority / (1 + taken)``, the other keys again unchanged; :func:`campaign_allocation_refresh`
rewrites them all when the priorities change, a taken slot's to what it would get if put back, so a slot freed
between the refresh's read and its write is not pushed to the end of the queue with a stale key of 0.

The priorities come from stored metric scores, which live in an app above this one: it registers the function
that reads them (:func:`allocation_priorities_register`, from its ``AppConfig.ready``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from django.db import transaction
from django.db.models import Case, Count, Exists, F, FloatField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils.module_loading import import_string

from annotation.models import Assignment, Campaign, Slot
from core.errors import ServiceError

ADAPTIVE = Campaign.Allocation.ADAPTIVE
REFRESH_BATCH = 2000
"""Slots rewritten per statement (and per transaction, outside a caller's) when the keys are recomputed."""

PriorityProvider = Callable[[Campaign], "Mapping[int, float] | None"]
"""``provider(campaign)`` -> ``{source pk: priority}`` from the campaign's metric scores, or None without any."""

_PROVIDER: list[str] = []


def allocation_priorities_register(dotted_path: str) -> None:
    """Name the function (a :data:`PriorityProvider`) that computes an adaptive campaign's source priorities;
    it is imported on first use, so registering at start-up loads nothing."""
    _PROVIDER[:] = [dotted_path]


def campaign_source_priorities(campaign: Campaign) -> Mapping[int, float] | None:
    """The registered provider's priorities for the campaign (None: no metric scores, or none registered)."""
    if not _PROVIDER:
        return None
    provider: PriorityProvider = import_string(_PROVIDER[0])
    return provider(campaign)


def allocation_check(value: object) -> str:
    """The allocation named by ``value``; a clear 400 on ``allocation`` otherwise."""
    if value not in Campaign.Allocation.values:
        choices = " or ".join(Campaign.Allocation.values)
        raise ServiceError(f"allocation must be {choices} (got {str(value)[:40]!r})", field="allocation")
    return str(value)


def campaign_allocation_refresh(*, campaign: Campaign, priorities: Mapping[int, float] | None = None) -> int:
    """Recompute the order the campaign's free slots are handed out in: in an adaptive campaign each source's
    priority (``priorities`` by source pk, default the registered provider's; every source 1 without metric
    scores, round-robin) and every free slot's key; in a uniform one every key back to 0. Called when the
    campaign's metric scores are computed, when it is switched, and when slots are added. Returns how many slots
    were rewritten."""
    slots = Slot.objects.filter(campaign=campaign)
    if campaign.allocation != ADAPTIVE:
        return slots.exclude(allocation_key=0.0).update(allocation_key=0.0)
    if priorities is None:
        priorities = campaign_source_priorities(campaign)
    by_source: dict[int, list[tuple[int, int, bool]]] = defaultdict(list)
    for pk, source_id, index, assignment_id in slots.values_list("pk", "source_id", "index", "assignment_id"):
        by_source[source_id].append((index, pk, assignment_id is None))
    changed: list[Slot] = []
    for source_id, rows in by_source.items():
        priority = _priority(priorities, source_id)
        taken = sum(1 for _, _, free in rows if not free)
        rank = 0
        for _, pk, free in sorted(rows):
            if free:
                key = priority / (1 + taken + rank)
                rank += 1
            else:  # the key it gets if put back (slots_free): right even when it is freed while this runs
                key = priority / taken
            changed.append(Slot(pk=pk, priority=priority, allocation_key=key))
    for start in range(0, len(changed), REFRESH_BATCH):
        with transaction.atomic():  # short: concurrent claims skip the rows it locks
            Slot.objects.bulk_update(changed[start : start + REFRESH_BATCH], ["priority", "allocation_key"])
    return len(changed)


def _priority(priorities: Mapping[int, float] | None, source_id: int) -> float:
    """1 for every source without metric scores (round-robin); else the provider's (0 for a source it left
    out: handed out after the others)."""
    return 1.0 if priorities is None else float(priorities.get(source_id, 0.0))


def slots_free(assignments: Iterable[Assignment]) -> None:
    """Put the assignments' slots back into the pool. In an adaptive campaign a slot put back becomes its
    source's next screen: key ``priority / (1 + taken)``, ``taken`` counted after it is freed; in a uniform one
    its key is 0 (an adaptive key left in a uniform campaign would hand that slot out before every other, for
    good).

    The key follows the setting as committed, whatever a switch (``campaign_allocation_set``) does meanwhile:
    each slot is locked first, then written by a statement that reads the setting and the count itself, whose
    snapshot (read committed) is taken once the lock is held. It sees every switch committed before; a switch
    committed later rewrites the slot after this transaction, as its key reset waits for the lock. A single
    statement is not enough: one that waits for a switch's lock on the slot re-checks only the slot's row when
    the switch commits, and reads the setting as it was when the statement began. Only the slot is locked (a
    switch holds the campaign's row while it waits for slots), and a claim is unchanged: a held slot is not
    free."""
    adaptive = Exists(Campaign.objects.filter(pk=OuterRef("campaign_id"), allocation=ADAPTIVE))
    taken = Subquery(
        Slot.objects.filter(source_id=OuterRef("source_id"), assignment__isnull=False).exclude(pk=OuterRef("pk"))
        .order_by().values("source_id").annotate(n=Count("pk")).values("n")[:1],
        output_field=FloatField(),
    )
    key = Case(
        When(adaptive, then=F("priority") / (Value(1.0) + Coalesce(taken, Value(0.0)))),
        default=Value(0.0), output_field=FloatField(),
    )
    with transaction.atomic():
        for assignment in assignments:
            held = list(Slot.objects.filter(assignment=assignment).select_for_update().order_by("pk")
                        .values_list("pk", flat=True))
            if held:  # a statement of its own: its snapshot sees every switch committed before the lock
                Slot.objects.filter(pk__in=held).update(assignment=None, allocation_key=key)
