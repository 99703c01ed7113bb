"""The report's records, z-scores and rated outputs from flat queries equal those the ORM-instance path built.

The reference functions below are the implementations the flat readers replaced (issue 12), kept here to pin
the results: same records in the same order, same z-scores, same rated outputs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from annotation.models import Annotation, Campaign, OutputJudgement
from annotation.rules import UNCATEGORISED, category_label, final_category
from annotation.services.imports import campaign_import
from evaluation.selectors import campaign_judgements, campaign_rating_records, campaign_zscores
from evaluation.stats.records import RatingRecord
from evaluation.stats.zscores import with_zscores
from metrics.selectors import campaign_rated_outputs
from tests.evaluation.test_report_collected import STYLE, submit

pytestmark = pytest.mark.django_db


def reference_records(campaign: Campaign) -> list[RatingRecord]:
    judgements = list(campaign_judgements(campaign))
    votes: dict[int, list[str]] = defaultdict(list)
    for j in judgements:
        if j.category:
            votes[j.output_id].append(j.category)
    out = []
    for j in judgements:
        annotation = j.annotation
        seconds = sum(annotation.step_seconds.values()) if annotation.step_seconds else None
        out.append(RatingRecord(
            source=annotation.source.external_id, output=str(j.output_id), system=j.output.system.name,
            rater=annotation.rater_key, raw=j.rating, z=j.z_score,
            category=final_category(votes.get(j.output_id, ()), given=j.output.given_category,
                                    automatic=j.output.unit.auto_category),
            seconds=seconds,
            # An imported file rated each output row on its own; the page shows a rating unit once.
            unit=None if annotation.import_batch_id else str(j.output.unit_id),
        ))
    return out


def reference_zscores(campaign: Campaign) -> dict[tuple[int, int], float]:
    judgements = list(campaign_judgements(campaign))
    records = [RatingRecord(source=str(j.annotation.source_id), output=str(j.output_id), system="",
                            rater=j.annotation.rater_key, raw=j.rating, z=j.z_score) for j in judgements]
    filled, _ = with_zscores(records)
    return {(j.annotation_id, j.output_id): r.z for j, r in zip(judgements, filled, strict=True)
            if r.z is not None and j.z_score is None}


def reference_rated(campaign: Campaign) -> list[tuple[object, ...]]:
    zscores = reference_zscores(campaign)
    rated: dict[int, dict[str, Any]] = {}
    votes: dict[int, list[str]] = defaultdict(list)
    for j in campaign_judgements(campaign):
        entry = rated.setdefault(j.output_id, {
            "source_pk": j.annotation.source.pk, "source": j.annotation.source.external_id,
            "complex": j.annotation.source.text, "system": j.output.system.name, "text": j.output.text,
            "given": (j.output.given_category, j.output.unit.auto_category), "ratings": {}, "z": [],
        })
        entry["ratings"][j.annotation.rater_key] = float(j.rating)
        z = j.z_score if j.z_score is not None else zscores.get((j.annotation_id, j.output_id))
        if z is not None:
            entry["z"].append(float(z))
        if j.category:
            votes[j.output_id].append(j.category)
    out: list[tuple[object, ...]] = []
    for pk, e in rated.items():
        given, automatic = e["given"]
        category = category_label(final_category(votes.get(pk, ()), given=given, automatic=automatic))
        out.append((e["source_pk"], e["source"], e["complex"], pk, e["system"], e["text"], category or UNCATEGORISED,
                    e["ratings"], e["z"]))
    return out


def reference_features(campaign: Campaign) -> dict[int, tuple[str, str | None, dict[str, object]]]:
    from annotation.models import Output
    from evaluation.selectors import campaign_output_votes

    votes = campaign_output_votes(campaign)
    return {
        o.pk: (o.system.name, category_label(final_category(votes.get(o.pk, ()), given=o.given_category,
                                                              automatic=o.unit.auto_category)),
               (o.unit.analysis or {}).get("features") or {})
        for o in Output.objects.filter(source__campaign=campaign, source__is_tutorial=False).select_related(
            "system", "unit")
    }


def flat_rated(campaign: Campaign) -> list[tuple[object, ...]]:
    return [(r.source_pk, r.source, r.complex, r.output_pk, r.system, r.text, r.category, r.ratings, r.zscores)
            for r in campaign_rated_outputs(campaign)]


@pytest.fixture
def mixed(demo_campaign, annotators, tmp_path):
    """Collected ratings from three annotators (with seconds), a reopened draft, and imported rating slots."""
    from annotation.models import Assignment
    from annotation.services.assignments import campaign_add_annotators

    campaign_add_annotators(campaign=demo_campaign, annotators=annotators)
    for user, (scale, offset) in zip(annotators, STYLE, strict=True):
        for assignment in Assignment.objects.filter(annotator=user).order_by("id"):
            submit(assignment, user, scale, offset)
    draft = Annotation.objects.filter(source__campaign=demo_campaign, status=Annotation.Status.SUBMITTED).first()
    assert draft is not None
    Annotation.objects.filter(pk=draft.pk).update(status=Annotation.Status.DRAFT)  # no longer counts
    return demo_campaign


def test_flat_records_equal_the_instance_path_on_collected_ratings(mixed):
    records = campaign_rating_records(mixed)
    assert len(records) == OutputJudgement.objects.filter(
        annotation__source__campaign=mixed, annotation__status=Annotation.Status.SUBMITTED).count() > 0
    assert records == reference_records(mixed)
    assert any(r.seconds for r in records)
    zscores = campaign_zscores(campaign=mixed)
    assert zscores and zscores == reference_zscores(mixed)
    assert flat_rated(mixed) == reference_rated(mixed)


def test_system_features_equal_the_instance_path(mixed):
    from annotation.models import RatingUnit
    from evaluation.selectors import DASHBOARD_FEATURES, campaign_system_features

    for i, unit in enumerate(RatingUnit.objects.filter(source__campaign=mixed).order_by("id")[:12]):
        unit.analysis = {"features": {"compression_ratio": 0.5 + i / 10, "exact_match": i % 2 == 0},
                         "edits": []} if i % 3 else {"other": 1}
        unit.save(update_fields=["analysis"])
    reference = reference_features(mixed)
    assert any(features for _, _, features in reference.values())  # the demo campaign is analysed
    table = {row["system"]: row for row in campaign_system_features(campaign=mixed)["systems"]}
    for system, row in table.items():
        mine = [(c, f) for s, c, f in reference.values() if s == system]
        assert row["n_outputs"] == len(mine)
        assert row["n_analysed"] == sum(1 for _, f in mine if f)
        assert sum(row["categories"].values()) == len(mine)
        for name, mean in row["means"].items():
            values = [float(v) for _, f in mine if isinstance(v := f.get(name), int | float)]
            assert name in DASHBOARD_FEATURES and mean == pytest.approx(sum(values) / len(values))


@pytest.mark.data
def test_flat_records_equal_the_instance_path_on_simpeval_past(simpeval_data_dir):
    with (simpeval_data_dir / "simpeval" / "simpeval_past.csv").open("rb") as handle:
        campaign_import(kind="simpeval", file=handle, filename="simpeval_past.csv", campaign_slug="past",
                        analyse=False)
    campaign = Campaign.objects.get(slug="past")
    records = campaign_rating_records(campaign)
    assert len(records) > 10_000
    assert records == reference_records(campaign)
    assert campaign_zscores(campaign=campaign) == reference_zscores(campaign)
    assert flat_rated(campaign) == reference_rated(campaign)
