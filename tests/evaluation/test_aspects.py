"""Multi-aspect campaigns after import: z per rater and aspect, rated outputs, the report, exports, dashboard."""

from __future__ import annotations

import io
import json
import math
import statistics
from typing import Any

import pytest
from django.core.management import call_command

from annotation.models import Campaign, Output
from annotation.services.imports import campaign_import
from evaluation.selectors import campaign_aspect_ratings, campaign_report_fingerprint
from evaluation.services.exports import campaign_export_jsonl
from evaluation.services.report import campaign_report, campaign_report_build
from evaluation.stats.aspects import aspect_output_means, aspect_tables, aspects_with_zscores, z_origin
from evaluation.stats.records import RatingRecord
from metrics.selectors import campaign_rated_outputs

CROWD = (
    "WorkerId,Input.id,Input.original,Input.simplified,Input.system,Answer.adequacy,Answer.fluency,"
    "Answer.simplicity\n"
    "0,40,The cat sat.,Cat sat.,T5,5,5,2\n"
    "1,40,The cat sat.,Cat sat.,T5,4,3,-1\n"
    "0,40,The cat sat.,The cat sat.,Muss,3,4,0\n"
    "1,40,The cat sat.,The cat sat.,Muss,2,4,1\n"
    "0,41,A dog ran.,Dog ran.,T5,4,2,-2\n"
    "1,41,A dog ran.,A dog ran.,Muss,3,2,0\n"
)
WIKI = (
    "sent_id,sys_name,orig_sent,simp_sent,sys_type,fluency,fluency_zscore,meaning,meaning_zscore,"
    "simplicity,simplicity_zscore\n"
    "7,ACCESS,The cat sat there.,The cat sat.,N,80,0.5,70,0.25,60,0.1\n"
    "7,Hybrid,The cat sat there.,Cat there.,H,40,-0.9,30,-1.0,20,-0.8\n"
    "8,ACCESS,A dog ran far.,A dog ran.,N,90,1.0,100,1.5,50,0.0\n"
    "8,Hybrid,A dog ran far.,Dog far.,H,50,-0.5,40,-0.4,30,-0.6\n"
)


def load(text: str, slug: str, name: str = "f.csv", **kwargs: Any) -> Campaign:
    result = campaign_import(kind="da", file=io.BytesIO(text.encode()), filename=name, campaign_slug=slug,
                             analyse=False, **kwargs)
    return result.campaign


# --- the pure part -------------------------------------------------------------------------------------


def record(output: str, rater: str, raw: float, z: float | None = None, system: str = "A") -> RatingRecord:
    return RatingRecord(source="s", output=output, system=system, rater=rater, raw=raw, z=z)


def test_z_is_computed_per_rater_within_each_aspect():
    lenient = [record("o1", "r1", 90), record("o2", "r1", 100)]
    harsh = [record("o1", "r2", 10), record("o2", "r2", 30)]
    filled, warnings = aspects_with_zscores({"fluency": lenient + harsh, "meaning": [record("o1", "r1", 50)]})
    by = {(r.rater, r.output): r.z for r in filled["fluency"]}
    s = math.sqrt(50)  # sample sd of (90, 100) and of (10, 30) is sqrt(50) and sqrt(200)
    assert by[("r1", "o1")] == pytest.approx((90 - 95) / s)
    assert by[("r2", "o2")] == pytest.approx((30 - 20) / math.sqrt(200))
    assert filled["meaning"][0].z is None
    assert warnings == ["meaning: rater r1: no z-scores (fewer than 2 ratings, n=1)"]
    means = aspect_output_means(filled)
    assert means["o1"].raw == {"fluency": 50.0, "meaning": 50.0}
    assert means["o1"].z["fluency"] == pytest.approx(((90 - 95) / s + (10 - 20) / math.sqrt(200)) / 2)
    assert "meaning" not in means["o1"].z


def test_released_z_is_kept_and_its_origin_said():
    released = [record("o1", "r", 1, z=0.7), record("o2", "r", 3, z=-0.2)]
    filled, _ = aspects_with_zscores({"simplicity": released})
    assert [r.z for r in filled["simplicity"]] == [0.7, -0.2]
    assert z_origin(filled["simplicity"], released=2) == "released"
    assert z_origin(filled["simplicity"], released=1) == "mixed"
    assert z_origin(filled["simplicity"], released=0) == "computed"
    assert z_origin([record("o1", "r", 1)], released=0) == "none"


def test_aspect_tables_rank_systems_with_cis():
    pairs = (("A", 80), ("B", 20))
    records = [record(f"o{i}{s}", f"r{i}", raw + i, system=s) for i in range(4) for s, raw in pairs]
    filled, _ = aspects_with_zscores({"fluency": records})
    [table] = aspect_tables(filled, scales={"fluency": "0..100"}, z_origins={"fluency": "computed"}, n_boot=50)
    assert (table["aspect"], table["scale"], table["z"], table["ranked_by"]) == ("fluency", "0..100", "computed", "z")
    assert table["counts"] == {"ratings": 8, "outputs": 8, "sources": 1, "systems": 2, "raters": 4}
    best, worst = table["systems"]
    assert (best["system"], worst["system"]) == ("A", "B")
    assert best["raw_mean"] == pytest.approx(81.5) and best["raw_ci_low"] <= 81.5 <= best["raw_ci_high"]
    assert best["z_mean"] > 0 > worst["z_mean"]


# --- reads of an imported campaign -----------------------------------------------------------------------


@pytest.mark.django_db
def test_crowd_campaign_z_per_worker_and_aspect_and_rated_outputs():
    campaign = load(CROWD, "crowd")
    ratings = campaign_aspect_ratings(campaign)
    assert ratings.scales == {"adequacy": "1..5", "fluency": "1..5", "simplicity": "-2..2"}
    assert ratings.z_origins == dict.fromkeys(ratings.scales, "computed")
    worker0 = [r for r in ratings.records["adequacy"] if r.rater.endswith(":worker_0")]
    assert [r.raw for r in worker0] == [5.0, 3.0, 4.0]
    mean, sd = statistics.mean([5, 3, 4]), statistics.stdev([5, 3, 4])
    assert [r.z for r in worker0] == pytest.approx([(5 - mean) / sd, (3 - mean) / sd, (4 - mean) / sd])

    rated = campaign_rated_outputs(campaign)
    assert len(rated) == 4  # rated only on aspects, yet every output is there
    assert [(r.source, r.system) for r in rated] == [("40", "T5"), ("40", "Muss"), ("41", "T5"), ("41", "Muss")]
    first = rated[0]
    assert first.ratings == {} and first.zscores == [] and first.mean_z is None
    assert first.aspects_raw == {"adequacy": 4.5, "fluency": 4.0, "simplicity": 0.5}
    assert set(first.aspects_z) == {"adequacy", "fluency", "simplicity"}
    assert first.complex == "The cat sat." and first.text == "Cat sat."


@pytest.mark.django_db
def test_rank_and_rate_campaigns_have_no_aspects(rated_campaign, annotators):
    campaign = rated_campaign("rr", annotators[:2], n_sources=2)
    rated = campaign_rated_outputs(campaign)
    assert rated and all(r.aspects_z == {} and r.aspects_raw == {} for r in rated)
    report = campaign_report_build(campaign=campaign, n_boot=20)
    assert report["aspects"] == []
    assert all("aspects" not in json.loads(line) for line in campaign_export_jsonl(campaign=campaign))
    assert all("aspects" not in a for line in campaign_export_jsonl(campaign=campaign)
               for a in json.loads(line)["annotations"])


@pytest.mark.django_db
def test_report_command_and_api_carry_the_aspects_block(researcher, client_for):
    campaign = load(WIKI, "wiki")
    campaign.owners.add(researcher)
    report = client_for(researcher).get("/api/campaigns/wiki/report/").json()
    assert [t["aspect"] for t in report["aspects"]] == ["fluency", "meaning", "simplicity"]
    fluency = report["aspects"][0]
    assert (fluency["scale"], fluency["z"]) == ("0..100", "released")
    rows = {r["system"]: r for r in fluency["systems"]}
    assert rows["ACCESS"]["raw_mean"] == 85.0 and rows["ACCESS"]["z_mean"] == pytest.approx(0.75)
    assert rows["Hybrid"]["z_mean"] == pytest.approx(-0.7) and rows["ACCESS"]["rank"] == 1
    out = io.StringIO()
    call_command("campaign_report", "--campaign", "wiki", "--n-boot", "20", stdout=out)
    text = out.getvalue()
    assert "Aspect meaning (scale 0..100, z released): 4 ratings of 4 outputs by 1 raters" in text
    assert "ACCESS" in text.split("Aspect simplicity")[1]
    out = io.StringIO()
    call_command("campaign_report", "--campaign", "wiki", "--n-boot", "20", "--json", stdout=out)
    assert json.loads(out.getvalue())["aspects"][2]["aspect"] == "simplicity"


@pytest.mark.django_db
def test_a_new_aspect_import_changes_the_report_fingerprint():
    campaign = load(WIKI, "wiki")
    before = campaign_report_fingerprint(campaign=campaign)
    cached = campaign_report(campaign=campaign, n_boot=10)
    more = WIKI.splitlines()[0] + "\n9,ACCESS,A third one.,Third.,N,10,-2,10,-2,10,-2\n"
    load(more, "wiki", name="more.csv")
    assert campaign_report_fingerprint(campaign=campaign) != before
    fresh = campaign_report(campaign=campaign, n_boot=10)
    assert fresh["aspects"][0]["counts"]["outputs"] == cached["aspects"][0]["counts"]["outputs"] + 1


@pytest.mark.django_db
def test_jsonl_export_carries_each_raters_aspect_ratings_and_output_means():
    campaign = load(CROWD, "crowd")
    lines = [json.loads(line) for line in campaign_export_jsonl(campaign=campaign)]
    first = lines[0]
    assert first["id"] == "40"
    t5 = next(o for o in first["outputs"] if o["system"] == "T5")
    assert t5["aspects"]["adequacy"]["raw"] == 4.5 and t5["aspects"]["simplicity"]["raw"] == 0.5
    raters = {a["rater"].split(":")[1]: a for a in first["annotations"]}
    assert set(raters) == {"worker_0", "worker_1"}
    mine = [x for x in raters["worker_0"]["aspects"] if x["output"] == t5["id"]]
    assert {x["aspect"]: (x["raw"], x["scale"], x["z_released"]) for x in mine} == {
        "adequacy": (5.0, "1..5", False), "fluency": (5.0, "1..5", False), "simplicity": (2.0, "-2..2", False)}
    assert all(x["z"] is not None for x in mine)
    assert raters["worker_0"]["judgements"] == []


@pytest.mark.django_db
def test_dashboard_shows_the_aspects_section_only_for_multi_aspect_campaigns(researcher, client, demo_campaign):
    campaign = load(WIKI, "wiki")
    campaign.owners.add(researcher)
    client.force_login(researcher)
    page = client.get("/research/campaigns/wiki/").content.decode()
    assert 'id="aspects-panel"' in page and "Aspects" in page
    assert '<th scope="colgroup" colspan="2" class="num">meaning <small class="muted">0..100</small></th>' in page
    assert 'data-system="ACCESS"' in page and "85.00" in page and "0.750" in page  # ACCESS fluency raw and z
    assert "z: fluency as released" in page
    plain = client.get("/research/campaigns/demo/").content.decode()
    assert 'id="aspects-panel"' not in plain


@pytest.mark.django_db
def test_an_output_rated_on_aspects_and_in_rank_and_rate_keeps_both(annotators):
    from tests.factories import AnnotationFactory

    campaign = load(WIKI, "wiki")
    output = Output.objects.get(source__external_id="7", system__name="ACCESS")
    annotation = AnnotationFactory.create(source=output.source, annotator=annotators[0])
    annotation.judgements.create(output=output, rating=70.0)
    rated = {r.output_pk: r for r in campaign_rated_outputs(campaign)}
    assert len(rated) == 4
    assert rated[output.pk].ratings == {annotators[0].pseudonym: 70.0}
    assert rated[output.pk].aspects_z["fluency"] == 0.5


# --- the released crowd files reproduce the LENS paper's Table 7 ---------------------------------------------

TABLE_7 = {  # system: (fluency, adequacy, simplicity) for SimpLikert_2022, then SimpDA_2022
    "Human 1 Writing": ((4.69, 4.46, 1.36), (92.14, 88.87, 83.91)),
    "Human 2 Writing": ((4.72, 4.48, 1.39), (92.84, 88.23, 84.50)),
    "GPT-3-few-shot": ((4.64, 4.66, 1.13), (92.59, 92.10, 81.17)),
    "GPT-3-zero-shot": ((4.63, 4.56, 0.91), (90.51, 90.32, 74.81)),
    "Muss": ((4.40, 4.11, 0.86), (87.99, 80.57, 73.12)),
    "T5-3B": ((4.70, 4.33, 0.55), (93.96, 85.22, 58.44)),
}


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "which"), [("simplikert_2022.csv", 0), ("simpDA_2022.csv", 1)])
def test_crowd_files_reproduce_the_system_means_of_lens_table_7(simpeval_data_dir, name, which):
    with (simpeval_data_dir / "simpeval" / name).open("rb") as handle:
        campaign = campaign_import(kind="da", file=handle, filename=name, campaign_slug="t7", analyse=False).campaign
    tables = {t["aspect"]: t for t in campaign_report_build(campaign=campaign, n_boot=10)["aspects"]}
    for system, values in TABLE_7.items():
        for aspect, expected in zip(("fluency", "adequacy", "simplicity"), values[which], strict=True):
            row = next(r for r in tables[aspect]["systems"] if r["system"] == system)
            assert round(row["raw_mean"], 2) == expected, (system, aspect)
    assert tables["adequacy"]["counts"]["ratings"] == 1080 and tables["adequacy"]["counts"]["outputs"] == 360
