"""Drafts, submissions and new versions of annotations.

The browser autosaves its whole state as a draft (highest revision wins). Submitting validates the
state against the source, writes one judgement per output (a rating unit's outputs share it) and
freezes the annotation; repeating a submit with the same key returns the same annotation.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.utils import timezone

from annotation.blinding import assignment_scope, tokens_for
from annotation.models import (
    Annotation,
    Assignment,
    Category,
    Output,
    OutputJudgement,
    RatingUnit,
    Source,
    User,
)
from annotation.payloads import draft_state_check, submit_payload_check
from annotation.selectors import (
    EXCLUDED_MESSAGE,
    CampaignPurpose,
    UserShape,
    annotator_excluded_exists,
    campaign_is_visible,
    campaign_visible_exists,
    user_of_shape,
    user_shape,
)
from annotation.services.tutorials import annotator_must_pass_tutorial
from core.errors import Conflict, NotAllowed, NotFound, ServiceError
from core.prepared import PreparedQuery

STEPS = ("categorise", "edits", "rate")
EDIT_TYPES = {"deletion", "paraphrase", "split"}
CATEGORIES = {c.value for c in Category}
MAX_DRAFT_REVISION = 2**31 - 1
logger = logging.getLogger(__name__)  # Annotation.draft_revision is a 32-bit column on PostgreSQL


def _check_owner(assignment: Assignment, user: User) -> None:
    if assignment.annotator_id != user.pk:
        raise NotAllowed("this assignment belongs to another annotator")
    if assignment.status == Assignment.Status.RELEASED:
        raise Conflict("this assignment was released back to the pool; ask for new work")


def _span(value: Any, limit: int, where: str) -> list[int] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list | tuple) or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise ServiceError("a span must be [start, end] with integer offsets", field=where)
    start, end = value
    if not 0 <= start <= end <= limit:
        raise ServiceError(f"span [{start}, {end}] is outside the text (length {limit})", field=where)
    return [start, end]


def validate_edits(edits: Any, *, source_text: str, output_text: str, where: str) -> list[dict[str, Any]]:
    if not isinstance(edits, list):
        raise ServiceError("edits must be a list", field=where)
    clean: list[dict[str, Any]] = []
    for i, edit in enumerate(edits):
        here = f"{where}[{i}]"
        if not isinstance(edit, Mapping):
            raise ServiceError("an edit must be an object", field=here)
        kind = edit.get("type")
        if kind not in EDIT_TYPES:
            raise ServiceError(f"unknown edit type {kind!r}", field=f"{here}.type")
        source_span = _span(edit.get("source_span"), len(source_text), f"{here}.source_span")
        output_span = _span(edit.get("output_span"), len(output_text), f"{here}.output_span")
        anchor = edit.get("anchor")
        if anchor is not None and (
            not isinstance(anchor, int) or isinstance(anchor, bool) or not 0 <= anchor <= len(output_text)
        ):
            raise ServiceError(f"anchor {anchor!r} is outside the output (length {len(output_text)})",
                               field=f"{here}.anchor")
        if kind == "deletion" and (source_span is None or anchor is None):
            raise ServiceError("a deletion needs a source_span and an anchor", field=here)
        if kind == "paraphrase" and output_span is None:
            raise ServiceError("a paraphrase needs an output_span", field=here)
        if kind == "split" and anchor is None:
            raise ServiceError("a split needs an anchor", field=here)
        clean.append({"type": kind, "source_span": source_span, "output_span": output_span, "anchor": anchor})
    return clean


def _clean_steps(value: Any, field: str) -> dict[str, float]:
    if value in (None, {}):
        return {}
    if not isinstance(value, Mapping):
        raise ServiceError("expected an object keyed by step", field=field)
    clean: dict[str, float] = {}
    for key, seconds in value.items():
        if key not in STEPS:
            raise ServiceError(f"unknown step {key!r} (expected {', '.join(STEPS)})", field=field)
        numeric = isinstance(seconds, int | float) and not isinstance(seconds, bool)
        if not numeric or seconds < 0 or not math.isfinite(seconds):
            raise ServiceError("seconds must be a non-negative number", field=f"{field}.{key}")
        clean[key] = float(seconds)
    return clean


def _live_annotation(assignment: Assignment) -> Annotation | None:
    return (
        assignment.annotations.filter(status__in=[Annotation.Status.DRAFT, Annotation.Status.SUBMITTED])
        .order_by("-version")
        .first()
    )


@transaction.atomic
def annotation_save_draft(*, assignment: Assignment, user: User, state: Mapping[str, Any], revision: int) -> Annotation:
    """Store the page state; an older revision arriving late never overwrites a newer one."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",)).select_related("campaign")
        .annotate(excluded=annotator_excluded_exists(annotator_id=user.pk)).get(pk=assignment.pk)
    )
    if getattr(assignment, "excluded", False):
        raise NotAllowed(EXCLUDED_MESSAGE, field="exclusion")
    _check_owner(assignment, user)
    annotator_must_pass_tutorial(campaign=assignment.campaign, annotator=user)
    if not isinstance(state, Mapping):
        raise ServiceError("state must be an object", field="state")
    draft_state_check(state)
    annotation = _live_annotation(assignment)
    if annotation is not None and annotation.status == Annotation.Status.SUBMITTED:
        raise Conflict("this source was already submitted; a researcher can reopen it")
    now = timezone.now()
    if annotation is None:  # the first autosave: one INSERT with the state
        annotation = Annotation.objects.create(
            source_id=assignment.source_id, assignment=assignment, annotator=user, draft=dict(state),
            draft_revision=revision, step_seconds=_clean_steps(state.get("step_seconds"), "state.step_seconds"),
        )
    elif revision > annotation.draft_revision:
        annotation.draft = dict(state)
        annotation.draft_revision = revision
        annotation.step_seconds = _clean_steps(state.get("step_seconds"), "state.step_seconds")
        annotation.save(update_fields=["draft", "draft_revision", "step_seconds", "updated_at"])
    fields = ["last_activity_at"]
    assignment.last_activity_at = now
    if assignment.status == Assignment.Status.ASSIGNED:
        assignment.status = Assignment.Status.IN_PROGRESS
        assignment.started_at = now
        fields += ["status", "started_at"]
    assignment.save(update_fields=fields)
    return annotation


@dataclass(frozen=True)
class JudgementIn:
    """The validated answer for one rating unit (all its outputs share it)."""

    category: str
    rating: float
    rank: int
    edits: list[dict[str, Any]] | None


@dataclass(frozen=True)
class SubmissionIn:
    """A validated submit payload: one judgement per rating unit of the source, plus timings."""

    judgements: dict[str, JudgementIn]
    step_seconds: dict[str, float]
    step_timestamps: dict[str, Any]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _validate_unit(
    item: Any, *, where: str, units: Mapping[str, RatingUnit], seen: Collection[str], source_text: str
) -> tuple[str, JudgementIn]:
    """One entry of `units`: (the rating unit's opaque id, its judgement)."""
    if not isinstance(item, Mapping):
        raise ServiceError("expected an object", field=where)
    unit_id: Any = item.get("unit")
    if not isinstance(unit_id, str) or unit_id not in units:
        raise ServiceError(f"output {unit_id!r} does not belong to this source", field=f"{where}.unit")
    if unit_id in seen:
        raise ServiceError(f"output {unit_id} appears twice", field=f"{where}.unit")
    category: Any = item.get("category")
    if category not in CATEGORIES:
        raise ServiceError(f"category must be one of {', '.join(sorted(CATEGORIES))}", field=f"{where}.category")
    rating: Any = item.get("rating")
    if not _is_number(rating) or not math.isfinite(rating) or not 0 <= rating <= 100:
        raise ServiceError("rating must be a number from 0 to 100", field=f"{where}.rating")
    rank: Any = item.get("rank")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= len(units):
        raise ServiceError(f"rank must be an integer from 1 to {len(units)}", field=f"{where}.rank")
    edits: Any = item.get("edits")
    if edits is not None:
        edits = validate_edits(edits, source_text=source_text, output_text=units[unit_id].text,
                               where=f"{where}.edits")
    return unit_id, JudgementIn(category=category, rating=float(rating), rank=rank, edits=edits)


def submission_validate(
    payload: Mapping[str, Any], *, units: Mapping[str, RatingUnit], source_text: str
) -> SubmissionIn:
    """Check a submit payload against the source's rating units, keyed by the opaque ids the annotator was
    given (``annotation.blinding``); ServiceError names the first bad field."""
    submit_payload_check(payload)
    items = payload.get("units")
    if not isinstance(items, list):
        raise ServiceError("units must be a list with one entry per output", field="units")
    judgements: dict[str, JudgementIn] = {}
    for i, item in enumerate(items):
        unit_id, judgement = _validate_unit(item, where=f"units[{i}]", units=units, seen=judgements,
                                            source_text=source_text)
        judgements[unit_id] = judgement
    missing = set(units) - set(judgements)
    if missing:
        raise ServiceError(f"{len(missing)} output(s) are not rated yet", field="units", details=sorted(missing))
    if sorted(j.rank for j in judgements.values()) != list(range(1, len(units) + 1)):
        raise ServiceError("ranks must be 1..N, each used once", field="units")
    step_seconds = _clean_steps(payload.get("step_seconds"), "step_seconds")
    timestamps = payload.get("step_timestamps") or {}
    if not isinstance(timestamps, Mapping):
        raise ServiceError("step_timestamps must be an object", field="step_timestamps")
    return SubmissionIn(judgements=judgements, step_seconds=step_seconds, step_timestamps=dict(timestamps))


def _judgement_rows(
    annotation: Annotation, units: Mapping[str, RatingUnit], outputs: Mapping[int, list[Output]],
    submission: SubmissionIn,
) -> list[OutputJudgement]:
    """One judgement per output; the outputs of a rating unit share its answer and automatic analysis."""
    rows: list[OutputJudgement] = []
    for unit_id, answer in submission.judgements.items():
        unit = units[unit_id]
        auto = unit.analysis.get("edits") if unit.analysis else None
        rows.extend(
            OutputJudgement(
                annotation=annotation, output=output, category=answer.category, auto_category=unit.auto_category,
                edits=answer.edits, auto_edits=auto, rank=answer.rank, rating=answer.rating,
            )
            for output in outputs[unit.pk]
        )
    return rows


def _units_of(rows: Iterable[Output]) -> tuple[list[RatingUnit], dict[int, list[Output]]]:
    units: dict[int, RatingUnit] = {}
    outputs: dict[int, list[Output]] = {}
    for output in rows:
        unit = units.setdefault(output.unit_id, output.unit)
        output.unit = unit
        outputs.setdefault(unit.pk, []).append(output)
    return list(units.values()), outputs


def _after_submit(annotation_id: int) -> None:
    """Once the submit is committed: the dashboards' broadcast goes to the worker, off the request path.
    A broker that does not answer never fails the annotator's submit (a dashboard that misses it reloads)."""
    from annotation.tasks import annotation_submitted_broadcast

    try:
        annotation_submitted_broadcast.delay(annotation_id)
    except Exception:
        logger.exception("could not queue the broadcast of annotation %s", annotation_id)


@dataclass(frozen=True)
class SubmitOutcome:
    """A submit's annotation and whether this call stored it (False: a repeat of an earlier submit).
    `judgements`: the rows this call stored (their outputs attached), so that the answer is built from
    them without reading them back; empty for a repeat."""

    annotation: Annotation
    created: bool
    judgements: list[OutputJudgement] = field(default_factory=list)


def annotation_submit(
    *, assignment: Assignment, user: User, payload: Mapping[str, Any], submit_key: str
) -> Annotation:
    """Validate the final state and freeze it. Idempotent for the same `submit_key`."""
    return annotation_submit_outcome(
        assignment=assignment, user=user, payload=payload, submit_key=submit_key
    ).annotation


@dataclass(frozen=True)
class _Live:
    """The assignment's latest submitted and draft versions, read after the lock (ids, not rows)."""

    done_id: int | None
    done_key: str
    done_version: int
    draft_id: int | None
    draft_version: int


def _locking_read(shape: UserShape, *, assignment_id: int, user_id: int) -> QuerySet[Assignment]:
    return (
        Assignment.objects.select_for_update(of=("self",)).select_related("source", "campaign")
        .annotate(
            annotating=campaign_visible_exists(user=user_of_shape(shape, user_id), purpose=CampaignPurpose.ANNOTATE),
            excluded=annotator_excluded_exists(annotator_id=user_id),
            has_tutorials=Exists(Source.objects.filter(campaign_id=OuterRef("campaign_id"), is_tutorial=True)),
        )
        .filter(pk=assignment_id)
    )


def _versions(assignment_id: int) -> tuple[QuerySet[Annotation], QuerySet[Annotation]]:
    """The assignment's submitted and draft versions, latest first."""
    versions = Annotation.objects.filter(assignment_id=assignment_id).order_by("-version")
    return versions.filter(status=Annotation.Status.SUBMITTED), versions.filter(status=Annotation.Status.DRAFT)


def _outputs_with_live_versions(*, assignment_id: int, source_id: int) -> QuerySet[Output]:
    done, draft = _versions(assignment_id)
    return Output.objects.filter(source_id=source_id).select_related("unit").order_by("id").annotate(
        done_id=Subquery(done.values("id")[:1]),
        done_key=Subquery(done.values("submit_key")[:1]),
        done_version=Subquery(done.values("version")[:1]),
        draft_id=Subquery(draft.values("id")[:1]),
        draft_version=Subquery(draft.values("version")[:1]),
    )


# The submit's two reads, compiled once per process (core.prepared): building and compiling them costs
# more than running them.
_LOCKING_READ = PreparedQuery(_locking_read)
_OUTPUTS_WITH_LIVE_VERSIONS = PreparedQuery(_outputs_with_live_versions)


def _locked_for_submit(assignment_id: int, user: User, *, unchecked: bool) -> Assignment:
    """The assignment under its row lock, with its source and campaign, whether `user` is an active
    annotator of the campaign and whether the campaign has tutorial sources: one query. `unchecked` (the
    caller has not shown the assignment to the user yet): not found, or not the user's to work on, answers
    as the API's visibility rule does (404 unless the user manages the campaign, then 403)."""
    found = _LOCKING_READ.run(user_shape(user), assignment_id=assignment_id, user_id=user.pk)
    if not found:
        raise NotFound("No such assignment.")
    assignment = found[0]
    row: Any = assignment  # with the two annotations of _locking_read
    if unchecked and (assignment.annotator_id != user.pk or not row.annotating):
        if not campaign_is_visible(user=user, campaign=assignment.campaign, purpose=CampaignPurpose.MANAGE):
            raise NotFound("No such assignment.")
        if assignment.annotator_id != user.pk:
            raise NotAllowed("this assignment belongs to another annotator")
    return assignment


def _outputs_and_live(assignment: Assignment) -> tuple[list[RatingUnit], dict[int, list[Output]], _Live]:
    """After the lock: the source's rating units and outputs, and the assignment's latest submitted and
    draft versions, in one statement (the versions as uncorrelated subqueries, evaluated once). It runs
    after the lock is held, so under READ COMMITTED it sees every submit committed before it; a subquery
    inside the locking statement would not (its snapshot predates the wait)."""
    rows = _OUTPUTS_WITH_LIVE_VERSIONS.run(assignment_id=assignment.pk, source_id=assignment.source_id)
    if rows:
        first: Any = rows[0]
        live = _Live(done_id=first.done_id, done_key=first.done_key or "", done_version=first.done_version or 0,
                     draft_id=first.draft_id, draft_version=first.draft_version or 0)
    else:  # a source without outputs (nothing to rate): the versions on their own
        done, draft = _versions(assignment.pk)
        last_done, last_draft = done.first(), draft.first()
        live = _Live(done_id=last_done.pk if last_done else None, done_key=last_done.submit_key if last_done else "",
                     done_version=last_done.version if last_done else 0,
                     draft_id=last_draft.pk if last_draft else None,
                     draft_version=last_draft.version if last_draft else 0)
    units, outputs = _units_of(rows)
    return units, outputs, live


@transaction.atomic
def annotation_submit_outcome(
    *, assignment: Assignment | int, user: User, payload: Mapping[str, Any], submit_key: str
) -> SubmitOutcome:
    """`annotation_submit`, saying whether this call stored the annotation. The repeat check runs under
    the assignment's row lock, so of several identical submits at once exactly one is `created`.

    `assignment` is read again under the lock (`_locked_for_submit`), so a submit reads it once; given by
    id (the API), the visibility rule of the API is checked in that same query. One more statement reads
    the outputs and the live versions; the annotation is then written without being read (an INSERT, or
    an UPDATE of the draft)."""
    by_id = isinstance(assignment, int)
    locked = _locked_for_submit(assignment if isinstance(assignment, int) else assignment.pk, user, unchecked=by_id)
    if locked.annotator_id != user.pk:
        raise NotAllowed("this assignment belongs to another annotator")
    if not submit_key or len(submit_key) > 64:
        raise ServiceError("submit_key must be 1-64 characters", field="submit_key")
    unit_rows, outputs, live = _outputs_and_live(locked)
    if live.done_id is not None and live.draft_id is None:
        if live.done_key == submit_key:
            return SubmitOutcome(Annotation.objects.select_related("annotator").get(pk=live.done_id), created=False)
        raise Conflict("this source was already submitted; a researcher can reopen it")
    if getattr(locked, "excluded", False):
        raise NotAllowed(EXCLUDED_MESSAGE, field="exclusion")
    _check_owner(locked, user)
    if getattr(locked, "has_tutorials", True):
        annotator_must_pass_tutorial(campaign=locked.campaign, annotator=user)
    source = locked.source
    # Keyed by the opaque ids the page was given (annotation.blinding), never by database ids.
    units = tokens_for(scope=assignment_scope(locked.pk), units=unit_rows)
    submission = submission_validate(payload, units=units, source_text=source.text)
    now = timezone.now()
    annotation = Annotation(
        pk=live.draft_id, source=source, assignment=locked, annotator=user, status=Annotation.Status.SUBMITTED,
        version=live.draft_version if live.draft_id is not None else live.done_version + 1,
        previous_id=live.done_id, submit_key=submit_key, submitted_at=now, step_seconds=submission.step_seconds,
        step_timestamps=submission.step_timestamps, draft=dict(payload),
    )
    if live.draft_id is None:
        annotation.save(force_insert=True)
    else:  # the draft's own columns (revision, creation time, previous) stay as they are
        annotation.save(update_fields=["status", "submit_key", "submitted_at", "step_seconds", "step_timestamps",
                                       "draft", "updated_at"])
    if live.done_id is not None:
        Annotation.objects.filter(pk=live.done_id).update(status=Annotation.Status.SUPERSEDED, updated_at=now)
    locked.status = Assignment.Status.SUBMITTED
    locked.submitted_at = now
    locked.last_activity_at = now
    locked.save(update_fields=["status", "submitted_at", "last_activity_at"])
    rows = OutputJudgement.objects.bulk_create(_judgement_rows(annotation, units, outputs, submission))
    annotation_id = annotation.pk
    transaction.on_commit(lambda: _after_submit(annotation_id))
    return SubmitOutcome(annotation, created=True, judgements=rows)


def annotation_reopen_allowed(*, annotation: Annotation, by: User) -> None:
    """Raise NotAllowed unless `by` may reopen the annotation: an admin or a researcher owning its campaign."""
    if not campaign_is_visible(user=by, campaign=annotation.source.campaign, purpose=CampaignPurpose.MANAGE):
        raise NotAllowed("only the campaign's researchers and admins may reopen an annotation")


@transaction.atomic
def annotation_reopen(*, annotation: Annotation, by: User) -> Annotation:
    """Start a new draft version from a submitted annotation; the submitted one is kept unchanged."""
    annotation = (
        Annotation.objects.select_for_update(of=("self",))
        .select_related("assignment", "source__campaign")
        .get(pk=annotation.pk)
    )
    annotation_reopen_allowed(annotation=annotation, by=by)
    assignment = annotation.assignment
    if annotation.status != Annotation.Status.SUBMITTED or assignment is None:
        raise ServiceError("only a submitted annotation of an assignment can be reopened", field="annotation")
    if assignment.status == Assignment.Status.RELEASED:
        # Its annotator left the campaign or the source was reassigned after a reopening: the slot went back
        # to the pool (and a dropped draft may already be this version's next one).
        raise Conflict("this annotation's source was released to the pool (its annotator was removed or it was "
                       "reassigned), so it cannot be reopened for that annotator", field="annotation")
    if assignment.annotations.filter(status=Annotation.Status.DRAFT).exists():
        raise Conflict("this annotation is already reopened")
    new = Annotation.objects.create(
        source_id=annotation.source_id, assignment=assignment, annotator_id=annotation.annotator_id,
        version=annotation.version + 1, previous=annotation, draft=annotation.draft,
        draft_revision=annotation.draft_revision, step_seconds=annotation.step_seconds,
    )
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.IN_PROGRESS, submitted_at=None
    )
    return new
