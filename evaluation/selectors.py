"""Reads that turn a campaign's stored ratings into the records the statistics core consumes."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, Count, F, Max, Q, QuerySet, When

from annotation.models import (
    Annotation,
    AspectJudgement,
    Assignment,
    Campaign,
    Category,
    Output,
    OutputJudgement,
    RatingUnit,
    Slot,
    User,
)
from annotation.rules import UNCATEGORISED, category_label, final_category, percent
from annotation.selectors import (
    CampaignPurpose,
    campaign_aspect_scales,
    campaign_list_visible,
    degraded_units_q,
)
from evaluation.stats.aspects import AspectOutputMeans, ZOrigin, aspect_output_means, aspects_with_zscores, z_origin
from evaluation.stats.records import RatingRecord


def campaign_judgements(campaign: Campaign) -> QuerySet[OutputJudgement]:
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


def campaign_output_votes(campaign: Campaign) -> dict[int, list[str]]:
    """Output pk -> the categories its current submitted judgements give (blank ones left out)."""
    votes: dict[int, list[str]] = defaultdict(list)
    for output_id, category in (
        OutputJudgement.objects.filter(
            annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
        )
        .exclude(category="")
        .order_by("output_id", "id")
        .values_list("output_id", "category")
    ):
        votes[output_id].append(category)
    return dict(votes)


def campaign_rating_counts(campaign_ids: Sequence[int]) -> dict[int, int]:
    """Ratings given per campaign, counted by ``evaluation.stats.records.rating_key`` (one per rater and
    rating unit, so two systems with the same output text count once; an imported file's rows one each, as
    its raters rated them), in SQL: the campaign list shows the same number as the report
    (``counts.ratings``) without building it."""
    rows = (
        OutputJudgement.objects.filter(
            annotation__source__campaign_id__in=campaign_ids, annotation__status=Annotation.Status.SUBMITTED
        )
        .order_by()  # no model ordering in the SELECT DISTINCT
        .annotate(rated=Case(When(annotation__import_batch__isnull=True, then=F("output__unit_id")),
                             default=-F("output_id")))
        .values_list("annotation__source__campaign_id", "annotation_id", "rated")
        .distinct()
    )
    counts: dict[int, int] = defaultdict(int)
    for campaign_id, _annotation, _rated in rows:
        counts[campaign_id] += 1
    return dict(counts)


def campaign_rating_records(campaign: Campaign) -> list[RatingRecord]:
    """One record per current submitted judgement; each carries its output's final category
    (``annotation.rules.final_category``), the same for every rater of the output."""
    judgements = list(campaign_judgements(campaign))
    votes: dict[int, list[str]] = defaultdict(list)
    for j in judgements:
        if j.category:
            votes[j.output_id].append(j.category)
    records: list[RatingRecord] = []
    for j in judgements:
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
                category=final_category(
                    votes.get(j.output_id, ()), given=j.output.given_category, automatic=j.output.unit.auto_category
                ),
                seconds=seconds,
                # An imported file rated each output row on its own; the page shows a unit once.
                unit=None if annotation.import_batch_id else str(j.output.unit_id),
            )
        )
    return records


# --- Multi-aspect ratings ----------------------------------------------------------------------------


@dataclass
class CampaignAspectRatings:
    """A campaign's aspect ratings as records, z-scores filled (released kept, else WMT per rater and aspect).

    Records: ``source`` = source external id, ``output`` = str(output pk), ``rater`` = the annotation's
    rater key (``"<import batch>:worker_7"``, ``"<import batch>:aggregate"``).
    """

    scales: dict[str, str] = field(default_factory=dict)  # aspect -> scale, file order
    records: dict[str, list[RatingRecord]] = field(default_factory=dict)
    z_origins: dict[str, ZOrigin] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def output_means(self) -> dict[int, AspectOutputMeans]:
        """Output pk -> mean raw and mean z per aspect."""
        return {int(output): means for output, means in aspect_output_means(self.records).items()}


def campaign_aspect_ratings(campaign: Campaign) -> CampaignAspectRatings:
    """Every submitted aspect rating of a campaign (flat values, one query plus the aspect list)."""
    result = CampaignAspectRatings(scales=campaign_aspect_scales(campaign))
    if not result.scales:
        return result
    rows = (
        AspectJudgement.objects.filter(
            annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
        )
        .order_by("annotation__source__order", "output__row_index", "output_id", "annotation_id", "id")
        .values_list(
            "aspect", "raw", "z", "output_id", "output__system__name", "annotation__source__external_id",
            "annotation__import_batch_id", "annotation__rater_slot", "annotation__annotator__pseudonym",
        )
    )
    raw_records: dict[str, list[RatingRecord]] = {aspect: [] for aspect in result.scales}
    released: dict[str, int] = dict.fromkeys(result.scales, 0)
    for aspect, raw, z, output_id, system, source, batch, slot, pseudonym in rows:
        rater = pseudonym if pseudonym else f"{batch}:{slot}"
        raw_records[aspect].append(
            RatingRecord(source=source, output=str(output_id), system=system, rater=rater, raw=raw, z=z)
        )
        released[aspect] += z is not None
    result.records, result.warnings = aspects_with_zscores(raw_records)
    result.z_origins = {aspect: z_origin(result.records[aspect], released[aspect]) for aspect in raw_records}
    return result


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


def campaign_list_for_researcher(*, user: User, slug: str | None = None) -> list[dict[str, Any]]:
    """The user's campaigns (admins: all; only `slug` if given), newest first, with counts and progress."""
    campaigns = campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE)
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
    ratings = campaign_rating_counts(ids)
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
                "percent": percent(progress["done"], slots),
            }
        )
    return out


def campaign_report_fingerprint(*, campaign: Campaign) -> str:
    """A cheap key that changes whenever the report would: new, reopened or imported judgements (aspect
    ratings included), or analysis.

    Three aggregate queries; the report itself reads every judgement.
    """
    judgements = OutputJudgement.objects.filter(
        annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
    ).aggregate(n=Count("id"), last=Max("id"), at=Max("annotation__submitted_at"),
                annotations=Count("annotation_id", distinct=True), last_annotation=Max("annotation_id"))
    units = RatingUnit.objects.filter(source__campaign=campaign).aggregate(
        analysed=Count("id", filter=~Q(analysis_version="")), version=Max("analysis_version"),
        threshold=Max("analysed_threshold"), degraded=Count("id", filter=degraded_units_q()),
    )
    aspects = AspectJudgement.objects.filter(
        annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
    ).aggregate(n=Count("id"), last=Max("id"))
    at = judgements["at"].isoformat() if judgements["at"] else "-"
    parts = [
        judgements["n"], judgements["last"], at, judgements["annotations"], judgements["last_annotation"],
        units["analysed"], units["version"], units["threshold"], units["degraded"],
    ]
    if aspects["n"]:  # multi-aspect campaigns only, so other campaigns keep their keys
        parts += [f"aspects{aspects['n']}", aspects["last"]]
    return ":".join("-" if p is None else str(p) for p in parts)


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def campaign_system_features(*, campaign: Campaign) -> dict[str, Any]:
    """Per system: mean ASSET features of its outputs (from the stored analysis) and its category mix.

    An output's category is ``annotation.rules.final_category``; outputs with none count as ``"unknown"``.
    """
    votes = campaign_output_votes(campaign)
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
        category = category_label(
            final_category(votes.get(output.pk, ()), given=output.given_category, automatic=output.unit.auto_category)
        )
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
    if any(mix[s][UNCATEGORISED] for s in mix):
        categories.append(UNCATEGORISED)
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
