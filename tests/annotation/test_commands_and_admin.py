"""The import_jsonl and load_demo commands, the Django admin's import view and its export action."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.models import Campaign, Output, Source, User

pytestmark = pytest.mark.django_db

SIMPEVAL_CSV = (
    "original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_1_zscore,rating_2_zscore\n"
    "1,The old man sat on the bench for hours.,The man sat.,A,Deletions,80.0,70.0,0.5,0.25\n"
    "1,The old man sat on the bench for hours.,The old man sat. He stayed for hours.,B,Splittings,90.0,85.0,1.0,0.75\n"
)


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


# --- import_jsonl -------------------------------------------------------------------------------------------


def test_import_jsonl_creates_the_campaign_and_refuses_the_same_file_twice(demo_jsonl: Path) -> None:
    summary = run("import_jsonl", str(demo_jsonl), "--campaign", "pilot", "--name", "Pilot", "--no-analysis")
    campaign = Campaign.objects.get(slug="pilot")
    lines = [json.loads(line) for line in demo_jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert campaign.name == "Pilot" and campaign.sources.count() == len(lines)
    assert Output.objects.filter(source__campaign=campaign).count() == sum(len(x["outputs"]) for x in lines)
    assert str(len(lines)) in summary
    with pytest.raises(CommandError, match="already imported"):
        run("import_jsonl", str(demo_jsonl), "--campaign", "pilot", "--no-analysis")
    assert campaign.sources.count() == len(lines)


def test_import_jsonl_names_the_missing_file_and_the_bad_line(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such file"):
        run("import_jsonl", str(tmp_path / "absent.jsonl"), "--campaign", "x")
    bad = tmp_path / "bad.jsonl"
    good = {"id": "1", "source": "A long sentence.", "references": [], "outputs": [{"system": "S", "text": "Short."}]}
    bad.write_text(json.dumps(good) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"bad\.jsonl.*2"):
        run("import_jsonl", str(bad), "--campaign", "x", "--no-analysis")
    assert not Source.objects.filter(campaign__slug="x").exists()  # one transaction: nothing imported


# --- load_demo ----------------------------------------------------------------------------------------------


def test_load_demo_is_idempotent_and_its_logins_work(client: Any) -> None:
    first = run("load_demo", "--no-analysis")
    run("load_demo", "--no-analysis")
    assert "annotator1" in first and "rank-and-rate" in first
    roles = dict(User.objects.values_list("username", "role"))
    assert roles == {"admin": "admin", "researcher": "researcher", "annotator1": "annotator", "annotator2": "annotator"}
    demo = Campaign.objects.get(slug="demo")
    assert demo.sources.exists() and demo.instructions
    assert set(demo.memberships.filter(active=True).values_list("annotator__username", flat=True)) == {
        "annotator1", "annotator2"}
    assert demo.assignments.filter(annotator__username="annotator1").exists()
    assert Campaign.objects.count() == 1
    # Through the login page: sign-in lock-out (django-axes) needs the request, which Client.login does not pass.
    signed_in = client.post("/login/", {"username": "annotator1", "password": "rank-and-rate"})
    assert signed_in.status_code == 302 and client.session["_auth_user_id"]
    assert User.objects.get(username="admin").is_superuser


# --- Django admin -------------------------------------------------------------------------------------------


@pytest.fixture
def admin_client_(admin_user: Any, web_client_for: Any) -> Any:
    return web_client_for(admin_user)


def test_admin_import_view_imports_a_simpeval_csv_and_export_action_gives_it_back(admin_client_: Any) -> None:
    campaign = Campaign.objects.create(name="Admin study", slug="admin-study")
    url = f"/admin/annotation/campaign/{campaign.pk}/import/"
    assert admin_client_.get(url).status_code == 200
    upload = SimpleUploadedFile("mini.csv", SIMPEVAL_CSV.encode(), content_type="text/csv")
    response = admin_client_.post(url, {"kind": "simpeval", "file": upload})
    assert response.status_code == 302 and response["Location"] == f"/admin/annotation/campaign/{campaign.pk}/change/"
    assert Output.objects.filter(source__campaign=campaign).count() == 2
    exported = admin_client_.post("/admin/annotation/campaign/",
                                  {"action": "export_simpeval", "_selected_action": [campaign.pk]})
    assert exported.status_code == 200
    assert exported["Content-Disposition"] == 'attachment; filename="admin-study.csv"'
    assert exported.content.decode() == SIMPEVAL_CSV


def test_admin_import_view_shows_the_error_and_imports_nothing(admin_client_: Any) -> None:
    campaign = Campaign.objects.create(name="Admin study", slug="admin-study")
    upload = SimpleUploadedFile("broken.jsonl", b'{"id": "1"}\n', content_type="application/json")
    response = admin_client_.post(f"/admin/annotation/campaign/{campaign.pk}/import/",
                                  {"kind": "jsonl", "file": upload}, follow=True)
    assert response.status_code == 400  # the form again, with the message, as on the research import page
    messages = [str(m) for m in response.context["messages"]]
    assert len(messages) == 1 and "broken.jsonl" in messages[0]
    assert not campaign.sources.exists()


def test_admin_export_action_wants_exactly_one_campaign(admin_client_: Any) -> None:
    ids = [Campaign.objects.create(name=f"C{i}", slug=f"c{i}").pk for i in range(2)]
    response = admin_client_.post("/admin/annotation/campaign/", {"action": "export_simpeval", "_selected_action": ids},
                                  follow=True)
    assert response.status_code == 200
    assert "Choose exactly one campaign to export." in [str(m) for m in response.context["messages"]]


def test_admin_import_view_is_for_staff_only(researcher: Any, web_client_for: Any) -> None:
    campaign = Campaign.objects.create(name="Admin study", slug="admin-study")
    response = web_client_for(researcher).get(f"/admin/annotation/campaign/{campaign.pk}/import/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_import_of_a_file_over_the_limit_gets_413_with_the_message(admin_client_: Any, settings: Any) -> None:
    settings.MAX_UPLOAD_BYTES = 10
    campaign = Campaign.objects.create(name="Admin study", slug="admin-study")
    upload = SimpleUploadedFile("mini.csv", SIMPEVAL_CSV.encode(), content_type="text/csv")
    response = admin_client_.post(f"/admin/annotation/campaign/{campaign.pk}/import/",
                                  {"kind": "simpeval", "file": upload})
    assert response.status_code == 413
    assert "ini.csv is larger than the 10 bytes" in response.content.decode()  # the admin capitalises messages
    assert not Output.objects.filter(source__campaign=campaign).exists()
