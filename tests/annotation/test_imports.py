from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.formats import FormatError
from annotation.models import Annotation, Campaign, Output, OutputJudgement, RatingUnit, Reference, Slot, Source
from annotation.services.imports import ImportResult, campaign_import
from core.errors import Conflict

HEADER_2022 = (
    "original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_1_zscore,rating_2_zscore\n"
)


def import_file(kind: str, path: Path, **kwargs: Any) -> ImportResult:
    """The service as the commands call it: the file opened in binary, its name for messages."""
    with path.open("rb") as handle:
        return campaign_import(kind=kind, file=handle, filename=path.name, **kwargs)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def simpeval_file(tmp_path: Path, rows: list[str], name: str = "mini.csv") -> Path:
    return write(tmp_path, name, HEADER_2022 + "".join(r + "\n" for r in rows))


GOOD_ROWS = [
    '1,"Die Katze sitzt, müde, auf der Matte.",Die Katze sitzt.,A,Deletions,80.0,70.0,0.5,0.25',
    '1,"Die Katze sitzt, müde, auf der Matte.",Die Katze ist müde. Sie sitzt auf der Matte.,B,Splittings,'
    "90.0,85.0,1.0,0.75",
    "2,Un café très chaud — «servi» ici.,Un café chaud.,A,Deletions,60.0,,-0.5,",
    "2,Un café très chaud — «servi» ici.,Un café chaud.,B,Paraphrases,65.0,55.0,-0.25,-1.0",
]


@pytest.mark.django_db
class TestSimpEvalImport:
    def test_imports_sources_outputs_units_and_pseudo_raters(self, tmp_path):
        result = import_file("simpeval", simpeval_file(tmp_path, GOOD_ROWS), campaign_slug="mini",
                                          analyse=False)
        assert (result.sources, result.outputs, result.ratings) == (2, 4, 7)
        # Identical texts of one source share one rating unit.
        assert result.units == 3
        assert RatingUnit.objects.filter(source__external_id="2").count() == 1
        slots = set(Annotation.objects.values_list("rater_slot", flat=True))
        assert slots == {"rating_1", "rating_2"}
        assert not Annotation.objects.filter(annotator__isnull=False).exists()
        j = OutputJudgement.objects.get(output__system__name="B", output__source__external_id="1",
                                        annotation__rater_slot="rating_2")
        assert (j.rating, j.z_score, j.category) == (85.0, 0.75, "split")
        assert Campaign.objects.get(slug="mini").ratings_per_output == 2
        # Imported data is already rated: no slots to distribute.
        assert Slot.objects.count() == 0

    def test_same_file_twice_is_refused_and_nothing_doubles(self, tmp_path):
        path = simpeval_file(tmp_path, GOOD_ROWS)
        import_file("simpeval", path, campaign_slug="mini", analyse=False)
        with pytest.raises(Conflict, match="already imported"):
            import_file("simpeval", path, campaign_slug="mini", analyse=False)
        assert Output.objects.count() == 4
        assert OutputJudgement.objects.count() == 7

    @pytest.mark.parametrize(
        ("rows", "line", "column", "message"),
        [
            (GOOD_ROWS[:1] + ['1,"Die Katze sitzt, müde, auf der Matte.",X,B,Deletions,101,5,0.1,0.2'], 3,
             "rating_1", "outside 0-100"),
            (GOOD_ROWS[:1] + ['1,"Die Katze sitzt, müde, auf der Matte.",X,B,Deletions,abc,5,0.1,0.2'], 3,
             "rating_1", "not a number"),
            (GOOD_ROWS[:2] + ['1,"Die Katze sitzt, müde, auf der Matte.",Y,A,Deletions,50,5,0.1,0.2'], 4,
             None, "duplicate row for source '1' and system 'A'"),
            (GOOD_ROWS[:1] + ["3,,Y,A,Deletions,50,5,0.1,0.2"], 3, "original", "empty value"),
            (GOOD_ROWS[:1] + ["3,Some text,Y,A,Splitz,50,5,0.1,0.2"], 3, "sentence_type", "unknown sentence_type"),
            (GOOD_ROWS[:1] + ["3,Some text,Y,A,Deletions,50"], 3, None, "expected 9 fields"),
        ],
    )
    def test_bad_rows_name_file_line_and_column_and_import_nothing(self, tmp_path, rows, line, column, message):
        path = simpeval_file(tmp_path, rows)
        with pytest.raises(FormatError) as info:
            import_file("simpeval", path, campaign_slug="bad", analyse=False)
        error = info.value
        assert (error.file, error.line, error.column) == ("mini.csv", line, column)
        assert message in str(error)
        assert not Campaign.objects.filter(slug="bad").exists()
        assert Output.objects.count() == 0

    def test_missing_column(self, tmp_path):
        path = write(tmp_path, "nocol.csv", "original_id,original,system,rating_1\n1,a,b,5\n")
        with pytest.raises(FormatError, match=r"nocol.csv, line 1: missing required column\(s\): generation"):
            import_file("simpeval", path, campaign_slug="bad", analyse=False)

    def test_failure_midway_rolls_back_an_existing_campaign(self, tmp_path, researcher):
        import_file("simpeval", simpeval_file(tmp_path, GOOD_ROWS), campaign_slug="mini", analyse=False)
        before = (Source.objects.count(), Output.objects.count(), OutputJudgement.objects.count())
        # A new source is fine, but a row of an existing (source, system) pair fails at the end.
        rows = ['9,New source,Text,A,Deletions,50,50,0,0', GOOD_ROWS[0].replace("80.0", "81.0")]
        with pytest.raises(FormatError, match="already has an output of system 'A'"):
            import_file("simpeval", simpeval_file(tmp_path, rows, "more.csv"), campaign_slug="mini",
                                     analyse=False)
        assert (Source.objects.count(), Output.objects.count(), OutputJudgement.objects.count()) == before

    def test_command_reports_errors_clearly(self, tmp_path):
        path = simpeval_file(tmp_path, GOOD_ROWS[:1] + ["3,Some text,Y,A,Deletions,500,5,0.1,0.2"])
        with pytest.raises(CommandError, match=r"mini.csv, line 3, column 'rating_1': rating 500 is outside 0-100"):
            call_command("import_simpeval", str(path), "--campaign", "x", "--no-analysis")

    def test_references_are_matched_by_text(self, tmp_path):
        src = write(tmp_path, "refs.src", "Unrelated sentence.\nUn café très chaud — «servi» ici.\n")
        dst = write(tmp_path, "refs.dst", "Nothing.\tNope.\nCafé chaud.\tUn café brûlant.\n")
        call_command("import_simpeval", str(simpeval_file(tmp_path, GOOD_ROWS)), "--campaign", "mini",
                     "--no-analysis", "--references", str(src), str(dst))
        refs = list(Reference.objects.filter(source__external_id="2").values_list("text", flat=True))
        assert refs == ["Café chaud.", "Un café brûlant."]
        assert not Reference.objects.filter(source__external_id="1").exists()


@pytest.mark.django_db
class TestJsonlImport:
    def test_demo_fixture_imports_with_slots(self, researcher):
        from annotation.services.campaigns import campaign_create

        campaign_create(name="Demo", slug="demo", owner=researcher, ratings_per_output=2)
        result = import_file("jsonl", Path("fixtures/demo.jsonl"), campaign_slug="demo", analyse=False)
        assert result.sources == 4
        assert result.outputs == 4 * 9
        assert result.units == 4 * 8  # the two copies of the source share a unit
        assert Slot.objects.count() == 4 * 2
        assert Reference.objects.count() == 8

    @pytest.mark.parametrize(
        ("text", "line", "column", "message"),
        [
            ('{"id": "a", "source": "S", "outputs": [{"system": "x", "text": "T"}]}\n{"id": "b", "source": ', 2,
             "char 23", "invalid JSON"),
            ('{"id": "a", "source": "", "outputs": [{"system": "x", "text": "T"}]}', 1, "source", "empty text"),
            ('{"id": "a", "source": "S", "outputs": [{"system": "x", "text": "T"}, {"system": "x", "text": "U"}]}',
             1, "outputs[1].system", "duplicate system"),
            ('{"id": "a", "source": "S", "outputs": []}', 1, "outputs", "non-empty list"),
            ('{"id": "a", "source": "S", "outputs": [{"system": "x"}]}', 1, "outputs[0]", "expected"),
        ],
    )
    def test_bad_lines(self, tmp_path, text, line, column, message):
        path = write(tmp_path, "bad.jsonl", text)
        with pytest.raises(FormatError) as info:
            import_file("jsonl", path, campaign_slug="bad", analyse=False)
        assert (info.value.file, info.value.line, info.value.column) == ("bad.jsonl", line, column)
        assert message in str(info.value)
        assert not Campaign.objects.filter(slug="bad").exists()

    def test_unicode_survives_import_and_jsonl_export(self, tmp_path):
        text = "Ελληνικά, 中文, emoji 🙂 and “quotes”."
        item = {"id": "u1", "source": text, "references": ["简单。"], "outputs": [{"system": "s", "text": text}]}
        path = write(tmp_path, "u.jsonl", json.dumps(item, ensure_ascii=False) + "\n")
        import_file("jsonl", path, campaign_slug="uni", analyse=False)
        out = tmp_path / "out.jsonl"
        call_command("export_jsonl", "--campaign", "uni", "--out", str(out))
        exported = json.loads(out.read_text(encoding="utf-8"))
        assert exported["source"] == text
        assert exported["references"] == ["简单。"]
        assert exported["outputs"][0]["text"] == text


@pytest.mark.django_db
class TestImportService:
    """One service for every interface: file objects in, kind checked, one transaction, repeats refused."""

    def test_takes_any_binary_file_object_and_names_it_in_errors(self):
        import io

        from core.errors import ServiceError

        text = (HEADER_2022 + "".join(r + "\n" for r in GOOD_ROWS)).encode("utf-8")
        result = campaign_import(kind="simpeval", file=io.BytesIO(b"\xef\xbb\xbf" + text), filename="upload.csv",
                                 campaign_slug="mini", analyse=False)
        assert (result.sources, result.outputs, result.batch.filename) == (2, 4, "upload.csv")
        with pytest.raises(FormatError, match=r"latin\.csv: not UTF-8 text \(byte 0\)"):
            campaign_import(kind="simpeval", file=io.BytesIO(b"\xff\xfe"), filename="latin.csv",
                            campaign_slug="other", analyse=False)
        with pytest.raises(ServiceError, match="unknown import kind 'xml'") as info:
            campaign_import(kind="xml", file=io.BytesIO(text), filename="a.xml", campaign_slug="x", analyse=False)
        assert info.value.field == "kind"
        assert not Campaign.objects.filter(slug__in=["other", "x"]).exists()

    def test_same_bytes_under_another_name_are_refused(self):
        import io

        payload = Path("fixtures/demo.jsonl").read_bytes()
        campaign_import(kind="jsonl", file=io.BytesIO(payload), filename="demo.jsonl", campaign_slug="d",
                        analyse=False)
        with pytest.raises(Conflict, match=r"copy\.jsonl was already imported into campaign 'd' \(as demo\.jsonl"):
            campaign_import(kind="jsonl", file=io.BytesIO(payload), filename="copy.jsonl", campaign_slug="d",
                            analyse=False)

    def test_import_jsonl_command_opens_the_file(self, tmp_path):
        call_command("import_jsonl", "fixtures/demo.jsonl", "--campaign", "cmd", "--name", "From the command",
                     "--no-analysis")
        campaign = Campaign.objects.get(slug="cmd")
        assert campaign.name == "From the command"
        assert campaign.imports.get().filename == "demo.jsonl"
        with pytest.raises(CommandError, match=r"demo\.jsonl was already imported"):
            call_command("import_jsonl", "fixtures/demo.jsonl", "--campaign", "cmd", "--no-analysis")
        with pytest.raises(CommandError, match="no such file"):
            call_command("import_jsonl", str(tmp_path / "missing.jsonl"), "--campaign", "cmd")


@pytest.mark.django_db
def test_admin_import_view_passes_the_upload_to_the_service(admin_user, client, researcher):
    from annotation.services.campaigns import campaign_create

    campaign = campaign_create(name="Adm", slug="adm", owner=researcher)
    client.force_login(admin_user)
    url = f"/admin/annotation/campaign/{campaign.pk}/import/"
    with open("fixtures/demo.jsonl", "rb") as handle:
        done = client.post(url, {"file": handle, "kind": "jsonl"})
    assert done.status_code == 302 and campaign.sources.count() == 4
    assert campaign.imports.get().created_by == admin_user
    with open("fixtures/demo.jsonl", "rb") as handle:
        again = client.post(url, {"file": handle, "kind": "jsonl"}, follow=True)
    assert "demo.jsonl was already imported" in again.content.decode().lower()
