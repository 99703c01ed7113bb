"""The report, its cache, the API and the CSV on ratings collected in the app (the demo campaign)."""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections import Counter, defaultdict

import pytest
from django.core.management import call_command

from annotation.models import Assignment, Output, OutputJudgement, RatingUnit
from annotation.services.annotations import annotation_submit
from annotation.services.assignments import campaign_add_annotators
from evaluation.selectors import campaign_report_fingerprint, campaign_system_features, campaign_zscores
from evaluation.services.report import campaign_report, report_leaderboard_csv
from tests.factories import STEPS_REVIEWED, public_id

pytestmark = pytest.mark.django_db

# Made-up quality of the demo systems; each annotator uses the scale differently.
QUALITY = {"Splitter": 88, "Rewriter": 80, "Lexical": 72, "Trimmer": 64, "Copy": 55, "Copy-2": 55,
           "Short-T5": 35, "Hallucinator": 25, "Scramble": 5}
STYLE = [(1.0, 0.0), (0.6, 30.0), (0.8, 10.0)]  # (scale, offset) per annotator


def submit(assignment: Assignment, user, scale: float, offset: float, key: str = "k"):
    units = list(RatingUnit.objects.filter(source=assignment.source).prefetch_related("outputs__system"))
    rated = []
    for i, unit in enumerate(units):
        base = max(QUALITY[o.system.name] for o in unit.outputs.all())
        # A little disagreement that depends on the source and the unit, so alpha is below 1.
        wiggle = ((assignment.source_id * 7 + i * 13 + int(offset)) % 9) - 4
        rated.append((unit, min(100.0, max(0.0, base * scale + offset + wiggle))))
    order = sorted(rated, key=lambda pair: -pair[1])
    items = [{"unit": public_id(assignment, u.pk), "category": "split" if u.text.count(".") > 1 else "paraphrase",
              "rating": r, "rank": order.index((u, r)) + 1, "edits": None} for u, r in rated]
    return annotation_submit(assignment=assignment, user=user,
                             payload={"steps_reviewed": STEPS_REVIEWED,
                                      "units": items, "step_seconds": {"rate": 30 + assignment.pk}},
                             submit_key=f"{key}-{assignment.pk}")


@pytest.fixture
def collected(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators)
    for user, (scale, offset) in zip(annotators, STYLE, strict=True):
        for assignment in Assignment.objects.filter(annotator=user).order_by("id"):
            submit(assignment, user, scale, offset)
    return demo_campaign


def test_collected_ratings_get_wmt_zscores_per_rater(collected, annotators):
    zscores = campaign_zscores(campaign=collected)
    judgements = OutputJudgement.objects.select_related("annotation", "output__system")
    assert len(zscores) == judgements.count() > 0  # collected ratings carry no z-score of their own
    per_rater: dict[int | None, list[float]] = defaultdict(list)
    for j in judgements:
        per_rater[j.annotation.annotator_id].append(zscores[(j.annotation_id, j.output_id)])
    assert set(per_rater) == {u.pk for u in annotators}
    for values in per_rater.values():
        assert statistics.fmean(values) == pytest.approx(0.0, abs=1e-9)
        assert statistics.stdev(values) == pytest.approx(1.0, abs=1e-9)


def test_report_leaderboard_follows_the_z_scores(collected):
    report = campaign_report(campaign=collected, n_boot=200)
    assert report["ranked_by"] == "z"
    assert report["counts"]["raters"] == 3 and report["counts"]["sources"] == 4
    # Expected means computed here: z per rater (sample sd), then mean per output, then per system.
    judgements = list(OutputJudgement.objects.select_related("annotation", "output__system"))
    by_rater: dict[int | None, list[float]] = defaultdict(list)
    for j in judgements:
        by_rater[j.annotation.annotator_id].append(j.rating)
    scale = {r: (statistics.fmean(v), statistics.stdev(v)) for r, v in by_rater.items()}
    per_output: dict[int, list[float]] = defaultdict(list)
    system_of = {}
    for j in judgements:
        mean, sd = scale[j.annotation.annotator_id]
        per_output[j.output_id].append((j.rating - mean) / sd)
        system_of[j.output_id] = j.output.system.name
    per_system: dict[str, list[float]] = defaultdict(list)
    for output, values in per_output.items():
        per_system[system_of[output]].append(statistics.fmean(values))
    expected = {s: statistics.fmean(v) for s, v in per_system.items()}
    got = {row["system"]: row["z_mean"] for row in report["systems"]}
    assert got == pytest.approx(expected)
    names = [row["system"] for row in report["systems"]]
    assert names[0] == "Splitter" and names[-1] == "Scramble"
    for row in report["systems"]:
        assert row["ci_low"] <= row["z_mean"] <= row["ci_high"]
        assert row["cluster"] >= 1
    assert [row["cluster"] for row in report["systems"]] == sorted(row["cluster"] for row in report["systems"])
    # The annotators use the scale differently (STYLE) but agree on the order: z removes the difference.
    assert report["alpha"]["raw"]["value"] < report["alpha"]["z"]["value"] <= 1
    # Annotators appear by pseudonym only.
    raters = {row["rater"] for row in report["annotators"]}
    assert raters == {u.pseudonym for u in collected.annotators.all()}
    assert not any(u.username in json.dumps(report) for u in collected.annotators.all())


def test_report_carries_features_category_mix_and_distributions(collected):
    unit = RatingUnit.objects.filter(source__campaign=collected).order_by("id").first()
    unit.analysis = {"features": {"compression_ratio": 0.5, "sentence_splits": 1, "exact_match": True}}
    unit.save(update_fields=["analysis"])
    report = campaign_report(campaign=collected, n_boot=50)
    features = report["features"]
    assert {"compression_ratio", "sentence_splits", "exact_match"} <= set(features["names"])
    rows = {row["system"]: row for row in features["systems"]}
    assert len(rows) == 9 and all(row["n_outputs"] == 4 for row in rows.values())
    analysed = [row for row in rows.values() if row["n_analysed"]]
    assert len(analysed) >= 1 and analysed[0]["means"]["compression_ratio"] == 0.5
    for row in rows.values():
        assert sum(row["categories"].values()) == 4
    assert rows["Splitter"]["categories"]["split"] == 4  # every annotator called the splits splits
    dist = {row["system"]: row for row in report["distributions"]}
    assert sum(dist["Scramble"]["histogram"]) == dist["Scramble"]["n"] == 4 * 2  # 4 sources x 2 ratings
    assert sum(dist["Splitter"]["histogram"]) == dist["Splitter"]["n"]
    assert dist["Splitter"]["raw"]["median"] > dist["Scramble"]["raw"]["median"]


def test_report_is_cached_until_judgements_change(collected, annotators, researcher, django_assert_max_num_queries):
    first = campaign_report(campaign=collected, n_boot=20)
    with django_assert_max_num_queries(3):  # the fingerprint only
        again = campaign_report(campaign=collected, n_boot=20)
    assert again["generated_at"] == first["generated_at"]
    # A reopened and resubmitted annotation changes the fingerprint and the report.
    from annotation.services.annotations import annotation_reopen

    done = Assignment.objects.filter(annotator=annotators[0]).order_by("id")[0]
    before = campaign_report_fingerprint(campaign=collected)
    annotation = done.annotations.get(status="submitted")
    annotation_reopen(annotation=annotation, by=researcher)
    submit(done, annotators[0], 0.2, 70.0, key="again")
    assert campaign_report_fingerprint(campaign=collected) != before
    fresh = campaign_report(campaign=collected, n_boot=20)
    assert fresh["fingerprint"] != first["fingerprint"]


def test_category_mix_prefers_annotators_votes(collected):
    # The imported and the automatic category disagree with every annotator: the votes still decide.
    Output.objects.filter(source__campaign=collected).update(given_category="deletion")
    RatingUnit.objects.filter(source__campaign=collected).update(auto_category="deletion")
    voted: dict[str, Counter[str]] = defaultdict(Counter)
    for output in Output.objects.filter(source__campaign=collected, source__is_tutorial=False).select_related(
            "unit", "system"):
        voted[output.system.name]["split" if output.unit.text.count(".") > 1 else "paraphrase"] += 1  # as submit()
    mix = campaign_system_features(campaign=collected)
    assert mix["categories"] == ["split", "paraphrase"]  # no "deletion": nobody voted for it
    assert {row["system"]: row["categories"] for row in mix["systems"]} == {
        system: {"split": counts["split"], "paraphrase": counts["paraphrase"]} for system, counts in voted.items()}


# --- API --------------------------------------------------------------------------------------


def test_report_api_permissions(collected, researcher, annotators, make_user, client_for):
    url = f"/api/campaigns/{collected.slug}/report/"
    owner = client_for(researcher).get(url)
    assert owner.status_code == 200
    body = owner.json()
    assert {"systems", "alpha", "categories", "annotators", "warnings", "features"} <= set(body)
    assert set(body["alpha"]) == {"raw", "z"}
    assert client_for(make_user("res2", "researcher")).get(url).status_code == 404
    assert client_for(annotators[0]).get(url).status_code in (403, 404)
    assert client_for(make_user("boss", "admin")).get(url).status_code == 200
    from rest_framework.test import APIClient

    assert APIClient().get(url).status_code in (401, 403)
    assert client_for(researcher).get("/api/campaigns/nope/report/").status_code == 404


def test_leaderboard_csv_download(collected, researcher, annotators, client_for):
    url = f"/api/campaigns/{collected.slug}/leaderboard.csv"
    response = client_for(researcher).get(url)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "demo-leaderboard.csv" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    report = campaign_report(campaign=collected)
    assert [r["system"] for r in rows] == [s["system"] for s in report["systems"]]
    assert float(rows[0]["z_mean"]) == pytest.approx(report["systems"][0]["z_mean"])
    assert int(rows[0]["rank"]) == 1 and rows[0]["cluster"] == "1"
    assert client_for(annotators[0]).get(url).status_code in (403, 404)


def test_leaderboard_csv_writes_undefined_values_empty():
    text = report_leaderboard_csv({"systems": [{"system": "A", "rank": 1, "z_mean": None, "raw_mean": 50.0}]})
    header, row = text.strip().split("\n")
    assert header.startswith("rank,system,cluster")
    assert row.startswith("1,A,,") and ",50.0," in row


def test_command_prints_json_and_text(collected, capsys):
    call_command("campaign_report", "--campaign", collected.slug, "--json", "--n-boot", "50")
    document = json.loads(capsys.readouterr().out)
    assert document["systems"][0]["system"] == "Splitter"
    assert math.isfinite(document["alpha"]["z"]["value"])
    call_command("campaign_report", "--campaign", collected.slug, "--n-boot", "50")
    text = capsys.readouterr().out
    assert "Splitter" in text and "Krippendorff" in text


def test_command_on_an_empty_campaign(demo_campaign, capsys):
    call_command("campaign_report", "--campaign", demo_campaign.slug, "--json")
    document = json.loads(capsys.readouterr().out)
    assert document["systems"] == [] and "no ratings" in document["warnings"]
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no campaign"):
        call_command("campaign_report", "--campaign", "missing")


def test_leaderboard_csv_guards_spreadsheet_formulas():
    """A system named like a formula is written as text; numbers, negative ones included, stay numbers."""
    text = report_leaderboard_csv({"systems": [
        {"system": "=HYPERLINK(\"http://x\")", "rank": 1, "z_mean": -0.25, "raw_mean": 50.0},
        {"system": "@SUM(A1)", "rank": 2, "z_mean": 0.1, "raw_mean": 40.0},
        {"system": "+1+cmd", "rank": 3, "z_mean": None, "raw_mean": 30.0},
        {"system": "-2-cmd", "rank": 4, "z_mean": None, "raw_mean": 20.0},
    ]})
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["system"] for r in rows] == ["'=HYPERLINK(\"http://x\")", "'@SUM(A1)", "'+1+cmd", "'-2-cmd"]
    assert rows[0]["z_mean"] == "-0.25"


def test_identical_outputs_are_one_rating(staffed_campaign, annotators):
    """Two systems with the same text share a rating unit: the annotator rated it once, and every count of
    ratings (report, campaign list, dashboard) says one, by the same rule (records.rating_key)."""
    from annotation.models import Assignment, Output, RatingUnit
    from evaluation.selectors import campaign_list_for_researcher, campaign_rating_counts, campaign_rating_records
    from evaluation.stats.records import count_ratings
    from tests.factories import submit_assignment

    shared = [u for u in RatingUnit.objects.filter(source__campaign=staffed_campaign) if u.outputs.count() > 1]
    assert shared, "the demo campaign has a source whose systems wrote the same text"
    assignment = Assignment.objects.filter(annotator=annotators[0], source=shared[0].source).first()
    assert assignment is not None
    submit_assignment(assignment)
    units = RatingUnit.objects.filter(source=assignment.source).count()
    outputs = Output.objects.filter(source=assignment.source).count()
    assert outputs > units
    records = campaign_rating_records(staffed_campaign)
    assert len(records) == outputs  # per system, for the leaderboards
    assert count_ratings(records) == units
    assert campaign_rating_counts([staffed_campaign.pk]) == {staffed_campaign.pk: units}
    owner = staffed_campaign.owners.first()
    assert campaign_list_for_researcher(user=owner, slug=staffed_campaign.slug)[0]["ratings"] == units


def test_imported_rows_are_one_rating_each(db):
    """An imported file's raters rated each row, identical texts too: each row stays one rating."""
    import io

    from annotation.services.imports import campaign_import
    from evaluation.selectors import campaign_rating_counts, campaign_rating_records
    from evaluation.stats.records import count_ratings

    rows = ("original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_1_zscore,"
            "rating_2_zscore\n"
            "1,The cat sat on the mat.,The cat sat.,A,Deletions,80,70,0.5,0.4\n"
            "1,The cat sat on the mat.,The cat sat.,B,Deletions,60,75,-0.5,0.6\n"
            "1,The cat sat on the mat.,A cat was on a mat.,C,Paraphrases,50,40,-0.1,-0.9\n")
    result = campaign_import(kind="simpeval", file=io.BytesIO(rows.encode()), filename="tiny.csv",
                             campaign_slug="tiny", analyse=False)
    records = campaign_rating_records(result.campaign)
    assert len(records) == 6 and count_ratings(records) == 6
    assert campaign_rating_counts([result.campaign.pk]) == {result.campaign.pk: 6}
