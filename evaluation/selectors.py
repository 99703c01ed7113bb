"""Reads that turn a campaign's stored ratings into the records the statistics core consumes."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db.models import Case, Count, Exists, F, Func, Max, OuterRef, Q, QuerySet, Subquery, When

from annotation.models import (
    Annotation,
    AnnotatorExclusion,
    AspectJudgement,
    Assignment,
    Campaign,
    Category,
    Output,
    OutputJudgement,
    RatingUnit,
    Slot,
    User,
    rater_key,
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
from evaluation.stats.zscores import with_zscores

JUDGEMENT_ORDER = ("annotation__source__order", "output__row_index", "output_id", "annotation_id")
"""The order every reader of a campaign's judgements sees them in: source, file row, output, annotation."""

ROW_CHUNK = 2000
"""Rows fetched at a time when judgements are streamed (``QuerySet.iterator``)."""


def campaign_excluded_annotators(campaign: Campaign) -> list[User]:
    """The annotators a researcher has excluded from the campaign's reports (open exclusions), by pseudonym."""
    return list(
        User.objects.filter(exclusions__campaign=campaign, exclusions__reincluded_at__isnull=True)
        .order_by("pseudonym")
    )


def campaign_counted_judgements(campaign: Campaign) -> QuerySet[OutputJudgement]:
    """The one query of the judgements that count for a campaign: those of its current submitted annotations,
    on real system outputs (no attention items) of original sources (no repeats), by raters who are not
    excluded.

    Every reader builds on it (report, z-scores, votes, fingerprint, exports, meta-evaluation, LENS training),
    so a rule on whose ratings count is a filter added here and nowhere else; the report cache's key
    (``campaign_report_fingerprint``) is computed on it too.
    """
    return counted_judgements([campaign.pk])


def counted_judgements(campaign_ids: Sequence[int]) -> QuerySet[OutputJudgement]:
    """:func:`campaign_counted_judgements` over several campaigns at once (the campaign list's counts)."""
    excluded = AnnotatorExclusion.objects.filter(
        campaign_id=OuterRef("annotation__source__campaign_id"), annotator_id=OuterRef("annotation__annotator_id"),
        reincluded_at__isnull=True,
    )
    return OutputJudgement.objects.filter(
        annotation__source__campaign_id__in=campaign_ids, annotation__status=Annotation.Status.SUBMITTED,
        output__qc_kind="", annotation__source__repeat_of__isnull=True,
    ).exclude(Exists(excluded))


def campaign_counted_outputs(campaign: Campaign) -> QuerySet[Output]:
    """The system outputs a report or export lists: no attention items, no repeated sources."""
    return Output.objects.filter(source__campaign=campaign, qc_kind="", source__repeat_of__isnull=True)


def campaign_judgements(campaign: Campaign) -> QuerySet[OutputJudgement]:
    """The counting judgements as model instances, with everything a record needs (readers that need the
    annotation objects; the report and z-scores read :func:`campaign_judgement_rows`)."""
    return (
        campaign_counted_judgements(campaign)
        .select_related(
            "output__system", "output__unit", "annotation__annotator", "annotation__source",
        )
        .order_by(*JUDGEMENT_ORDER)
    )


class JudgementRow(NamedTuple):
    """One counting judgement as flat values (no model instances)."""

    annotation_id: int
    output_id: int
    rating: float
    z_score: float | None
    category: str
    rater: str  # ``Annotation.rater_key``
    source_id: int
    source: str  # the source's external id
    system: str
    given_category: str  # the output's, from an imported file
    auto_category: str  # the output's rating unit's automatic category
    unit: str | None  # the rating unit (``RatingRecord.unit``); None for an imported file's rows


def campaign_judgement_rows(campaign: Campaign) -> list[JudgementRow]:
    """The counting judgements in :data:`JUDGEMENT_ORDER`, as flat values (no model instances, no JSON column).

    Three join-free reads instead of one five-way join sorted by the database: the judgements (streamed, five
    columns each, unordered), their annotations' rater and source, and the campaign's outputs; the rows are
    put in order here. At 120,000 ratings the database's sort of the wide joined rows spilled to disk and took
    most of the time (1.2 s against 0.23 s for the narrow read, EXPLAIN ANALYZE on PostgreSQL).
    """
    annotations = {
        pk: (rater_key(annotator_id=annotator_id, pseudonym=pseudonym, import_batch_id=batch_id, rater_slot=slot),
             source_id, source, order, batch_id is not None)
        for pk, annotator_id, pseudonym, batch_id, slot, source_id, source, order in Annotation.objects.filter(
            source__campaign=campaign, status=Annotation.Status.SUBMITTED
        ).order_by().values_list("id", "annotator_id", "annotator__pseudonym", "import_batch_id", "rater_slot",
                                 "source_id", "source__external_id", "source__order").iterator(chunk_size=ROW_CHUNK)
    }
    outputs = {
        pk: (row_index, system, given, automatic, unit_id)
        for pk, row_index, system, given, automatic, unit_id in Output.objects.filter(source__campaign=campaign)
        .order_by().values_list("id", "row_index", "system__name", "given_category", "unit__auto_category", "unit_id")
        .iterator(chunk_size=ROW_CHUNK)
    }
    keyed: list[tuple[tuple[int, int, int, int], JudgementRow]] = []
    judgements = campaign_counted_judgements(campaign).order_by().values_list(
        "annotation_id", "output_id", "rating", "z_score", "category"
    )
    for annotation_id, output_id, rating, z, category in judgements.iterator(chunk_size=ROW_CHUNK):
        rater, source_id, source, order, imported = annotations[annotation_id]
        row_index, system, given, automatic, unit_id = outputs[output_id]
        keyed.append((
            (order, row_index, output_id, annotation_id),  # JUDGEMENT_ORDER
            JudgementRow(annotation_id, output_id, rating, z, category, rater, source_id, source, system, given,
                         automatic, None if imported else str(unit_id)),  # a file rated each row on its own
        ))
    keyed.sort(key=lambda pair: pair[0])
    return [row for _, row in keyed]


def judgement_votes(rows: Iterable[JudgementRow]) -> dict[int, list[str]]:
    """Output pk -> the categories its judgements give (blank ones left out), in judgement order."""
    votes: dict[int, list[str]] = defaultdict(list)
    for row in rows:
        if row.category:
            votes[row.output_id].append(row.category)
    return votes


def campaign_output_votes(campaign: Campaign) -> dict[int, list[str]]:
    """Output pk -> the categories its current submitted judgements give (blank ones left out)."""
    votes: dict[int, list[str]] = defaultdict(list)
    for output_id, category in (
        campaign_counted_judgements(campaign)
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
        counted_judgements(campaign_ids)
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


def campaign_annotation_seconds(campaign: Campaign) -> dict[int, float | None]:
    """Annotation pk -> the seconds its rater spent on it (sum of its steps; None when not recorded)."""
    return {
        pk: (sum(steps.values()) if steps else None)
        for pk, steps in Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED)
        .exclude(step_seconds={})
        .values_list("id", "step_seconds")
    }


def rating_records(rows: Sequence[JudgementRow], seconds: Mapping[int, float | None]) -> list[RatingRecord]:
    """One record per judgement; each carries its output's final category (``annotation.rules.final_category``,
    the same for every rater of the output) and its annotation's seconds."""
    votes = judgement_votes(rows)
    per_output: dict[int, tuple[str, str | None]] = {}  # output pk -> (its id as text, its final category)
    records: list[RatingRecord] = []
    append = records.append
    for annotation_id, output_id, rating, z, _, rater, _, source, system, given, automatic, unit in rows:
        known = per_output.get(output_id)
        if known is None:
            known = per_output[output_id] = (
                str(output_id), final_category(votes.get(output_id, ()), given=given, automatic=automatic)
            )
        append(RatingRecord(source=source, output=known[0], system=system, rater=rater, raw=rating, z=z,
                            category=known[1], seconds=seconds.get(annotation_id), unit=unit))
    return records


def campaign_rating_records(campaign: Campaign) -> list[RatingRecord]:
    """One record per current submitted judgement (see :func:`rating_records`)."""
    return rating_records(list(campaign_judgement_rows(campaign)), campaign_annotation_seconds(campaign))


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
            # Quality control is not data: repeated sources and the attention items' systems are not counted.
            n_sources=Count("sources", filter=Q(sources__is_tutorial=False, sources__repeat_of__isnull=True),
                            distinct=True),
            n_systems=Count("systems", filter=Q(systems__outputs__qc_kind=""), distinct=True),
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


def _scalar(rows: QuerySet[Any], function: str) -> Subquery:
    """COUNT or MAX of the rows' ids as a scalar subquery (no GROUP BY)."""
    return Subquery(rows.order_by().annotate(v=Func(F("id"), function=function)).values("v")[:1])


def campaign_report_fingerprint(*, campaign: Campaign) -> str:
    """A cheap key that changes whenever the report would: new, reopened or imported judgements (aspect
    ratings included), or analysis.

    Three aggregate queries; the report itself reads every judgement.
    """
    judgements = campaign_counted_judgements(campaign).aggregate(
        n=Count("id"), last=Max("id"), at=Max("annotation__submitted_at"),
        annotations=Count("annotation_id", distinct=True), last_annotation=Max("annotation_id"))
    units = RatingUnit.objects.filter(source__campaign=campaign).aggregate(
        analysed=Count("id", filter=~Q(analysis_version="")), version=Max("analysis_version"),
        threshold=Max("analysed_threshold"), degraded=Count("id", filter=degraded_units_q()),
    )
    # Aspect ratings and exclusions: one query of scalar subqueries.
    aspect_rows = AspectJudgement.objects.filter(
        annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED
    )
    exclusion_rows = AnnotatorExclusion.objects.filter(campaign=campaign)
    others = Campaign.objects.filter(pk=campaign.pk).values(
        aspects_n=_scalar(aspect_rows, "COUNT"), aspects_last=_scalar(aspect_rows, "MAX"),
        excluded_n=_scalar(exclusion_rows, "COUNT"), excluded_last=_scalar(exclusion_rows, "MAX"),
        excluded_open=_scalar(exclusion_rows.filter(reincluded_at__isnull=True), "COUNT"),
    ).get()
    aspects = {"n": others["aspects_n"], "last": others["aspects_last"]}
    at = judgements["at"].isoformat() if judgements["at"] else "-"
    parts = [
        judgements["n"], judgements["last"], at, judgements["annotations"], judgements["last_annotation"],
        units["analysed"], units["version"], units["threshold"], units["degraded"],
    ]
    if aspects["n"]:  # multi-aspect campaigns only, so other campaigns keep their keys
        parts += [f"aspects{aspects['n']}", aspects["last"]]
    if others["excluded_n"]:  # campaigns where nobody was ever excluded keep their keys
        parts += [f"excluded{others['excluded_open']}", others["excluded_n"], others["excluded_last"]]
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
        .order_by("system__name", "id")
        .values_list("id", "given_category", "system__name", "unit__auto_category", "unit__analysis__features")
    )
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    mix: dict[str, Counter[str]] = defaultdict(Counter)
    counts: Counter[str] = Counter()
    analysed: Counter[str] = Counter()
    for pk, given, system, automatic, stored_features in outputs.iterator(chunk_size=ROW_CHUNK):
        counts[system] += 1
        category = category_label(final_category(votes.get(pk, ()), given=given, automatic=automatic))
        mix[system][category] += 1
        features = stored_features if isinstance(stored_features, dict) else {}
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


def judgement_zscores(rows: Sequence[JudgementRow]) -> dict[tuple[int, int], float]:
    """WMT z-scores of collected ratings among ``rows``, keyed by (annotation id, output id), computed per rater
    over all of them. Imported ratings keep theirs (and are left out of the result)."""
    records = [
        RatingRecord(source=str(r.source_id), output=str(r.output_id), system="", rater=r.rater, raw=r.rating,
                     z=r.z_score)
        for r in rows
    ]
    filled, _ = with_zscores(records)
    return {
        (r.annotation_id, r.output_id): f.z
        for r, f in zip(rows, filled, strict=True)
        if f.z is not None and r.z_score is None
    }


def campaign_zscores(*, campaign: Campaign) -> dict[tuple[int, int], float]:
    """WMT z-scores of collected ratings, keyed by (annotation id, output id). Imported ones keep theirs."""
    return judgement_zscores(list(campaign_judgement_rows(campaign)))
