"""Reads of the annotation app."""

from __future__ import annotations

import random
from typing import Any

from django.db.models import Count, Q, QuerySet

from annotation.analysis import DEGRADED_SUFFIX, ENGINE_VERSION, is_degraded_version
from annotation.models import Annotation, Assignment, Campaign, RatingUnit, User


def assignment_list_for_annotator(*, annotator: User) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(annotator=annotator)
        .exclude(status=Assignment.Status.RELEASED)
        .select_related("campaign", "source")
        .order_by("campaign_id", "source__order", "id")
    )


def campaign_progress_for_annotator(*, annotator: User) -> list[dict[str, Any]]:
    rows = (
        Assignment.objects.filter(annotator=annotator, campaign__memberships__annotator=annotator,
                                  campaign__memberships__active=True)
        .exclude(status=Assignment.Status.RELEASED)
        .values("campaign_id", "campaign__slug", "campaign__name")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
        .order_by("campaign__name")
    )
    return [
        {"campaign": r["campaign__slug"], "name": r["campaign__name"], "done": r["done"], "total": r["total"]}
        for r in rows
    ]


def assignment_units(*, assignment: Assignment) -> list[RatingUnit]:
    """The source's rating units in this annotator's order: random per assignment, stable across reloads."""
    units = list(RatingUnit.objects.filter(source_id=assignment.source_id).order_by("id"))
    random.Random(assignment.shuffle_seed).shuffle(units)
    return units


def assignment_detail(*, assignment: Assignment) -> dict[str, Any]:
    """Everything the annotation page needs. System names are never included."""
    source = assignment.source
    annotation = (
        assignment.annotations.filter(status__in=[Annotation.Status.DRAFT, Annotation.Status.SUBMITTED])
        .order_by("-version")
        .first()
    )
    units = []
    for unit in assignment_units(assignment=assignment):
        analysis = unit.analysis or {}
        units.append(
            {
                "id": unit.pk,
                "text": unit.text,
                "auto_category": unit.auto_category or "paraphrase",
                "reasons": analysis.get("reasons", {}),
                "auto_edits": analysis.get("edits", []),
                "analysis_error": unit.analysis_error or None,
                "analysis_degraded": is_degraded_version(unit.analysis_version),
            }
        )
    return {
        "id": assignment.pk,
        "campaign": assignment.campaign.slug,
        "campaign_name": assignment.campaign.name,
        "status": assignment.status,
        "source": {"id": source.external_id, "text": source.text, "is_tutorial": source.is_tutorial},
        "units": units,
        "annotation": None if annotation is None else {
            "id": annotation.pk,
            "status": annotation.status,
            "version": annotation.version,
            "draft": annotation.draft,
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
             "total": r["total"]}
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
