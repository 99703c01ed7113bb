"""The domain rules in annotation.rules, and every surface that must agree with them.

An output's final category feeds the report (per-category tables), the dashboard's category mix,
the metric meta-evaluation and LENS training (per-category tau), and the exports. The test below
builds one output per precedence case and fails if any of those surfaces disagrees.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.formats.simpeval import SENTENCE_TYPE_NAMES
from annotation.models import (
    Annotation,
    Campaign,
    Output,
    OutputJudgement,
    RatingUnit,
    Source,
    System,
    User,
)
from annotation.rules import final_category, percent, starting_group
from annotation.selectors import unit_payload
from evaluation.selectors import campaign_rating_records, campaign_system_features
from evaluation.services.exports import campaign_export_jsonl, campaign_export_simpeval
from evaluation.services.report import campaign_report_build
from metrics.selectors import campaign_rated_outputs

# --- The pure rule -------------------------------------------------------------------------------------


def test_votes_win_over_the_given_and_the_automatic_category() -> None:
    assert final_category(["split", "split", "deletion"], given="paraphrase", automatic="deletion") == "split"


def test_a_tie_is_broken_by_given_then_automatic_then_the_fixed_order() -> None:
    assert final_category(["split", "deletion"], given="split", automatic="deletion") == "split"
    assert final_category(["split", "deletion"], given="paraphrase", automatic="deletion") == "deletion"
    assert final_category(["paraphrase", "deletion"]) == "deletion"
    assert final_category(["paraphrase", "split", "deletion"]) == "split"


def test_the_order_of_the_votes_never_matters() -> None:
    assert final_category(["paraphrase", "deletion"]) == final_category(["deletion", "paraphrase"])


def test_without_votes_the_given_then_the_automatic_category_then_none() -> None:
    assert final_category([], given="deletion", automatic="split") == "deletion"
    assert final_category(["", "bogus"], given="", automatic="split") == "split"
    assert final_category([], given="", automatic="") is None
    assert final_category([], given="nonsense", automatic="") is None


def test_exports_may_keep_the_given_category_before_the_votes() -> None:
    assert final_category(["split", "split"], given="paraphrase", prefer_given=True) == "paraphrase"
    assert final_category(["split", "split"], given="", prefer_given=True) == "split"


def test_starting_group_of_an_unanalysed_output_is_the_everything_else_group() -> None:
    assert starting_group("deletion") == "deletion"
    assert starting_group("") == "paraphrase"


def test_percent_rounds_down_so_that_100_means_done() -> None:
    assert percent(0, 0) == 0
    assert percent(199, 200) == 99
    assert percent(200, 200) == 100
    assert percent(1, 3) == 33
    assert percent(5, 3) == 100


# --- Every surface agrees -------------------------------------------------------------------------------

# system -> (votes of raters r1, r2, r3 ("" = no category), given, automatic, final, SimpEval export)
CASES: dict[str, tuple[tuple[str, str, str], str, str, str | None, str]] = {
    "majority": (("split", "split", "deletion"), "paraphrase", "deletion", "split", "paraphrase"),
    "tie-auto": (("split", "deletion", ""), "", "deletion", "deletion", "deletion"),
    "tie-given": (("split", "deletion", ""), "split", "deletion", "split", "split"),
    "tie-order": (("paraphrase", "deletion", ""), "", "", "deletion", "deletion"),
    "given": (("", "", ""), "deletion", "split", "deletion", "deletion"),
    "automatic": (("", "", ""), "", "split", "split", "split"),
    "nothing": (("", "", ""), "", "", None, ""),
}


@pytest.fixture
def precedence_campaign(db) -> Campaign:
    campaign = Campaign.objects.create(name="Precedence", slug="precedence")
    raters = [User.objects.create_user(username=f"rater{i}", password="pw-for-tests-1") for i in range(3)]
    source = Source.objects.create(campaign=campaign, external_id="s1", text="The original sentence is long.")
    annotations = [
        Annotation.objects.create(source=source, annotator=rater, status=Annotation.Status.SUBMITTED)
        for rater in raters
    ]
    for row, (system_name, (votes, given, automatic, _, _)) in enumerate(CASES.items()):
        text = f"Output of {system_name}."
        unit = RatingUnit.objects.create(
            source=source, text=text, text_key=f"key-{system_name}", auto_category=automatic,
            analysis_version="test" if automatic else "",
        )
        output = Output.objects.create(
            source=source, system=System.objects.create(campaign=campaign, name=system_name), unit=unit,
            text=text, row_index=row, given_category=given, external_id=f"o{row}",
        )
        for k, (annotation, vote) in enumerate(zip(annotations, votes, strict=True)):
            OutputJudgement.objects.create(annotation=annotation, output=output, category=vote, rating=40 + 10 * k)
    return campaign


def test_every_surface_gives_each_output_the_same_final_category(precedence_campaign: Campaign) -> None:
    campaign = precedence_campaign
    expected = {system: final for system, (_, _, _, final, _) in CASES.items()}
    label = {system: final or "unknown" for system, final in expected.items()}

    # The report's records (per-category tables and their tau).
    records = campaign_rating_records(campaign)
    assert {(r.system, r.category) for r in records} == set(expected.items())
    report = campaign_report_build(campaign=campaign, n_boot=10)
    for category, table in report["categories"].items():
        systems = {row["system"] for row in table["systems"]}
        assert systems == {s for s, c in expected.items() if c == category}, category

    # The dashboard's category mix.
    mix = {row["system"]: row["categories"] for row in campaign_system_features(campaign=campaign)["systems"]}
    for system, counts in mix.items():
        assert {c for c, n in counts.items() if n} == {label[system]}, system

    # Meta-evaluation and LENS training.
    assert {r.system: r.category for r in campaign_rated_outputs(campaign)} == label

    # The JSONL export.
    (line,) = list(campaign_export_jsonl(campaign=campaign))
    outputs = json.loads(line)["outputs"]
    assert {o["system"]: o["category"] for o in outputs} == expected

    # The SimpEval export keeps the file's own category first (so an imported file round-trips).
    rows = list(csv.DictReader(io.StringIO(campaign_export_simpeval(campaign=campaign))))
    exported = {row["system"]: row["sentence_type"] for row in rows}
    assert exported == {system: SENTENCE_TYPE_NAMES.get(e, "") for system, (*_, e) in CASES.items()}


def test_the_annotation_page_starts_each_output_in_the_servers_group(precedence_campaign: Campaign) -> None:
    for output in Output.objects.filter(source__campaign=precedence_campaign).select_related("unit", "system"):
        payload = unit_payload(output.unit, public_id="u0")
        assert payload["group"] == starting_group(output.unit.auto_category)
        assert payload["auto_category"] == (output.unit.auto_category or None)
        assert payload["analysed"] is bool(output.unit.auto_category)
