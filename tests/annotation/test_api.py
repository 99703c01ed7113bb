from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, RatingUnit

pytestmark = pytest.mark.django_db


@pytest.fixture
def staffed(staffed_campaign):
    return staffed_campaign


def test_annotator_sees_only_own_assignments(staffed, annotators, client_for):
    mine = Assignment.objects.filter(annotator=annotators[0]).first()
    theirs = Assignment.objects.filter(annotator=annotators[1]).first()
    client = client_for(annotators[0])
    listed = client.get("/api/assignments/").json()
    assert {a["id"] for a in listed} == set(
        Assignment.objects.filter(annotator=annotators[0]).values_list("id", flat=True)
    )
    assert client.get(f"/api/assignments/{mine.pk}/").status_code == 200
    assert client.get(f"/api/assignments/{theirs.pk}/").status_code == 404
    assert client.put(f"/api/assignments/{theirs.pk}/draft/", {"state": {}, "revision": 1},
                      format="json").status_code == 404
    assert client.post(f"/api/assignments/{theirs.pk}/submit/", {"submit_key": "x", "units": []},
                       format="json").status_code == 404


def test_assignment_detail_hides_system_names_and_is_stably_shuffled(staffed, annotators, client_for):
    a = Assignment.objects.filter(annotator=annotators[0]).first()
    client = client_for(annotators[0])
    first = client.get(f"/api/assignments/{a.pk}/").json()
    second = client.get(f"/api/assignments/{a.pk}/").json()
    assert [u["id"] for u in first["units"]] == [u["id"] for u in second["units"]]
    assert len(first["units"]) == RatingUnit.objects.filter(source=a.source).count()
    body = str(first)
    for name in ("Copy", "Scramble", "Splitter", "Trimmer", "Hallucinator"):
        assert name not in body


def test_submit_through_api_twice_gives_one_annotation(staffed, annotators, client_for):
    a = Assignment.objects.filter(annotator=annotators[0]).first()
    client = client_for(annotators[0])
    units = client.get(f"/api/assignments/{a.pk}/").json()["units"]
    payload = {"submit_key": "same-key", "units": [
        {"unit": u["id"], "category": "paraphrase", "rating": 50, "rank": i + 1} for i, u in enumerate(units)
    ]}
    r1 = client.post(f"/api/assignments/{a.pk}/submit/", payload, format="json")
    r2 = client.post(f"/api/assignments/{a.pk}/submit/", payload, format="json")
    assert (r1.status_code, r2.status_code) == (201, 200)
    assert r1.json()["id"] == r2.json()["id"]
    bad = client.post(f"/api/assignments/{a.pk}/submit/", {**payload, "submit_key": "other"}, format="json")
    assert bad.status_code == 409


def test_submit_errors_are_clear(staffed, annotators, client_for):
    a = Assignment.objects.filter(annotator=annotators[0]).first()
    response = client_for(annotators[0]).post(
        f"/api/assignments/{a.pk}/submit/", {"submit_key": "k", "units": [{"unit": 1, "category": "x"}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["field"].startswith("units[0]")


def test_researcher_permissions(staffed, researcher, make_user, annotators, client_for, admin_user):
    other = make_user("res2", "researcher")
    assert client_for(researcher).get("/api/campaigns/demo/progress/").status_code == 200
    assert client_for(other).get("/api/campaigns/demo/progress/").status_code == 404
    assert client_for(annotators[0]).get("/api/campaigns/demo/progress/").status_code == 403
    assert client_for(admin_user).get("/api/campaigns/demo/progress/").status_code == 200
    assert client_for(annotators[0]).get("/api/campaigns/demo/export/").status_code == 403
    assert client_for(annotators[0]).post("/api/campaigns/", {"name": "Mine"}).status_code == 403
    assert [c["slug"] for c in client_for(other).get("/api/campaigns/").json()] == []


def test_researcher_creates_campaign_uploads_and_adds_annotators(researcher, annotators, client_for, tmp_path):
    client = client_for(researcher)
    created = client.post("/api/campaigns/", {"name": "Study A", "ratings_per_output": 1}, format="json")
    assert created.status_code == 201 and created.json()["slug"] == "study-a"
    with open("fixtures/demo.jsonl", "rb") as handle:
        upload = client.post("/api/campaigns/study-a/imports/", {"file": handle, "kind": "jsonl"},
                             format="multipart")
    assert upload.status_code == 201, upload.content
    assert upload.json()["sources"] == 4
    added = client.post("/api/campaigns/study-a/annotators/", {"usernames": [annotators[0].username]},
                        format="json")
    assert added.json() == {"assigned": 4}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n')
    with bad.open("rb") as handle:
        failed = client.post("/api/campaigns/study-a/imports/", {"file": handle, "kind": "jsonl"},
                             format="multipart")
    assert failed.status_code == 400
    assert failed.json()["line"] == 1 and failed.json()["column"] == "source"
    export = client.get("/api/campaigns/study-a/export/?type=jsonl")
    assert export.status_code == 200
    assert b'"id": "harbour"' in b"".join(export.streaming_content)


def test_token_auth_for_scripts(researcher, api_client):
    token = Token.objects.create(user=researcher)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.get("/api/campaigns/").status_code == 200


def test_anonymous_is_refused(api_client, demo_campaign):
    assert api_client.get("/api/campaigns/").status_code in (401, 403)


def test_openapi_schema_is_served(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/assignments/{id}/submit/" in response.content
