"""Quality control end to end in the services: attention items, repeats, verdicts, exclusion in reports and exports."""

from __future__ import annotations

import json
import random

import pytest
from django.test import Client

from annotation.models import Assignment, Output, Source, User
from annotation.services.assignments import campaign_add_annotators
from annotation.services.tutorials import annotator_must_pass_tutorial
from evaluation.selectors import campaign_list_for_researcher
from evaluation.services.exports import campaign_export_jsonl, campaign_export_simpeval
from evaluation.services.quality import (
    annotator_exclude,
    annotator_reinclude,
    campaign_quality,
    campaign_quality_setup,
)
from evaluation.services.report import campaign_report_build
from tests.factories import campaign_with_outputs, submit_like_a_rater

pytestmark = pytest.mark.django_db
QUALITY = {"Alpha": 85.0, "Beta": 60.0, "Gamma": 35.0, "Delta": 50.0}


def _rate(assignment: Assignment, careless: bool, rng: random.Random) -> None:
    submit_like_a_rater(assignment, careless=careless, rng=rng, quality=QUALITY, spread=5,
                        step_seconds={"1": 3.0, "2": 2.0, "3": 2.0} if careless else {"1": 30.0, "2": 40.0, "3": 35.0})


@pytest.fixture
def study(researcher, annotators):
    campaign = campaign_with_outputs(n_sources=12, systems=tuple(QUALITY), slug="qc", owners=[researcher],
                                     ratings_per_output=3)
    setup = campaign_quality_setup(campaign=campaign, attention_rate=1.0, repeat_share=0.25, analyse=False)
    assert setup.attention_sources == 12 and setup.repeats == 3
    campaign_add_annotators(campaign=campaign, annotators=annotators)
    rng = random.Random(1)
    # In a fixed order, so the careless rater's random ratings (and its verdict) are the same on every run.
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("annotator", "source").order_by(
            "source__order", "source_id", "annotator__username"):
        _rate(assignment, careless=assignment.annotator == annotators[2], rng=rng)
    return campaign


def test_attention_items_look_like_outputs_but_never_count(study):
    bad = Output.objects.filter(source__campaign=study, qc_kind="bad")
    assert bad.count() == 12
    for item in bad:
        assert item.qc_of is not None and item.text != item.qc_of.text
    assert Output.objects.filter(source__campaign=study, qc_kind="unrelated").count() == 6
    repeats = Source.objects.filter(campaign=study, repeat_of__isnull=False)
    assert repeats.count() == 3 and not Output.objects.filter(source__in=repeats).exclude(qc_kind="").exists()
    report = campaign_report_build(campaign=study, n_boot=50)
    assert {row["system"] for row in report["systems"]} == set(QUALITY)
    csv_text = campaign_export_simpeval(campaign=study)
    assert "attention check" not in csv_text and "#repeat" not in csv_text
    lines = [json.loads(line) for line in campaign_export_jsonl(campaign=study)]
    assert len(lines) == 12
    assert all(o["system"] in QUALITY for line in lines for o in line["outputs"])


def test_the_campaign_list_counts_neither_attention_systems_nor_repeated_sources(study, researcher):
    (row,) = campaign_list_for_researcher(user=researcher, slug="qc")
    assert (row["sources"], row["systems"]) == (12, len(QUALITY))


def test_the_careless_rater_is_flagged_with_the_mwu_p_value(study, annotators):
    verdicts = {q.annotator.username: q.verdict for q in campaign_quality(campaign=study)}
    for careful in ("ann1", "ann2"):
        assert verdicts[careful].reliable is True and not verdicts[careful].reasons, verdicts[careful]
        assert verdicts[careful].n_repeats >= 1 and verdicts[careful].repeat_gap is not None
    careless = verdicts["ann3"]
    assert careless.reliable is False and careless.mwu_p is not None and careless.mwu_p >= 0.05
    assert careless.n_pairs >= 8
    assert any("MWU p =" in r for r in careless.reasons) and any("too fast" in r for r in careless.reasons)


def test_excluding_changes_leaderboard_alpha_and_exports(study, annotators, researcher):
    before = campaign_report_build(campaign=study, n_boot=50)
    annotator_exclude(campaign=study, annotator=annotators[2], by=researcher, reason="random ratings")
    after = campaign_report_build(campaign=study, n_boot=50)
    assert after["excluded_annotators"][0]["annotator"] == annotators[2].pseudonym
    assert before["excluded_annotators"] == []
    assert after["alpha"]["raw"]["value"] > before["alpha"]["raw"]["value"]
    assert [r["system"] for r in after["systems"]] == ["Alpha", "Beta", "Delta", "Gamma"]
    assert after["counts"] != before["counts"]
    lines = [json.loads(line) for line in campaign_export_jsonl(campaign=study)]
    flags = {a["rater"]: a["excluded"] for line in lines for a in line["annotations"]}
    assert flags[annotators[2].pseudonym] is True and flags[annotators[0].pseudonym] is False
    client = Client()
    client.force_login(researcher)
    response = client.get(f"/api/campaigns/{study.slug}/export/?type=csv")
    assert response["X-Excluded-Annotators"] == annotators[2].pseudonym
    assert annotators[2].pseudonym not in response.content.decode()
    annotator_reinclude(campaign=study, annotator=annotators[2], by=researcher)
    assert campaign_report_build(campaign=study, n_boot=50)["excluded_annotators"] == []


def test_dashboard_flags_and_excludes_with_one_click(study, annotators, researcher):
    client = Client()
    client.force_login(researcher)
    body = client.get(f"/research/campaigns/{study.slug}/").content.decode()
    row = body.split(f'data-pseudonym="{annotators[2].pseudonym}" data-flagged=')[1][:20]
    assert row.startswith('"true"') and "MWU p =" in body
    client.post(f"/research/campaigns/{study.slug}/quality/",
                {"action": "exclude", "pseudonym": annotators[2].pseudonym, "reason": "flagged", "confirm": "1"})
    exclusion = annotators[2].exclusions.get()
    assert exclusion.excluded_by == researcher and exclusion.excluded_at is not None
    body = client.get(f"/research/campaigns/{study.slug}/").content.decode()
    assert 'id="excluded-note"' in body and "Re-include" in body
    client.post(f"/research/campaigns/{study.slug}/quality/",
                {"action": "include", "pseudonym": annotators[2].pseudonym})
    exclusion.refresh_from_db()
    assert exclusion.reincluded_by == researcher


def test_tutorial_gate_is_the_qualification(researcher, annotators):
    from core.errors import NotAllowed

    campaign = campaign_with_outputs(n_sources=2, slug="gate", owners=[researcher])
    Source.objects.filter(campaign=campaign, external_id="s0").update(is_tutorial=True)
    campaign_add_annotators(campaign=campaign, annotators=[annotators[0]])
    with pytest.raises(NotAllowed):
        annotator_must_pass_tutorial(campaign=campaign, annotator=User.objects.get(pk=annotators[0].pk))


def test_the_api_reads_verdicts_and_excludes_and_includes_again(study, annotators, researcher, make_user):
    client = Client()
    client.force_login(researcher)
    url = "/api/campaigns/qc/quality/"
    rows = {row["username"]: row for row in client.get(url).json()}
    careless = rows["ann3"]
    assert careless["flagged"] and careless["reasons"] and not careless["excluded"]
    before = campaign_report_build(campaign=study, n_boot=50)

    answer = client.post(url + "exclusions/", {"annotator": careless["annotator"], "reason": "random"},
                         content_type="application/json")
    assert answer.status_code == 201, answer.content
    row = {r["username"]: r for r in answer.json()}["ann3"]
    assert row["excluded"] and row["excluded_by"] == researcher.username
    after = campaign_report_build(campaign=study, n_boot=50)
    assert after["excluded_annotators"] and before["counts"]["ratings"] > after["counts"]["ratings"]
    again = client.post(url + "exclusions/", {"annotator": careless["annotator"]}, content_type="application/json")
    assert again.status_code == 409

    back = client.delete(url + "exclusions/", {"annotator": careless["annotator"]}, content_type="application/json")
    assert back.status_code == 200 and not {r["username"]: r for r in back.json()}["ann3"]["excluded"]

    outsider = make_user("stranger")
    bad = client.post(url + "exclusions/", {"annotator": outsider.pseudonym}, content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "annotator"
    for body in ({"attention_rate": "nan", "repeat_share": 0}, {"attention_rate": 0.5, "repeat_share": 2},
                 {"attention_rate": 0.5}):
        refused = client.post(url + "setup/", body, content_type="application/json")
        assert refused.status_code == 400 and refused.json()["field"] in ("attention_rate", "repeat_share")
