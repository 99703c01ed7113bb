"""Exports: the SimpEval CSV layout (exactly the released file for imported data) and a full JSONL.

They live in evaluation because collected ratings are written with their WMT z-scores, which evaluation
computes (`campaign_zscores`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import F

from annotation.formats.simpeval import (
    SENTENCE_TYPE_NAMES,
    default_columns,
    format_rating,
    format_z,
    write_simpeval,
)
from annotation.models import Annotation, Campaign, ImportBatch, Source
from annotation.rules import final_category
from evaluation.export_extras import output_extras
from evaluation.selectors import (
    ROW_CHUNK,
    campaign_aspect_ratings,
    campaign_counted_outputs,
    campaign_excluded_annotators,
    campaign_judgement_rows,
    campaign_output_votes,
    campaign_zscores,
    judgement_zscores,
)


class _Rater(NamedTuple):
    pk: int
    rater_slot: str
    submitted_at: datetime | None


def _slot_order(annotations: list[_Rater]) -> list[_Rater]:
    """Imported slots keep their column number; collected annotations follow in submission order."""

    def key(a: _Rater) -> tuple[int, int, Any]:
        if a.rater_slot.startswith("rating_"):
            return (0, int(a.rater_slot.split("_")[1]), a.pk)
        return (1, 0, (a.submitted_at, a.pk))

    return sorted(annotations, key=key)


def campaign_export_simpeval(*, campaign: Campaign) -> str:
    """The campaign's outputs and ratings as a SimpEval CSV.

    A campaign imported from a SimpEval file is written in that file's layout (columns, z-score
    spelling, number style), so importing then exporting gives the released file back. Other
    campaigns use the SimpEval 2022 layout; their z-scores are computed per rater (WMT style).
    """
    batch = campaign.imports.filter(kind=ImportBatch.Kind.SIMPEVAL).order_by("created_at").first()
    judgements = campaign_judgement_rows(campaign)
    zscores = judgement_zscores(judgements)
    per_output: dict[int, dict[int, tuple[float, float | None, str]]] = defaultdict(dict)
    raters = {
        pk: _Rater(pk, slot, at)
        for pk, slot, at in Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED)
        .order_by().values_list("id", "rater_slot", "submitted_at")
    }
    annotations_by_source: dict[int, list[_Rater]] = defaultdict(list)
    seen: set[int] = set()
    for j in judgements:
        if j.annotation_id not in seen:
            seen.add(j.annotation_id)
            annotations_by_source[j.source_id].append(raters[j.annotation_id])
    column_of: dict[int, int] = {}
    n_ratings = 0
    for source_annotations in annotations_by_source.values():
        ordered = _slot_order(source_annotations)
        for position, a in enumerate(ordered, start=1):
            column_of[a.pk] = int(a.rater_slot.split("_")[1]) if a.rater_slot.startswith("rating_") else position
        n_ratings = max(n_ratings, max(column_of[a.pk] for a in ordered))
    for j in judgements:
        z = j.z_score if j.z_score is not None else zscores.get((j.annotation_id, j.output_id))
        per_output[j.output_id][column_of[j.annotation_id]] = (j.rating, z, j.category)
    if batch is not None:
        layout = batch.layout
        columns = list(layout["columns"])
        n_ratings = max(n_ratings, int(layout["n_ratings"]))
        z_suffix = layout["z_suffix"]
        style = layout["rating_style"]
    else:
        columns = default_columns(max(n_ratings, 1))
        z_suffix, style = "zscore", "float"
    outputs = (
        campaign_counted_outputs(campaign)
        .order_by(F("import_batch_id").asc(nulls_last=True), "row_index", "source__order", "id")
        .values_list("id", "external_id", "source__external_id", "source__text", "raw_text", "text", "system__name",
                     "given_category", "unit__auto_category")
    )
    rows = []
    for pk, external_id, source_id, source_text, raw_text, text, system, given, automatic in outputs.iterator(
        chunk_size=ROW_CHUNK
    ):
        ratings = per_output.get(pk, {})
        # The file's own category first, so an imported file comes back unchanged.
        category = final_category(
            (c for _, _, c in ratings.values()), given=given, automatic=automatic, prefer_given=True,
        )
        row: dict[str, str] = {
            "id": external_id,
            "original_id": source_id,
            "original": source_text,
            "generation": raw_text if raw_text else text,
            "processed_generation": text,
            "system": system,
            "sentence_type": SENTENCE_TYPE_NAMES.get(category or "", ""),
        }
        for k in range(1, n_ratings + 1):
            rating, z, _ = ratings.get(k, (None, None, ""))
            row[f"rating_{k}"] = format_rating(rating, style)
            row[f"rating_{k}_{z_suffix}"] = format_z(z)
        rows.append(row)
    return write_simpeval(rows, columns=columns)


def campaign_export_jsonl(*, campaign: Campaign) -> Iterator[str]:
    """Everything else, one source per line: references, outputs with their analysis, and every
    annotation with pseudonyms, categories (automatic and final), edits (automatic and corrected),
    ranks, ratings, z-scores and time per step.

    Multi-aspect campaigns also carry, per annotation (rater), ``aspects``: each output's rating per aspect
    (``raw`` on the aspect's ``scale``, ``z`` released or computed per rater and aspect, ``z_released``), and
    per output ``aspects``: the mean raw and mean z per aspect over its raters."""
    zscores = campaign_zscores(campaign=campaign)
    aspect_ratings = campaign_aspect_ratings(campaign)
    has_aspects = bool(aspect_ratings.scales)
    aspect_z: dict[tuple[str, str, str], float | None] = {
        (aspect, r.rater, r.output): r.z for aspect, records in aspect_ratings.records.items() for r in records
    }
    aspect_means = aspect_ratings.output_means()
    extras = [extra(campaign) for extra in output_extras()]  # metrics' stored scores (evaluation.export_extras)
    prefetch = ["references", "units", "outputs__system", "annotations__judgements", "annotations__annotator",
                "annotations__import_batch"]
    if has_aspects:
        prefetch.append("annotations__aspect_judgements")
    excluded = {u.pk for u in campaign_excluded_annotators(campaign)}
    votes = campaign_output_votes(campaign)  # the counted judgements' categories (evaluation.selectors)
    # Repeated sources and attention items are quality control, never data: left out (see quality_report).
    sources = (
        Source.objects.filter(campaign=campaign, repeat_of__isnull=True)
        .prefetch_related(*prefetch).order_by("order", "id")
    )
    for source in sources:
        units = {u.pk: u for u in source.units.all()}
        checks = {o.pk for o in source.outputs.all() if o.qc_kind}
        annotations = []
        for a in source.annotations.all():
            if a.status == Annotation.Status.DRAFT:
                continue
            entry: dict[str, Any] = {
                "rater": a.rater_key,
                "imported_from": a.import_batch.filename if a.import_batch is not None else None,
                "status": a.status,
                # Excluded by a researcher (quality control): kept here, left out of reports and the CSV.
                "excluded": a.annotator_id in excluded,
                "version": a.version,
                "submitted_at": a.submitted_at.isoformat() if a.submitted_at else None,
                "step_seconds": a.step_seconds,
                "step_timestamps": a.step_timestamps,
                "judgements": [
                    {
                        "output": j.output_id,
                        "category": j.category or None,
                        "auto_category": j.auto_category or None,
                        "edits": j.edits,
                        "auto_edits": j.auto_edits,
                        "rank": j.rank,
                        "rating": j.rating,
                        "z_score": j.z_score if j.z_score is not None else zscores.get((a.pk, j.output_id)),
                    }
                    for j in a.judgements.all()
                    if j.output_id not in checks
                ],
            }
            if has_aspects:
                entry["aspects"] = [
                    {
                        "output": aj.output_id,
                        "aspect": aj.aspect,
                        "scale": aj.scale,
                        "raw": aj.raw,
                        "z": aspect_z.get((aj.aspect, a.rater_key, str(aj.output_id))),
                        "z_released": aj.z is not None,
                    }
                    for aj in a.aspect_judgements.all()
                ]
            annotations.append(entry)
        outputs = []
        for o in source.outputs.all():
            if o.qc_kind:
                continue
            unit = units[o.unit_id]
            outputs.append(
                {
                    "id": o.pk,
                    "system": o.system.name,
                    "text": o.text,
                    "raw_text": o.raw_text or None,
                    "unit": o.unit_id,
                    "given_category": o.given_category or None,
                    "auto_category": unit.auto_category or None,
                    "category": final_category(
                        votes.get(o.pk, ()), given=o.given_category, automatic=unit.auto_category
                    ),
                    "analysis": unit.analysis or None,
                }
            )
            if has_aspects:
                means = aspect_means.get(o.pk)
                outputs[-1]["aspects"] = {
                    aspect: {"raw": means.raw.get(aspect), "z": means.z.get(aspect)}
                    for aspect in aspect_ratings.scales
                    if means is not None and aspect in means.raw
                }
            for extra in extras:
                outputs[-1].update(extra.get(o.pk, {}))
        yield json.dumps(
            {
                "id": source.external_id,
                "source": source.text,
                "references": [r.text for r in source.references.all()],
                "outputs": outputs,
                "annotations": annotations,
            },
            ensure_ascii=False,
        ) + "\n"
