"""Quality control of a campaign: attention items, repeated sources, per-annotator verdicts, exclusion.

Attention items are outputs like any other to the annotator (a rating unit of the source), marked
``Output.qc_kind``: ``bad`` (a degraded copy of a real output, ``qc_of``) or ``unrelated`` (a real output of
another source). Repeated sources are copies of real sources (``Source.repeat_of``). Reports and exports
never count either (``evaluation.selectors.campaign_counted_judgements``); the verdicts read them here.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.models import (
    Annotation,
    AnnotatorExclusion,
    Campaign,
    Output,
    OutputJudgement,
    RatingUnit,
    Source,
    System,
    User,
)
from annotation.rules import REPEAT_SUFFIX
from annotation.services.assignments import annotator_release_unfinished, campaign_distribute, campaign_ensure_slots
from annotation.services.imports import text_key
from core.errors import Conflict, ServiceError
from evaluation.stats.annotators import MIN_SHARED
from evaluation.stats.correlation import pearson
from evaluation.stats.quality import QualityRatings, Verdict, annotator_verdict, degrade

MAX_ATTENTION_RATE = 1.0  # every source gets an attention item
MAX_REPEAT_SHARE = 0.5  # half the sources shown twice
CHECK_SYSTEMS = {"bad": "(attention check: degraded copy)", "unrelated": "(attention check: unrelated output)"}


def _real_sources(campaign: Campaign) -> list[Source]:
    return list(campaign.sources.filter(is_tutorial=False, repeat_of__isnull=True).order_by("order", "id"))


def _check_output(source: Source, system: System, text: str, kind: str, of: Output | None, row: int) -> Output:
    unit, _ = RatingUnit.objects.get_or_create(source=source, text_key=text_key(text), defaults={"text": text})
    return Output.objects.create(source=source, system=system, unit=unit, text=text, qc_kind=kind, qc_of=of,
                                 row_index=row)


def quality_share(value: Any, *, field: str, high: float) -> float:
    """A share from 0 to `high`, given as a number or as its text (a page's form, JSON, a command), or a 400
    naming the field: the one rule for ``attention_rate`` and ``repeat_share`` wherever they arrive. A number
    ``float()`` cannot hold (an integer of 400 digits) or that is not finite is refused, never a 500."""
    message = f"{field} must be a number from 0 to {high:g}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ServiceError(message, field=field)
    try:
        share = float(value)
    except (ValueError, OverflowError):
        raise ServiceError(message, field=field) from None
    if not math.isfinite(share) or not 0 <= share <= high:
        raise ServiceError(message, field=field)
    return share


@dataclass
class QualitySetup:
    attention_sources: int = 0
    repeats: int = 0


@transaction.atomic
def campaign_quality_setup(
    *, campaign: Campaign, attention_rate: object, repeat_share: object, seed: int = 0,
    analyse: bool = True,
) -> QualitySetup:
    """Insert attention items into a share `attention_rate` of the sources (one degraded copy of a real
    output each; an unrelated output of another source in every other one) and repeat a share `repeat_share`
    of the sources. Sources that already have them keep them; new slots go to the active annotators. Both
    shares may come as numbers or as text (a page's form): ``quality_share`` reads them."""
    attention_rate = quality_share(attention_rate, field="attention_rate", high=MAX_ATTENTION_RATE)
    repeat_share = quality_share(repeat_share, field="repeat_share", high=MAX_REPEAT_SHARE)
    campaign.attention_rate, campaign.repeat_share = attention_rate, repeat_share
    campaign.save(update_fields=["attention_rate", "repeat_share"])
    rng = random.Random(f"{campaign.pk}:{seed}")
    sources = _real_sources(campaign)
    done = QualitySetup()
    real = {s.pk: list(s.outputs.filter(qc_kind="").select_related("system").order_by("row_index", "id"))
            for s in sources}
    have = set(Output.objects.filter(source__in=sources).exclude(qc_kind="").values_list("source_id", flat=True))
    wanted = math.ceil(attention_rate * len(sources)) if attention_rate else 0
    candidates = [s for s in sources if s.pk not in have and real[s.pk]]
    rng.shuffle(candidates)
    systems = {kind: System.objects.get_or_create(campaign=campaign, name=name)[0]
               for kind, name in CHECK_SYSTEMS.items()}
    for i, source in enumerate(candidates[:max(0, wanted - len(have))]):
        others = [o for s in sources if s.pk != source.pk for o in real[s.pk]]
        original = rng.choice(real[source.pk])
        filler = rng.choice(others).text.split() if others else []
        row = (source.outputs.aggregate(m=Max("row_index"))["m"] or 0) + 1
        _check_output(source, systems["bad"], degrade(original.text, rng=rng, filler=filler), "bad", original, row)
        if i % 2 == 0 and others:
            texts = {o.text for o in real[source.pk]}
            unrelated = [o for o in others if o.text not in texts]
            if unrelated:
                _check_output(source, systems["unrelated"], rng.choice(unrelated).text, "unrelated", None, row + 1)
        done.attention_sources += 1
    repeated = set(campaign.sources.filter(repeat_of__isnull=False).values_list("repeat_of_id", flat=True))
    wanted_repeats = round(repeat_share * len(sources))
    pool = [s for s in sources if s.pk not in repeated]
    rng.shuffle(pool)
    last_order = campaign.sources.aggregate(m=Max("order"))["m"] or 0
    for k, source in enumerate(pool[:max(0, wanted_repeats - len(repeated))]):
        copy = Source.objects.create(campaign=campaign, external_id=source.external_id + REPEAT_SUFFIX,
                                     text=source.text, order=last_order + 1 + k, repeat_of=source)
        for o in source.outputs.filter(qc_kind="").select_related("unit").order_by("row_index", "id"):
            unit, _ = RatingUnit.objects.get_or_create(
                source=copy, text_key=o.unit.text_key,
                defaults={"text": o.unit.text, "auto_category": o.unit.auto_category, "analysis": o.unit.analysis,
                          "analysis_version": o.unit.analysis_version,
                          "analysed_threshold": o.unit.analysed_threshold})
            Output.objects.create(source=copy, system_id=o.system_id, unit=unit, text=o.text, raw_text=o.raw_text,
                                  row_index=o.row_index, given_category=o.given_category)
        done.repeats += 1
    if campaign.memberships.filter(active=True).exists():
        campaign_ensure_slots(campaign=campaign)
        campaign_distribute(campaign=campaign)
    if analyse and done.attention_sources:
        from annotation.services.queue import campaign_schedule_analysis

        campaign_schedule_analysis(campaign=campaign)
    return done


# --- Verdicts ------------------------------------------------------------------------------------------


@dataclass
class AnnotatorQuality:
    annotator: User
    verdict: Verdict
    excluded: AnnotatorExclusion | None
    unrelated: int


def _r_with_others(mine: list[float], others: list[float]) -> float | None:
    """An annotator's Pearson r with the others' mean, over at least ``MIN_SHARED`` shared outputs."""
    return pearson(mine, others) if len(mine) >= MIN_SHARED else None


def campaign_quality(*, campaign: Campaign) -> list[AnnotatorQuality]:
    """Every annotator's quality-control verdict, read from all their submitted judgements (flat values)."""
    rows = list(
        OutputJudgement.objects.filter(
            annotation__source__campaign=campaign, annotation__status=Annotation.Status.SUBMITTED,
            annotation__annotator__isnull=False,
        ).values_list(
            "annotation_id", "annotation__annotator_id", "output_id", "output__qc_kind", "output__qc_of_id",
            "output__system_id", "annotation__source_id", "annotation__source__repeat_of_id", "rating",
        )
    )
    seconds = dict(
        Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED,
                                  annotator__isnull=False, source__repeat_of__isnull=True)
        .values_list("id", "step_seconds")
    )
    by_annotation: dict[int, dict[int, float]] = defaultdict(dict)
    owner: dict[int, int] = {}
    for annotation, annotator, output, _kind, _of, _system, _source, _repeat, rating in rows:
        by_annotation[annotation][output] = rating
        owner[annotation] = annotator
    originals: dict[int, list[float]] = defaultdict(list)
    degraded: dict[int, list[float]] = defaultdict(list)
    unrelated: dict[int, list[float]] = defaultdict(list)
    first: dict[tuple[int, int, int], float] = {}  # (annotator, source, system) -> rating on the original source
    again: dict[tuple[int, int, int], float] = {}
    real: dict[int, dict[int, float]] = defaultdict(dict)  # output -> annotator -> rating
    for annotation, annotator, output, kind, of, system, source, repeat_of, rating in rows:
        if kind == "bad" and of in by_annotation[annotation]:
            originals[annotator].append(by_annotation[annotation][of])
            degraded[annotator].append(rating)
        elif kind == "unrelated":
            unrelated[annotator].append(rating)
        elif repeat_of is not None:
            again[(annotator, repeat_of, system)] = rating
        else:
            first[(annotator, source, system)] = rating
            real[output][annotator] = rating
    mine_vs_others: dict[int, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for ratings in real.values():
        if len(ratings) < 2:
            continue
        for annotator, value in ratings.items():
            others = [v for a, v in ratings.items() if a != annotator]
            mine_vs_others[annotator][0].append(value)
            mine_vs_others[annotator][1].append(math.fsum(others) / len(others))
    per_source_seconds: dict[int, list[float]] = defaultdict(list)
    for annotation, steps in seconds.items():
        if steps and annotation in owner:
            per_source_seconds[owner[annotation]].append(math.fsum(steps.values()))
    exclusions = {e.annotator_id: e for e in AnnotatorExclusion.objects.filter(
        campaign=campaign, reincluded_at__isnull=True).select_related("excluded_by")}
    people = User.objects.filter(memberships__campaign=campaign).order_by("pseudonym")
    out = []
    for user in people:
        pk = user.pk
        repeats = [(first[k], v) for k, v in again.items() if k[0] == pk and k in first]
        verdict = annotator_verdict(QualityRatings(
            rater=user.pseudonym, originals=originals[pk], degraded=degraded[pk], unrelated=unrelated[pk],
            repeats=repeats, seconds_per_source=per_source_seconds[pk],
            r_with_others=_r_with_others(*mine_vs_others[pk]) if pk in mine_vs_others else None,
        ))
        out.append(AnnotatorQuality(user, verdict, exclusions.get(pk), len(unrelated[pk])))
    return out


def quality_rows(items: list[AnnotatorQuality]) -> list[dict[str, Any]]:
    """The verdicts as plain values (the dashboard table and the API)."""
    return [
        {
            "annotator": q.annotator.pseudonym,
            "username": q.annotator.username,
            "n_pairs": q.verdict.n_pairs,
            "mwu_u": q.verdict.mwu_u,
            "mwu_p": q.verdict.mwu_p,
            "reliable": q.verdict.reliable,
            "unrelated_mean": q.verdict.unrelated_mean,
            "repeat_gap": q.verdict.repeat_gap,
            "n_repeats": q.verdict.n_repeats,
            "median_seconds": q.verdict.median_seconds,
            "r_with_others": q.verdict.r_with_others,
            "flagged": q.verdict.flagged,
            "reasons": q.verdict.reasons,
            "excluded": q.excluded is not None,
            "excluded_by": q.excluded.excluded_by.username if q.excluded and q.excluded.excluded_by else None,
            "excluded_at": q.excluded.excluded_at.isoformat() if q.excluded else None,
            "crowd_end": q.excluded.crowd_end if q.excluded else None,
        }
        for q in items
    ]


# --- Exclusion -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Excluded:
    exclusion: AnnotatorExclusion
    released: int
    """Unfinished sources taken back from the annotator and returned to the pool."""


def crowd_end_choice(value: Any) -> str:
    """The exclusion form's and API's ``crowd_end`` (what an excluded crowd worker sees at the end), or a 400
    naming the field; empty means the default, no completion code."""
    if value in (None, ""):
        return AnnotatorExclusion.CrowdEnd.EXCLUDED
    if value not in AnnotatorExclusion.CrowdEnd.values:
        raise ServiceError(f"crowd_end must be one of {', '.join(AnnotatorExclusion.CrowdEnd.values)}",
                           field="crowd_end")
    return str(value)


@transaction.atomic
def annotator_exclude(
    *, campaign: Campaign, annotator: User, by: User, reason: str = "",
    crowd_end: str = AnnotatorExclusion.CrowdEnd.EXCLUDED,
) -> Excluded:
    """Leave the annotator's ratings out of every report, alpha and export of the campaign (recorded) and end
    their work on it at once: they can no longer take, save or submit its sources, and their unfinished ones
    go back to the pool for the others. ``crowd_end``: what they see at the end if they came through the
    crowd link (``AnnotatorExclusion.CrowdEnd``)."""
    crowd_end = crowd_end_choice(crowd_end)
    if not campaign.memberships.filter(annotator=annotator).exists():
        raise ServiceError(f"{annotator.pseudonym} is not an annotator of this campaign", field="annotator")
    if AnnotatorExclusion.objects.filter(campaign=campaign, annotator=annotator,
                                         reincluded_at__isnull=True).exists():
        raise Conflict(f"{annotator.pseudonym} is already excluded", field="annotator")
    exclusion = AnnotatorExclusion.objects.create(campaign=campaign, annotator=annotator, excluded_by=by,
                                                  reason=reason[:2000], crowd_end=crowd_end)
    released = annotator_release_unfinished(campaign=campaign, annotator=annotator)
    return Excluded(exclusion, released)


@transaction.atomic
def annotator_reinclude(*, campaign: Campaign, annotator: User, by: User) -> AnnotatorExclusion:
    exclusion = AnnotatorExclusion.objects.select_for_update().filter(
        campaign=campaign, annotator=annotator, reincluded_at__isnull=True).first()
    if exclusion is None:
        raise ServiceError(f"{annotator.pseudonym} is not excluded", field="annotator")
    exclusion.reincluded_by, exclusion.reincluded_at = by, timezone.now()
    exclusion.save(update_fields=["reincluded_by", "reincluded_at"])
    return exclusion
