"""Researcher pages: campaign list, dashboard and import form."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Assignment, Campaign, Output
from annotation.services.assignments import campaign_add_annotators
from core.errors import ServiceError

pytestmark = pytest.mark.django_db


def test_research_home_lists_own_campaigns(demo_campaign, researcher, make_user, client):
    other = make_user("res2", "researcher")
    from annotation.services.campaigns import campaign_create

    campaign_create(name="Someone else's", slug="theirs", owner=other)
    client.force_login(researcher)
    page = client.get("/research/").content.decode()
    assert "/research/campaigns/demo/" in page and "theirs" not in page
    client.force_login(make_user("boss", "admin"))
    page = client.get("/research/").content.decode()
    assert "demo" in page and "theirs" in page


def test_dashboard_renders_for_owner_and_admin_only(demo_campaign, researcher, annotators, make_user, client):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    client.force_login(researcher)
    response = client.get("/research/campaigns/demo/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-report-url="/api/campaigns/demo/report/"' in page
    assert 'data-ws-path="/ws/campaigns/demo/"' in page
    assert "/api/campaigns/demo/leaderboard.csv" in page
    # The owner sees who is behind each pseudonym (issue 14); exports keep pseudonyms only.
    assert f'data-pseudonym="{annotators[0].pseudonym}"' in page and f"<td>{annotators[0].username}</td>" in page
    assert page.count('class="cell" data-source=') == 4
    client.force_login(annotators[0])
    assert client.get("/research/campaigns/demo/").status_code == 403
    assert client.get("/research/").status_code == 403
    client.force_login(make_user("res2", "researcher"))
    assert client.get("/research/campaigns/demo/").status_code == 404
    client.force_login(make_user("boss", "admin"))
    assert client.get("/research/campaigns/demo/").status_code == 200
    client.logout()
    assert client.get("/research/campaigns/demo/").status_code == 302  # to the login page


def test_import_page_creates_campaign_imports_and_adds_annotators(researcher, annotators, client, demo_jsonl):
    client.force_login(researcher)
    assert client.get("/research/import/").status_code == 200
    upload = SimpleUploadedFile("demo.jsonl", demo_jsonl.read_bytes())
    response = client.post("/research/import/", {
        "target": "__new__", "name": "Pilot study", "slug": "", "instructions": "Rate **carefully**.",
        "ratings_per_output": 2, "file": upload, "kind": "auto",
        "annotators": f"{annotators[0].username}, {annotators[1].username}",
    })
    assert response.status_code == 302 and response["Location"] == "/research/campaigns/pilot-study/"
    campaign = Campaign.objects.get(slug="pilot-study")
    assert researcher in campaign.owners.all() and campaign.ratings_per_output == 2
    assert Output.objects.filter(source__campaign=campaign).count() == 36
    assert Assignment.objects.filter(campaign=campaign).count() == 8
    page = client.get(response["Location"]).content.decode()
    assert "Imported demo.jsonl" in page


def test_import_errors_name_file_line_and_column_and_leave_nothing(researcher, client):
    client.force_login(researcher)
    bad = (b'{"id": "a", "source": "A sentence.", "outputs": [{"system": "X", "text": "A."}]}\n'
           b'{"id": "b", "source": 5}\n')
    response = client.post("/research/import/", {
        "target": "__new__", "name": "Broken", "slug": "broken", "file": SimpleUploadedFile("bad.jsonl", bad),
        "kind": "auto", "ratings_per_output": 3,
    })
    assert response.status_code == 400
    page = response.content.decode()
    assert "bad.jsonl" in page and "<dt>Line</dt><dd>2</dd>" in page
    assert not Campaign.objects.filter(slug="broken").exists()


def test_import_form_checks_usernames_and_names(researcher, client):
    client.force_login(researcher)
    response = client.post("/research/import/", {
        "target": "__new__", "name": "", "file": SimpleUploadedFile("x.txt", b"x"), "kind": "auto",
        "annotators": "nobody-here",
    })
    assert response.status_code == 400
    page = response.content.decode()
    assert "no annotator with the username(s) nobody-here can be added" in page
    assert "A new campaign needs a name" in page
    assert "Cannot tell the format" in page


def test_import_page_is_for_researchers(annotators, client):
    client.force_login(annotators[0])
    assert client.get("/research/import/").status_code == 403


@pytest.mark.data
def test_import_page_takes_a_simpeval_csv_into_an_existing_campaign(researcher, simpeval_data_dir, client):
    from annotation.services.campaigns import campaign_create

    campaign_create(name="S22", slug="s22", owner=researcher)
    client.force_login(researcher)
    path = simpeval_data_dir / "simpeval" / "simpeval_2022.csv"
    response = client.post("/research/import/", {
        "target": "s22", "file": SimpleUploadedFile("simpeval_2022.csv", path.read_bytes()), "kind": "auto",
    })
    assert response.status_code == 302
    home = client.get("/research/").content.decode()
    assert "1080" in home


def test_an_upload_over_the_limit_gets_413_with_the_message_on_the_form(researcher, client, demo_jsonl, settings):
    from annotation.models import ImportBatch

    settings.MAX_UPLOAD_BYTES = 1000
    client.force_login(researcher)
    content = demo_jsonl.read_bytes()
    assert len(content) > 1000
    response = client.post("/research/import/", {
        "target": "__new__", "name": "Too big", "slug": "too-big", "file": SimpleUploadedFile("big.jsonl", content),
        "kind": "auto", "ratings_per_output": 3,
    })
    assert response.status_code == 413
    page = response.content.decode()
    assert "Nothing was imported" in page and "big.jsonl is larger than the 1,000 bytes" in page
    assert 'name="file"' in page  # the form, to try again with a smaller file
    assert not Campaign.objects.filter(slug="too-big").exists() and not ImportBatch.objects.exists()


SIMPEVAL_MINI = (
    b"original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_1_zscore,rating_2_zscore\n"
    b'1,"The cat sat, tired, on the mat.",The cat sat.,A,Deletions,80.0,70.0,0.5,0.25\n'
    b"2,A very hot coffee is served here.,A hot coffee.,A,Deletions,60.0,55.0,-0.5,-1.0\n"
)


def _simpeval_with_references(client, *, src: bytes, dsts: list[tuple[str, bytes]], kind: str = "auto"):
    return client.post("/research/import/", {
        "target": "__new__", "name": "With refs", "slug": "with-refs", "ratings_per_output": 2, "kind": kind,
        "file": SimpleUploadedFile("mini.csv", SIMPEVAL_MINI),
        "reference_source": SimpleUploadedFile("mini.src", src),
        "references": [SimpleUploadedFile(name, content) for name, content in dsts],
    })


def test_import_page_takes_reference_files_so_lens_can_train_on_the_campaign(researcher, client):
    """Issue 44 (6): a campaign imported from the page had no references, and LENS training refused it."""
    from annotation.models import Reference
    from metrics.services.learned import check_version_sources, learned_config, learned_kind

    client.force_login(researcher)
    page = client.get("/research/import/").content.decode()
    assert 'name="reference_source"' in page and 'name="references"' in page and "multiple" in page
    response = _simpeval_with_references(
        client, src=b"A very hot coffee is served here.\nThe cat sat, tired, on the mat.\n",
        dsts=[("mini.simp.0", b"A hot coffee is here.\nThe cat sat.\n"),
              ("mini.simp.1", b"Hot coffee here.\tCoffee is served.\nThe cat sat on the mat.\n")])
    assert response.status_code == 302, response.content.decode()
    campaign = Campaign.objects.get(slug="with-refs")
    refs = list(Reference.objects.filter(source__campaign=campaign, source__external_id="2")
                .order_by("position").values_list("text", flat=True))
    assert refs == ["A hot coffee is here.", "Hot coffee here.", "Coffee is served."]
    assert "5 references" in client.get(response["Location"]).content.decode()
    lens = learned_kind("lens")
    check_version_sources(lens, learned_config(lens, {}), campaigns=[campaign], corpora=[])  # no "no references"


def test_reference_file_errors_sit_next_to_their_field_with_line_and_column(researcher, client, settings):
    client.force_login(researcher)
    response = _simpeval_with_references(client, src=b"One.\nTwo.\n", dsts=[("mini.dst", b"Only one line.\n")])
    assert response.status_code == 400
    form = response.context["form"]
    assert "mini.dst: has 1 lines but mini.src has 2" in form.errors["references"][0]
    settings.IMPORT_MAX_TEXT_CHARS = 10
    response = _simpeval_with_references(client, src=b"One.\n", dsts=[("mini.dst", b"A.\tA far too long one.\n")])
    assert "mini.dst, line 1, column 'reference 2'" in response.context["form"].errors["references"][0]
    settings.IMPORT_MAX_TEXT_CHARS = 20000
    response = _simpeval_with_references(client, src=b"One.\n", dsts=[("a.dst", b"A.\n")], kind="jsonl")
    assert "holds its own references" in response.context["form"].errors["references"][0]
    response = client.post("/research/import/", {
        "target": "__new__", "name": "No src", "slug": "no-src", "kind": "simpeval",
        "file": SimpleUploadedFile("mini.csv", SIMPEVAL_MINI), "references": [SimpleUploadedFile("a.dst", b"A.\n")]})
    assert "file of source sentences" in response.context["form"].errors["reference_source"][0]
    assert not Campaign.objects.filter(slug__in=["with-refs", "no-src"]).exists()
    assert 'class="field-error"' in response.content.decode()


@pytest.mark.parametrize(("kind", "with_source", "field", "said"), [
    ("jsonl", True, "references", "a JSONL file holds its own references"),
    ("simpeval", False, "reference_source", "give the file of source sentences"),
])
def test_the_page_and_the_api_refuse_reference_files_by_one_rule(researcher, client, client_for, kind, with_source,
                                                                 field, said):
    """The page, the API and the service each checked reference files in their own words (the API let a JSONL
    import with references reach the service, which said it differently)."""
    from annotation.services.campaigns import campaign_create
    from annotation.services.imports import import_references_check

    with pytest.raises(ServiceError) as rule:
        import_references_check(kind=kind, source_given=with_source, files_given=True)
    assert rule.value.field == field and rule.value.message.startswith(said)

    def files() -> dict[str, Any]:
        sent: dict[str, Any] = {"references": [SimpleUploadedFile("a.dst", b"A.\n")]}
        if with_source:
            sent["reference_source"] = SimpleUploadedFile("mini.src", b"One.\n")
        return sent

    client.force_login(researcher)
    page = client.post("/research/import/", {"target": "__new__", "name": "Refs", "slug": "refs", "kind": kind,
                                             "file": SimpleUploadedFile("mini.csv", SIMPEVAL_MINI), **files()})
    assert page.status_code == 400 and page.context["form"].errors[field] == [rule.value.reason]
    campaign_create(name="Api", slug="api-refs", owner=researcher)
    api = client_for(researcher).post("/api/campaigns/api-refs/imports/",
                                      {"file": SimpleUploadedFile("mini.csv", SIMPEVAL_MINI), "kind": kind, **files()},
                                      format="multipart")
    assert api.status_code == 400 and api.json()["field"] == field and api.json()["detail"] == rule.value.message
