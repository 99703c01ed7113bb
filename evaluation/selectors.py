"""Reads that turn a campaign's stored ratings into the records the statistics core consumes."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from django.db.models import Count, Max, Q

from annotation.models import (
    Annotation,
    Assignment,
    Campaign,
    Category,
    Output,
    OutputJudgement,
    RatingUnit,
    Slot,
    User,
)
from annotation.selectors import degraded_units_q
from evaluation.stats.records import RatingRecord


def campaign_judgements(campaign: Campaign):  # type: ignore[no-untyped-def]
    """Judgements of the current submitted annotations of a campaign, with everything a record needs."""
    return (
        OutputJudgement.objects.filter(
            annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
        )
        .select_related(
            "output__system", "output__unit", "annotation__annotator", "annotation__source",
        )
        .order_by("annotation__source__order", "output__row_index", "output_id", "annotation_id")
    )


def judgement_category(judgement: OutputJudgement) -> str | None:
    output = judgement.output
    return judgement.category or output.given_category or output.unit.auto_category or None


def campaign_rating_records(campaign: Campaign) -> list[RatingRecord]:
    records: list[RatingRecord] = []
    for j in campaign_judgements(campaign):
        annotation = j.annotation
        seconds = sum(annotation.step_seconds.values()) if annotation.step_seconds else None
        records.append(
            RatingRecord(
                source=annotation.source.external_id,
                output=str(j.output_id),
                system=j.output.system.name,
                rater=annotation.rater_key,
                raw=j.rating,
                z=j.z_score,
                category=judgement_category(j),
                seconds=seconds,
            )
        )
    return records


# --- Dashboard reads ------------------------------------------------------------------------------

# ASSET features shown per system on the dashboard, in display order (see annotation.analysis.features).
DASHBOARD_FEATURES = (
    "compression_ratio",
    "sentence_splits",
    "levenshtein_similarity",
    "proportion_deleted",
    "proportion_added",
    "proportion_reordered",
    "lexical_complexity_ratio",
    "dependency_depth_ratio",
    "exact_match",
    "deletion_only",
)


def campaign_for_dashboard(*, user: User, slug: str) -> Campaign | None:
    """The campaign if the user owns it or is an admin; ``None`` otherwise (and for annotators)."""
    if not user.is_authenticated or not user.is_researcher:
        return None
    campaigns = Campaign.objects.all() if user.is_platform_admin else Campaign.objects.filter(owners=user)
    return campaigns.filter(slug=slug).first()


def campaign_list_for_researcher(*, user: User, slug: str | None = None) -> list[dict[str, Any]]:
    """The user's campaigns (admins: all; only `slug` if given), newest first, with counts and progress."""
    campaigns = Campaign.objects.all() if user.is_platform_admin else Campaign.objects.filter(owners=user)
    if slug is not None:
        campaigns = campaigns.filter(slug=slug)
    rows = list(
        campaigns.annotate(
            n_sources=Count("sources", filter=Q(sources__is_tutorial=False), distinct=True),
            n_systems=Count("systems", distinct=True),
            n_annotators=Count("memberships", filter=Q(memberships__active=True), distinct=True),
        )
        .prefetch_related("owners")
        .order_by("-created_at", "id")
    )
    ids = [c.pk for c in rows]
    assignments = {
        r["campaign_id"]: r
        for r in Assignment.objects.filter(campaign_id__in=ids)
        .exclude(status=Assignment.Status.RELEASED)
        .values("campaign_id")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
    }
    wanted = dict(
        Slot.objects.filter(source__campaign_id__in=ids, source__is_tutorial=False)
        .values("source__campaign_id")
        .annotate(n=Count("id"))
        .values_list("source__campaign_id", "n")
    )
    ratings = dict(
        OutputJudgement.objects.filter(
            annotation__source__campaign_id__in=ids, annotation__status=Annotation.Status.SUBMITTED
        )
        .values("annotation__source__campaign_id")
        .annotate(n=Count("id"))
        .values_list("annotation__source__campaign_id", "n")
    )
    out: list[dict[str, Any]] = []
    for campaign in rows:
        progress = assignments.get(campaign.pk, {"total": 0, "done": 0})
        slots = wanted.get(campaign.pk, 0)
        out.append(
            {
                "campaign": campaign,
                "slug": campaign.slug,
                "name": campaign.name,
                "owners": [u.username for u in campaign.owners.all()],
                "sources": campaign.n_sources,
                "systems": campaign.n_systems,
                "annotators": campaign.n_annotators,
                "ratings": ratings.get(campaign.pk, 0),
                "slots": slots,
                "assigned": progress["total"],
                "done": progress["done"],
                "percent": round(100 * progress["done"] / slots) if slots else None,
            }
        )
    return out


def campaign_report_fingerprint(*, campaign: Campaign) -> str:
    """A cheap key that changes whenever the report would: new, reopened or imported judgements, or analysis.

    Two aggregate queries; the report itself reads every judgement.
    """
    judgements = OutputJudgement.objects.filter(
        annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
    ).aggregate(n=Count("id"), last=Max("id"), at=Max("annotation__submitted_at"),
                annotations=Count("annotation_id", distinct=True), last_annotation=Max("annotation_id"))
    units = RatingUnit.objects.filter(source__campaign=campaign).aggregate(
        analysed=Count("id", filter=~Q(analysis_version="")), version=Max("analysis_version"),
        threshold=Max("analysed_threshold"), degraded=Count("id", filter=degraded_units_q()),
    )
    at = judgements["at"].isoformat() if judgements["at"] else "-"
    parts = [
        judgements["n"], judgements["last"], at, judgements["annotations"], judgements["last_annotation"],
        units["analysed"], units["version"], units["threshold"], units["degraded"],
    ]
    return ":".join("-" if p is None else str(p) for p in parts)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def campaign_system_features(*, campaign: Campaign) -> dict[str, Any]:
    """Per system: mean ASSET features of its outputs (from the stored analysis) and its category mix.

    An output's category is the one most of its current judgements give, else the category given
    by an imported file, else the automatic one; outputs with none count as ``"unknown"``.
    """
    votes: dict[int, Counter[str]] = defaultdict(Counter)
    for output_id, category in (
        OutputJudgement.objects.filter(
            annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
        )
        .exclude(category="")
        .values_list("output_id", "category")
    ):
        votes[output_id][category] += 1
    outputs = (
        Output.objects.filter(source__campaign=campaign, source__is_tutorial=False)
        .select_related("system", "unit")
        .only("id", "given_category", "system__name", "unit__auto_category", "unit__analysis")
        .order_by("system__name", "id")
    )
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    mix: dict[str, Counter[str]] = defaultdict(Counter)
    counts: Counter[str] = Counter()
    analysed: Counter[str] = Counter()
    for output in outputs:
        system = output.system.name
        counts[system] += 1
        if votes.get(output.pk):
            # Most votes first; ties broken by name so the result does not depend on row order.
            category = min(votes[output.pk].items(), key=lambda kv: (-kv[1], kv[0]))[0]
        else:
            category = output.given_category or output.unit.auto_category or "unknown"
        mix[system][category] += 1
        features = (output.unit.analysis or {}).get("features") or {}
        if features:
            analysed[system] += 1
        for name in DASHBOARD_FEATURES:
            value = features.get(name)
            if isinstance(value, bool):
                values[system][name].append(1.0 if value else 0.0)
            elif isinstance(value, int | float) and math.isfinite(value):
                values[system][name].append(float(value))
    categories = [c.value for c in Category if any(mix[s][c.value] for s in mix)]
    if any(mix[s]["unknown"] for s in mix):
        categories.append("unknown")
    return {
        "names": [n for n in DASHBOARD_FEATURES if any(values[s][n] for s in values)],
        "categories": categories,
        "systems": [
            {
                "system": system,
                "n_outputs": counts[system],
                "n_analysed": analysed[system],
                "means": {n: _mean(values[system][n]) for n in DASHBOARD_FEATURES if values[system][n]},
                "categories": {c: mix[system][c] for c in categories},
            }
            for system in sorted(counts)
        ],
    }
