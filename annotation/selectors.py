"""Reads of the annotation app."""

from __future__ import annotations

import random
from enum import StrEnum
from typing import Any

from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet
from django.http import Http404

from annotation.analysis import DEGRADED_SUFFIX, ENGINE_VERSION, is_degraded_version
from annotation.blinding import assignment_scope, unit_token
from annotation.models import (
    Annotation,
    AnnotatorExclusion,
    AspectJudgement,
    Assignment,
    Campaign,
    Corpus,
    OutputJudgement,
    RatingUnit,
    Slot,
    User,
)
from annotation.payloads import draft_state_read
from annotation.rules import percent, starting_group
from core.errors import NotFound
from core.prepared import PreparedQuery

# --- Campaign visibility: the one rule ------------------------------------------------------------


class CampaignPurpose(StrEnum):
    """Why a user looks at campaigns; each interface names one instead of restating the rule."""

    VIEW = "view"
    """Whatever the role allows: admins all, researchers those they own, annotators their active ones."""
    MANAGE = "manage"
    """Researcher work (dashboard, reports, imports, exports, LENS): admins all, researchers their own."""
    ANNOTATE = "annotate"
    """Annotation work: the campaigns the user is an active annotator of, whatever the role."""


def campaign_list_visible(*, user: User, purpose: CampaignPurpose = CampaignPurpose.VIEW) -> QuerySet[Campaign]:
    """The campaigns `user` may see for `purpose`: admins see all campaigns, researchers those they own,
    annotators those they are an active member of."""
    membership = Campaign.objects.filter(memberships__annotator=user, memberships__active=True)
    if purpose is CampaignPurpose.ANNOTATE:
        return membership
    if user.is_platform_admin:
        return Campaign.objects.all()
    if user.role == User.Role.RESEARCHER:
        return Campaign.objects.filter(owners=user)
    if purpose is CampaignPurpose.MANAGE:
        return Campaign.objects.none()
    return membership


UserShape = tuple[str, bool]


def user_shape(user: User) -> UserShape:
    """What the visibility rule may branch on (role, superuser): the shape of a prepared query that asks
    it, so that each kind of user gets its own compiled SQL (core.prepared)."""
    return (user.role, user.is_superuser)


def user_of_shape(shape: UserShape, user_id: int) -> User:
    """A stand-in user of ``shape`` for a prepared query's builder."""
    role, superuser = shape
    return User(pk=user_id, role=role, is_superuser=superuser)


def _campaign_by_slug(shape: tuple[UserShape, CampaignPurpose], *, user_id: int, slug: str) -> QuerySet[Campaign]:
    user, purpose = shape
    return campaign_list_visible(user=user_of_shape(user, user_id), purpose=purpose).filter(slug=slug)[:1]


_CAMPAIGN_BY_SLUG = PreparedQuery(_campaign_by_slug)


def campaign_get_visible(*, user: User, slug: str, purpose: CampaignPurpose = CampaignPurpose.VIEW) -> Campaign:
    """The campaign if `user` may see it for `purpose`; a 404 otherwise (the same for "no such campaign"
    and "not yours", so slugs do not leak). Asked on every claim of work: a prepared query."""
    found = _CAMPAIGN_BY_SLUG.run((user_shape(user), purpose), user_id=user.pk, slug=slug)
    if not found:
        raise Http404("No such campaign.")
    return found[0]


def campaign_is_visible(*, user: User, campaign: Campaign, purpose: CampaignPurpose = CampaignPurpose.VIEW) -> bool:
    return campaign_list_visible(user=user, purpose=purpose).filter(pk=campaign.pk).exists()


def campaign_visible_exists(*, user: User, purpose: CampaignPurpose, campaign: Any = None) -> Exists:
    """`campaign_is_visible` as an SQL expression, so that a read can ask it in its own statement: of
    ``campaign`` (a primary key or an expression; by default the outer row's ``campaign_id``)."""
    target = OuterRef("campaign_id") if campaign is None else campaign
    return Exists(campaign_list_visible(user=user, purpose=purpose).filter(pk=target))


# --- Exclusion: the one rule ------------------------------------------------------------------------

EXCLUDED_MESSAGE = ("the campaign's researchers have excluded you from this campaign: you can no longer take, "
                    "save or submit its work")


def excluded_annotators(*, campaign_id: Any) -> QuerySet[AnnotatorExclusion, int]:
    """The ids of the campaign's excluded annotators (an open exclusion): they take, save and submit no work
    and are given none. ``campaign_id`` may be an expression (``OuterRef``)."""
    return AnnotatorExclusion.objects.filter(campaign_id=campaign_id, reincluded_at__isnull=True).values_list(
        "annotator_id", flat=True)


def annotator_excluded_exists(*, annotator_id: Any, campaign_id: Any = None) -> Exists:
    """Whether the annotator is excluded from the campaign, as an SQL expression (by default of the outer
    row's ``campaign_id``), so that the reads of a claim, an autosave and a submit ask it in their own
    statement."""
    target = OuterRef("campaign_id") if campaign_id is None else campaign_id
    return Exists(excluded_annotators(campaign_id=target).filter(annotator_id=annotator_id))


# --- Annotators' work -----------------------------------------------------------------------------


def assignment_list_for_annotator(*, annotator: User) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(annotator=annotator)
        .exclude(status=Assignment.Status.RELEASED)
        .select_related("campaign", "source")
        .order_by("campaign_id", "source__order", "id")
    )


def annotator_share(*, campaign: Campaign, annotator_id: int, submitting: int | None = None) -> dict[str, Any]:
    """How much of the campaign is this annotator's, the one rule of every count shown to them (home page,
    "sentence k of n", "m left", the live ``annotation.submitted`` event): ``{"done", "total", "left",
    "more"}``. ``total`` is the work they hold (released work left out) plus the free slots they could still
    claim (of sources they do not hold) up to the campaign's batch per annotator; a batch larger than the
    work there is promises nothing. Without a batch (an open pool) nothing beyond what they hold is
    promised: ``more`` says free work remains that they may claim. ``submitting``: an assignment counted as
    done (the page shown while it is being submitted)."""
    mine = Assignment.objects.filter(annotator_id=annotator_id, campaign_id=campaign.pk).exclude(
        status=Assignment.Status.RELEASED)
    done_q = Q(status=Assignment.Status.SUBMITTED)
    if submitting is not None:
        done_q |= Q(pk=submitting)
    counts = mine.aggregate(held=Count("id"), done=Count("id", filter=done_q))
    held, done = counts["held"], counts["done"]
    claimable = (Slot.objects.filter(campaign_id=campaign.pk, assignment__isnull=True)
                 .exclude(source_id__in=mine.values("source_id")).values("source_id").distinct())
    more = False
    total = held
    if campaign.batch_size is not None:
        room = max(campaign.batch_size - held, 0)
        total += claimable[:room].count() if room else 0
    else:
        more = claimable.exists()
    total = max(total, done)
    return {"done": done, "total": total, "left": total - done, "more": more}


def campaign_progress_for_annotator(*, annotator: User) -> list[dict[str, Any]]:
    """The annotator's share of each campaign they hold work in (``annotator_share``)."""
    campaigns = (
        Campaign.objects.filter(
            pk__in=Assignment.objects.filter(annotator=annotator).exclude(status=Assignment.Status.RELEASED)
            .values("campaign_id"))
        .filter(pk__in=campaign_list_visible(user=annotator, purpose=CampaignPurpose.ANNOTATE).values("pk"))
        .order_by("name")
    )
    rows = []
    for campaign in campaigns:
        share = annotator_share(campaign=campaign, annotator_id=annotator.pk)
        rows.append({"campaign": campaign.slug, "name": campaign.name, "done": share["done"],
                     "total": share["total"], "more": share["more"]})
    return rows


def assignment_position(*, assignment: Assignment) -> tuple[int, int]:
    """``(k, n)`` for "sentence k of n": k is this one's place among the annotator's sources in the campaign
    (released ones left out) in the order they were assigned, n their ``annotator_share`` total."""
    ids = list(
        Assignment.objects.filter(annotator_id=assignment.annotator_id, campaign_id=assignment.campaign_id)
        .exclude(status=Assignment.Status.RELEASED)
        .order_by("id")
        .values_list("id", flat=True)
    )
    k = ids.index(assignment.pk) + 1 if assignment.pk in ids else len(ids) + 1
    total = annotator_share(campaign=assignment.campaign, annotator_id=assignment.annotator_id)["total"]
    return k, max(total, k)


def assignment_progress_after_submit(*, assignment: Assignment) -> dict[str, Any]:
    """What the annotator has done in the assignment's campaign once this assignment is submitted (the page
    shows it on submitting): ``annotator_share`` with this one counted as done."""
    return annotator_share(campaign=assignment.campaign, annotator_id=assignment.annotator_id,
                           submitting=assignment.pk)


def _source_units(*, source_id: int) -> QuerySet[RatingUnit]:
    return RatingUnit.objects.filter(source_id=source_id).order_by("id")


def _live_annotation(*, assignment_id: int) -> QuerySet[Annotation]:
    """The assignment's latest draft or submitted version."""
    statuses = [Annotation.Status.DRAFT, Annotation.Status.SUBMITTED]
    return Annotation.objects.filter(assignment_id=assignment_id, status__in=statuses).order_by("-version")[:1]


# The annotation page's reads, compiled once per process (core.prepared).
_SOURCE_UNITS = PreparedQuery(_source_units)
_LIVE_ANNOTATION = PreparedQuery(_live_annotation)


def assignment_units(*, assignment: Assignment) -> list[RatingUnit]:
    """The source's rating units in this annotator's order: random per assignment, stable across reloads."""
    units = _SOURCE_UNITS.run(source_id=assignment.source_id)
    random.Random(assignment.shuffle_seed).shuffle(units)
    return units


def unit_payload(unit: RatingUnit, *, public_id: str) -> dict[str, Any]:
    """One output as the annotation page shows it (the same for real and tutorial sources).

    ``id`` is ``public_id``, the unit's opaque id in this assignment (``annotation.blinding``), never the
    database id. ``group`` is where the output starts in step 1 (``annotation.rules.starting_group``);
    ``auto_category`` is None and ``analysed`` false when the analysis has not run or failed (or was
    interrupted), so the page can say so.
    """
    analysis = unit.analysis or {}
    return {
        "id": public_id,
        "text": unit.text,
        "group": starting_group(unit.auto_category),
        "auto_category": unit.auto_category or None,
        "analysed": bool(unit.analysis_version) and not unit.analysis_error,
        "reasons": analysis.get("reasons", {}),
        "auto_edits": analysis.get("edits", []),
        "analysis_error": unit.analysis_error or None,
        "analysis_degraded": is_degraded_version(unit.analysis_version),
    }


def assignment_detail(*, assignment: Assignment) -> dict[str, Any]:
    """Everything the annotation page needs. System names are never included."""
    source = assignment.source
    live = _LIVE_ANNOTATION.run(assignment_id=assignment.pk)
    annotation = live[0] if live else None
    scope = assignment_scope(assignment.pk)
    units = [unit_payload(unit, public_id=unit_token(scope=scope, unit_id=unit.pk))
             for unit in assignment_units(assignment=assignment)]
    return {
        "id": assignment.pk,
        "campaign": assignment.campaign.slug,
        "campaign_name": assignment.campaign.name,
        "status": assignment.status,
        "source": {"id": source.id_for_annotators, "text": source.text, "is_tutorial": source.is_tutorial},
        "units": units,
        "annotation": None if annotation is None else {
            "id": annotation.pk,
            "status": annotation.status,
            "version": annotation.version,
            "draft": draft_state_read(annotation.draft),
            "draft_revision": annotation.draft_revision,
        },
    }


def campaign_progress(*, campaign: Campaign) -> dict[str, Any]:
    """Progress per annotator (by pseudonym) and per source."""
    live = Assignment.objects.filter(campaign=campaign).exclude(status=Assignment.Status.RELEASED)
    per_annotator = (
        live.values("annotator__pseudonym")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
                  in_progress=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)))
        .order_by("annotator__pseudonym")
    )
    per_source = (
        campaign.sources.filter(is_tutorial=False)
        .annotate(
            wanted=Count("slots", distinct=True),
            done=Count("assignments", filter=Q(assignments__status=Assignment.Status.SUBMITTED), distinct=True),
        )
        .values("external_id", "wanted", "done")
        .order_by("order", "id")
    )
    return {
        "annotators": [
            {"annotator": r["annotator__pseudonym"], "done": r["done"], "in_progress": r["in_progress"],
             "total": r["total"], "percent": percent(r["done"], r["total"])}
            for r in per_annotator
        ],
        "sources": list(per_source),
    }


# --- automatic analysis ----------------------------------------------------------------------------------


def units_needing_analysis(campaign: Campaign) -> QuerySet[RatingUnit]:
    """Units never analysed, analysed by another engine version or threshold, or degraded.

    A degraded unit's version (``<version>+lexical``) never equals the current engine version, so it is
    always picked again.
    """
    return RatingUnit.objects.filter(source__campaign=campaign).filter(
        ~Q(analysis_version=ENGINE_VERSION) | ~Q(analysed_threshold=campaign.compression_threshold)
        | Q(analysed_threshold__isnull=True)
    )


def degraded_units_q() -> Q:
    """Units whose stored analysis was made without the token encoder."""
    return Q(analysis_version__endswith=DEGRADED_SUFFIX)


def campaign_analysis_counts(*, campaign: Campaign) -> dict[str, Any]:
    """How many of the campaign's distinct output texts are analysed, degraded, failed or pending."""
    counts: dict[str, Any] = RatingUnit.objects.filter(source__campaign=campaign).aggregate(
        units=Count("id"),
        analysed=Count("id", filter=~Q(analysis_version="")),
        degraded=Count("id", filter=degraded_units_q()),
        failed=Count("id", filter=~Q(analysis_error="")),
    )
    counts["pending"] = units_needing_analysis(campaign).count()
    counts["engine_version"] = ENGINE_VERSION
    return counts


# --- multi-aspect ratings ----------------------------------------------------------------------------------


def campaign_aspect_scales(campaign: Campaign) -> dict[str, str]:
    """Aspect -> its scale (``"0..100"``, ``"1..5"``, ``"-2..2"``), in the order the files list them.

    Empty for Rank & Rate campaigns. One query.
    """
    rows = (
        AspectJudgement.objects.filter(annotation__source__campaign=campaign)
        .values("aspect", "scale")
        .annotate(first=Min("id"))
        .order_by("first")
    )
    return {row["aspect"]: row["scale"] for row in rows}


def campaign_aspects(campaign: Campaign) -> list[str]:
    """The aspects a campaign's imported ratings have (``["fluency", "meaning", "simplicity"]``); [] for none."""
    return list(campaign_aspect_scales(campaign))


def corpus_get(*, name: str) -> Corpus:
    """The imported corpus ``name``; NotFound says how to import it."""
    corpus = Corpus.objects.filter(name=name).first()
    if corpus is None:
        known = ", ".join(Corpus.objects.values_list("name", flat=True)) or "none"
        raise NotFound(
            f"corpus {name!r} has not been imported (imported: {known}); import it once with "
            f"`python manage.py import_corpus --name {name} ORIG SIMP...`",
            field="dataset",
        )
    return corpus


def corpus_rows(*, corpus: Corpus) -> list[tuple[int, str, list[str]]]:
    """``(index, source, references)`` of every item, in file order (flat values, one query)."""
    return [
        (index, source, list(references))
        for index, source, references in corpus.items.order_by("index").values_list("index", "source", "references")
    ]


def campaign_people(*, campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's annotators for its owners: who is behind each pseudonym, their platform id (crowd
    workers), tutorial passes and their assignments (research pages only; exports name pseudonyms only)."""
    memberships = list(
        campaign.memberships.select_related("annotator", "annotator__crowd_worker").order_by("added_at", "id")
    )
    tutorials = campaign.sources.filter(is_tutorial=True).count()
    passes = dict(
        campaign.sources.filter(is_tutorial=True, tutorial_passes__isnull=False)
        .values_list("tutorial_passes__annotator_id")
        .annotate(n=Count("id"))
        .values_list("tutorial_passes__annotator_id", "n")
    )
    assignments: dict[int, list[Assignment]] = {}
    for a in (
        Assignment.objects.filter(campaign=campaign).exclude(status=Assignment.Status.RELEASED)
        .select_related("source").order_by("source__order", "id")
    ):
        assignments.setdefault(a.annotator_id, []).append(a)
    rows = []
    for m in memberships:
        user = m.annotator
        worker = getattr(user, "crowd_worker", None)
        mine = assignments.get(user.pk, [])
        rows.append({
            "pseudonym": user.pseudonym,
            "username": user.username,
            "email": user.email,
            "active": m.active,
            "platform": worker.get_platform_display() if worker else "",
            "worker_id": worker.worker_id if worker else "",
            "tutorial": f"{passes.get(user.pk, 0)} / {tutorials}" if tutorials else "",
            "assignments": mine,
            "done": sum(a.status == Assignment.Status.SUBMITTED for a in mine),
        })
    return rows


def _quoted(text: str, span: Any) -> str:
    """The text of a stored ``[start, end]`` span, or "" when there is none (or it does not fit the text)."""
    if not isinstance(span, list | tuple) or len(span) != 2:
        return ""
    start, end = span
    return text[start:end] if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end else ""


def _edits_described(edits: Any, *, source: str, output: str) -> list[dict[str, str]]:
    """A step-2 correction as a researcher reads it: each stored edit (``validate_edits``' shape: ``type``,
    ``source_span``, ``output_span``, ``anchor``) with the words it names in the source and the output."""
    described = []
    for edit in edits or []:
        if not isinstance(edit, dict):
            continue
        kind = str(edit.get("type") or "edit")
        anchor = edit.get("anchor")
        at = ""
        if isinstance(anchor, int) and 0 <= anchor <= len(output):
            before, after = output[:anchor].split()[-1:], output[anchor:].split()[:1]
            at = " ".join(["…" + before[0] if before else "(start)", "‸", after[0] + "…" if after else "(end)"])
        described.append({"type": kind, "source": _quoted(source, edit.get("source_span")),
                          "output": _quoted(output, edit.get("output_span")), "at": at})
    return described


def assignment_item_view(*, assignment: Assignment) -> dict[str, Any]:
    """One annotator's annotation of one source as they saw it: outputs in their order, their step-1
    categories (and the automatic ones), step-2 corrections, ranking, ratings and step times, every version."""
    units = assignment_units(assignment=assignment)
    versions = []
    for annotation in assignment.annotations.order_by("-version"):
        judged: dict[int, OutputJudgement] = {}
        for j in annotation.judgements.select_related("output").order_by("output_id"):
            judged.setdefault(j.output.unit_id, j)
        rows = []
        for position, unit in enumerate(units, 1):
            found = judged.get(unit.pk)
            rows.append({
                "position": position,
                "text": unit.text,
                "auto_category": unit.auto_category,
                "category": found.category if found else "",
                "edits": found.edits if found else None,
                "corrections": _edits_described(found.edits if found else None, source=assignment.source.text,
                                                output=unit.text),
                "automatic_edits": len((unit.analysis or {}).get("edits") or []),
                "corrected": bool(found and found.edits is not None),
                "rank": found.rank if found else None,
                "rating": found.rating if found else None,
            })
        versions.append({
            "annotation": annotation,
            "rows": sorted(rows, key=lambda r: (r["rank"] is None, r["rank"] or 0, r["position"])),
            "step_seconds": annotation.step_seconds or {},
            "total_seconds": sum((annotation.step_seconds or {}).values()),
        })
    return {"assignment": assignment, "source": assignment.source, "versions": versions}
