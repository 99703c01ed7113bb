"""Importing multi-aspect rating files: the service, the command, the API, the admin and the import page."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.formats import FormatError
from annotation.formats.da import SCALES
from annotation.models import (
    Annotation,
    AspectJudgement,
    Campaign,
    ImportBatch,
    Output,
    OutputJudgement,
    Reference,
    Source,
    System,
)
from annotation.rules import sentence_key
from annotation.selectors import campaign_aspect_scales, campaign_aspects
from annotation.services.imports import IMPORT_KINDS, ImportResult, campaign_import
from core.errors import Conflict

pytestmark = pytest.mark.django_db

DA_HEADER = (
    "sent_id,sys_name,orig_sent,simp_sent,sys_type,fluency,fluency_zscore,meaning,meaning_zscore,"
    "simplicity,simplicity_zscore\n"
)
DA_ROWS = [
    '7,ACCESS,"The cat, tired, sat.",The cat sat.,NeuralSeq2Seq,77.4,0.15,77.33333333,0.53,71.3,0.61',
    '7,Hybrid,"The cat, tired, sat.",Cat sat tired.,Semantics+PBMT,40,-0.9,35.5,-1.1,30,-0.8',
    "8,ACCESS,A dog ran.,A dog ran.,NeuralSeq2Seq,99.9,1.2,100,1.3,5.5,-1.5",
]
CROWD_HEADER = (
    "WorkerId,Input.id,Input.original,Input.simplified,Input.system,Answer.adequacy,Answer.fluency,"
    "Answer.simplicity\n"
)
LIKERT_ROWS = [
    "0,40,The cat sat.,Cat sat.,T5,5,5,2",
    "1,40,The cat sat.,Cat sat.,T5,4,3,-1",
    "0,40,The cat sat.,The cat sat.,Muss,3,4,0",
    "1,40,The cat sat.,The cat sat.,Muss,2,4,1",
    "2,41,A dog ran.,Dog ran.,T5,1,2,-2",
    "2,41,A dog ran. ,A dog ran.,Muss,3,2,0",
]


def payload(header: str, rows: list[str]) -> bytes:
    return (header + "".join(r + "\n" for r in rows)).encode("utf-8")


def import_da(data: bytes, name: str = "da.csv", slug: str = "da", **kwargs: Any) -> ImportResult:
    return campaign_import(kind="da", file=io.BytesIO(data), filename=name, campaign_slug=slug, analyse=False,
                           **kwargs)


def test_the_model_knows_the_readers_scales():
    assert set(AspectJudgement.Scale.values) == {s.name for s in SCALES}
    assert "da" in IMPORT_KINDS


def test_simplicity_da_rows_become_outputs_of_one_aggregated_rater_with_released_z():
    result = import_da(payload(DA_HEADER, DA_ROWS), name="wiki.csv", slug="wiki")
    assert (result.sources, result.outputs, result.units, result.ratings) == (2, 3, 3, 3)
    assert result.aspect_ratings == {"fluency": 3, "meaning": 3, "simplicity": 3}
    assert "3 ratings (3 fluency, 3 meaning, 3 simplicity)" in result.summary()
    campaign = Campaign.objects.get(slug="wiki")
    assert campaign.ratings_per_output == 1
    assert campaign_aspects(campaign) == ["fluency", "meaning", "simplicity"]
    assert campaign_aspect_scales(campaign) == {"fluency": "0..100", "meaning": "0..100", "simplicity": "0..100"}
    assert set(Annotation.objects.values_list("rater_slot", flat=True)) == {"aggregate"}
    assert Annotation.objects.filter(annotator__isnull=False).count() == 0
    j = AspectJudgement.objects.get(output__system__name="ACCESS", output__source__external_id="7", aspect="meaning")
    assert (j.raw, j.z, j.scale) == (77.33333333, 0.53, "0..100")
    assert Source.objects.get(external_id="7").text == "The cat, tired, sat."
    batch = ImportBatch.objects.get()
    assert batch.kind == "da" and batch.layout["layout"] == "simplicity-da" and batch.rows == 3
    # Rank & Rate judgements are untouched: a DA campaign simply has aspects.
    assert OutputJudgement.objects.count() == 0


def test_crowd_rows_become_one_anonymous_slot_per_worker_and_source():
    result = import_da(payload(CROWD_HEADER, LIKERT_ROWS), name="likert.csv", slug="likert")
    assert (result.sources, result.outputs, result.ratings) == (2, 4, 6)
    assert result.aspect_ratings == {"adequacy": 6, "fluency": 6, "simplicity": 6}
    campaign = Campaign.objects.get(slug="likert")
    assert campaign.ratings_per_output == 2
    assert campaign_aspect_scales(campaign) == {"adequacy": "1..5", "fluency": "1..5", "simplicity": "-2..2"}
    slots = sorted(Annotation.objects.values_list("source__external_id", "rater_slot"))
    assert slots == [("40", "worker_0"), ("40", "worker_1"), ("41", "worker_2")]
    assert set(System.objects.values_list("name", flat=True)) == {"T5", "Muss"}
    j = AspectJudgement.objects.get(annotation__rater_slot="worker_1", output__system__name="Muss", aspect="simplicity")
    assert (j.raw, j.z, j.scale) == (1.0, None, "-2..2")
    # Whitespace around a source text is not a second source.
    assert Source.objects.get(external_id="41").text == "A dog ran."


def test_same_file_twice_is_refused_and_nothing_doubles():
    data = payload(CROWD_HEADER, LIKERT_ROWS)
    import_da(data)
    with pytest.raises(Conflict, match="already imported"):
        import_da(data, name="again.csv")
    assert AspectJudgement.objects.count() == 18 and Output.objects.count() == 4


def test_a_bad_file_imports_nothing():
    rows = [*LIKERT_ROWS, "3,42,x,y,T5,4,4,7"]
    with pytest.raises(FormatError) as info:
        import_da(payload(CROWD_HEADER, rows), name="bad.csv", slug="bad")
    assert (info.value.file, info.value.line, info.value.column) == ("bad.csv", 8, "Answer.simplicity")
    assert not Campaign.objects.filter(slug="bad").exists()


def counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Source, Output, AspectJudgement, Annotation))


def test_failure_midway_rolls_back_an_existing_campaign():
    import_da(payload(CROWD_HEADER, LIKERT_ROWS))
    before = counts()
    more = ["5,99,A new source.,New.,T5,3,3,0", "5,40,The cat sat.,Cat sat.,T5,3,3,0"]
    with pytest.raises(FormatError, match="source '40' already has an output of system 'T5'") as info:
        import_da(payload(CROWD_HEADER, more), name="more.csv")
    assert info.value.line == 3
    assert counts() == before


def test_an_aspect_keeps_its_scale_within_a_campaign():
    import_da(payload(CROWD_HEADER, LIKERT_ROWS))
    other = ["0,50,Another source.,Other.,T5,80,90,70", "1,50,Another source.,Other.,T5,20,30,10"]
    with pytest.raises(FormatError, match=r"aspect 'adequacy' is rated on 1\.\.5 in campaign 'da'; this file "
                                          r"rates it on 0\.\.100") as info:
        import_da(payload(CROWD_HEADER, other), name="da100.csv")
    assert (info.value.line, info.value.column) == (1, "Answer.adequacy")


def test_references_one_per_line_or_tab_separated_are_matched_by_text(tmp_path):
    src = tmp_path / "refs.src"
    src.write_text("Unrelated.\nThe cat, tired, sat.\nA dog ran.\n", encoding="utf-8")
    tabbed = tmp_path / "refs.dst"
    tabbed.write_text("No.\nThe cat sat.\tA tired cat sat.\nA dog ran.\tThe dog ran.\n", encoding="utf-8")
    path = tmp_path / "wiki.csv"
    path.write_bytes(payload(DA_HEADER, DA_ROWS))
    call_command("import_da", str(path), "--campaign", "wiki", "--no-analysis", "--references", str(src), str(tabbed))
    assert list(Reference.objects.filter(source__external_id="7").values_list("text", flat=True)) == [
        "The cat sat.", "A tired cat sat."]
    one = tmp_path / "one.dst"
    one.write_text("No.\nA cat sat.\nDog ran.\n", encoding="utf-8")
    likert = tmp_path / "likert.csv"
    likert.write_bytes(payload(CROWD_HEADER, LIKERT_ROWS))
    call_command("import_da", str(likert), "--campaign", "likert", "--no-analysis", "--references", str(src),
                 str(one))
    refs = dict(Reference.objects.filter(source__campaign__slug="likert").values_list("source__external_id", "text"))
    assert refs == {"41": "Dog ran."}


def test_a_source_with_two_texts_keeps_the_one_the_references_know(tmp_path):
    rows = [
        "0,40,The cat sat tierd.,Cat sat.,T5,5,5,2",
        "1,40,The cat sat tired.,Cat sat.,T5,4,3,-1",
    ]
    result = import_da(payload(CROWD_HEADER, rows), references={sentence_key("The cat sat tired."): ["Cat sat."]})
    assert Source.objects.get(external_id="40").text == "The cat sat tired."
    assert result.references == 1
    assert result.warnings == [
        "source '40' has 2 different original texts (line 2 (1 rows), line 3 (1 rows)); kept the one of line 3"]
    without = import_da(payload(CROWD_HEADER, rows), slug="plain")
    assert Source.objects.get(campaign__slug="plain").text == "The cat sat tierd."
    assert without.warnings[0].endswith("kept the one of line 2")


def test_command_errors_are_clear(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(payload(CROWD_HEADER, [*LIKERT_ROWS[:2], "2,41,A dog ran.,Dog ran.,T5,1,x,0"]))
    with pytest.raises(CommandError, match=r"bad\.csv, line 4, column 'Answer\.fluency': 'x' is not a number"):
        call_command("import_da", str(path), "--campaign", "x", "--no-analysis")
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_da", str(tmp_path / "missing.csv"), "--campaign", "x")
    with pytest.raises(CommandError, match="needs a source file and at least one reference file"):
        call_command("import_da", str(path), "--campaign", "x", "--references", str(path))
    good = tmp_path / "good.csv"
    good.write_bytes(payload(CROWD_HEADER, LIKERT_ROWS))
    out = io.StringIO()
    call_command("import_da", str(good), "--campaign", "cmd", "--name", "Likert pilot", "--no-analysis", stdout=out)
    assert "Imported good.csv into campaign 'cmd': 2 sources, 4 outputs" in out.getvalue()
    assert Campaign.objects.get(slug="cmd").name == "Likert pilot"
    with pytest.raises(CommandError, match="already imported"):
        call_command("import_da", str(good), "--campaign", "cmd", "--no-analysis")


def test_api_upload_takes_the_da_kind_and_refuses_a_repeat_with_409(researcher, client_for):
    from annotation.services.campaigns import campaign_create

    campaign_create(name="Crowd", slug="crowd", owner=researcher)
    client = client_for(researcher)
    data = payload(CROWD_HEADER, LIKERT_ROWS)
    done = client.post("/api/campaigns/crowd/imports/",
                       {"file": SimpleUploadedFile("likert.csv", data), "kind": "da"}, format="multipart")
    assert done.status_code == 201, done.content
    assert (done.json()["sources"], done.json()["outputs"]) == (2, 4)
    again = client.post("/api/campaigns/crowd/imports/",
                        {"file": SimpleUploadedFile("likert.csv", data), "kind": "da"}, format="multipart")
    assert again.status_code == 409
    bad = client.post("/api/campaigns/crowd/imports/",
                      {"file": SimpleUploadedFile("bad.csv", payload(CROWD_HEADER, ["0,1,a,b,c,500,1,1"])),
                       "kind": "da"}, format="multipart")
    assert bad.status_code == 400
    assert "bad.csv, line 2, column 'Answer.adequacy'" in bad.content.decode()


def test_admin_import_view_offers_the_da_kind(admin_user, client, researcher):
    from annotation.services.campaigns import campaign_create

    campaign = campaign_create(name="Adm", slug="adm", owner=researcher)
    client.force_login(admin_user)
    url = f"/admin/annotation/campaign/{campaign.pk}/import/"
    assert 'value="da"' in client.get(url).content.decode()
    done = client.post(url, {"file": SimpleUploadedFile("wiki.csv", payload(DA_HEADER, DA_ROWS)), "kind": "da"})
    assert done.status_code == 302 and AspectJudgement.objects.filter(output__source__campaign=campaign).count() == 9
    annotation = Annotation.objects.filter(source__campaign=campaign).first()
    assert annotation is not None
    assert "fluency" in client.get(f"/admin/annotation/annotation/{annotation.pk}/change/").content.decode()


def test_import_page_tells_a_multi_aspect_csv_by_its_header(researcher, client):
    client.force_login(researcher)
    response = client.post("/research/import/", {
        "target": "__new__", "name": "Wiki DA", "slug": "wiki-da", "ratings_per_output": 1, "kind": "auto",
        "file": SimpleUploadedFile("wiki.csv", b"\xef\xbb\xbf" + payload(DA_HEADER, DA_ROWS)),
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    assert campaign_aspects(Campaign.objects.get(slug="wiki-da")) == ["fluency", "meaning", "simplicity"]


# --- The released files ---------------------------------------------------------------------------------


def _import_path(path: Path, slug: str, refs: tuple[Path, Path] | None = None, kind: str = "da") -> ImportResult:
    from annotation.formats import read_reference_files

    references = read_reference_files(refs[0], [refs[1]]) if refs else None
    with path.open("rb") as handle:
        return campaign_import(kind=kind, file=handle, filename=path.name, campaign_slug=slug, references=references,
                               analyse=False)


def test_simplicity_da_imports_600_outputs_with_ten_asset_references_and_z(simpeval_data_dir):
    folder = simpeval_data_dir / "simplicity_da"
    refs = (folder / "references.src", folder / "references.dst")
    result = _import_path(folder / "simplicity_DA.csv", "wiki-da", refs)
    assert (result.sources, result.outputs, result.ratings) == (302, 600, 600)
    assert result.references == 3020 and not result.warnings  # ten ASSET references for every source
    campaign = Campaign.objects.get(slug="wiki-da")
    assert campaign.systems.count() == 6
    assert campaign_aspect_scales(campaign) == {"fluency": "0..100", "meaning": "0..100", "simplicity": "0..100"}
    assert AspectJudgement.objects.filter(output__source__campaign=campaign, z__isnull=True).count() == 0
    assert AspectJudgement.objects.filter(output__source__campaign=campaign).count() == 1800
    # The meta-evaluation drops the sources SimpEval_past also has, by text: 434 outputs stay (LENS paper).
    _import_path(simpeval_data_dir / "simpeval" / "simpeval_past.csv", "past", kind="simpeval")
    past_texts = set(Source.objects.filter(campaign__slug="past").values_list("text", flat=True))
    kept = Output.objects.filter(source__campaign=campaign).exclude(source__text__in=past_texts).count()
    assert kept == 434


@pytest.mark.parametrize(("name", "scales"), [
    ("simpDA_2022.csv", {"adequacy": "0..100", "fluency": "0..100", "simplicity": "0..100"}),
    ("simplikert_2022.csv", {"adequacy": "1..5", "fluency": "1..5", "simplicity": "-2..2"}),
])
def test_crowd_files_import_360_outputs_with_1080_ratings_per_aspect(simpeval_data_dir, name, scales):
    folder = simpeval_data_dir / "simpeval"
    refs = (folder / "simpeval_2022_references.src", folder / "simpeval_2022_references.dst")
    result = _import_path(folder / name, "crowd", refs)
    assert (result.sources, result.outputs, result.ratings) == (60, 360, 1080)
    assert result.aspect_ratings == dict.fromkeys(scales, 1080)
    # Every source has its reference, source 21 included: its text is the one the references know.
    assert result.references == 60
    [warning] = result.warnings
    assert warning.startswith("source '21' has 2 different original texts")
    campaign = Campaign.objects.get(slug="crowd")
    assert campaign_aspect_scales(campaign) == scales
    assert campaign.systems.count() == 6
    # Workers are anonymous slots, never people; one annotation per worker and source.
    slots = set(Annotation.objects.filter(source__campaign=campaign).values_list("rater_slot", flat=True))
    assert slots and all(s.startswith("worker_") for s in slots)
    # The same 60 source texts as SimpEval_2022, so the two campaigns can be compared by text.
    _import_path(folder / "simpeval_2022.csv", "s22", kind="simpeval")
    assert set(Source.objects.filter(campaign__slug="crowd").values_list("text", flat=True)) == set(
        Source.objects.filter(campaign__slug="s22").values_list("text", flat=True))
