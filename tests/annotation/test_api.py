from __future__ import annotations

from typing import Any

import pytest
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, RatingUnit, Source
from tests.factories import STEPS_REVIEWED, public_id, tutorial_public_id

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
    assert client.post(f"/api/assignments/{theirs.pk}/submit/", {"submit_key": "x", "steps_reviewed": STEPS_REVIEWED,
                                                                                    "units": []},
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
    payload = {"submit_key": "same-key", "steps_reviewed": STEPS_REVIEWED, "units": [
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
        f"/api/assignments/{a.pk}/submit/", {"submit_key": "k", "steps_reviewed": STEPS_REVIEWED,
                                                                "units": [{"unit": 1, "category": "x"}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["field"].startswith("units[0]")


@pytest.mark.parametrize(("reviewed", "field"), [
    (None, "steps_reviewed"),
    ({"categorise": "visited"}, "steps_reviewed.edits"),
    ({"categorise": "visited", "edits": "skipped"}, "steps_reviewed.edits"),
    ({"categorise": "visited", "edits": "visited", "rate": "visited"}, "steps_reviewed.rate"),
])
def test_submit_needs_steps_one_and_two_visited_or_confirmed(staffed, annotators, client_for, reviewed, field):
    a = Assignment.objects.filter(annotator=annotators[0]).first()
    client = client_for(annotators[0])
    payload = rated(client, a)
    if reviewed is None:
        del payload["steps_reviewed"]
    else:
        payload["steps_reviewed"] = reviewed
    response = client.post(f"/api/assignments/{a.pk}/submit/", payload, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not a.annotations.filter(status="submitted").exists()
    # Confirming a step without opening it is the other accepted way.
    payload["steps_reviewed"] = {"categorise": "confirmed", "edits": "visited"}
    done = client.post(f"/api/assignments/{a.pk}/submit/", payload, format="json")
    assert done.status_code == 201, done.content
    assert done.json()["status"] == "submitted"


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


def test_token_auth_for_scripts(researcher, api_client, demo_campaign, make_user):
    from annotation.services.campaigns import campaign_create

    campaign_create(name="Someone else's", slug="theirs", owner=make_user("res2", "researcher"))
    token = Token.objects.create(user=researcher)
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-key")
    assert api_client.get("/api/campaigns/").status_code == 401
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = api_client.get("/api/campaigns/")
    assert response.status_code == 200
    body = response.json()
    listed = body["results"] if isinstance(body, dict) else body
    assert [c["slug"] for c in listed] == ["demo"]  # the token's user's campaigns, not the other researcher's


def test_anonymous_is_refused(api_client, demo_campaign):
    assert api_client.get("/api/campaigns/").status_code in (401, 403)


def test_openapi_schema_is_served(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/assignments/{id}/submit/" in response.content


def test_import_api_checks_kind_and_refuses_a_repeat(researcher, client_for):
    client = client_for(researcher)
    client.post("/api/campaigns/", {"name": "Study B"}, format="json")
    with open("fixtures/demo.jsonl", "rb") as handle:
        wrong = client.post("/api/campaigns/study-b/imports/", {"file": handle, "kind": "xml"}, format="multipart")
    assert wrong.status_code == 400 and "kind" in wrong.json()
    for expected in (201, 409):
        with open("fixtures/demo.jsonl", "rb") as handle:
            response = client.post("/api/campaigns/study-b/imports/", {"file": handle, "kind": "jsonl"},
                                   format="multipart")
        assert response.status_code == expected, response.content
    assert "demo.jsonl was already imported" in response.json()["detail"]


def test_import_api_takes_reference_files_like_the_page(researcher, client_for):
    import io

    from annotation.models import Reference

    client = client_for(researcher)
    client.post("/api/campaigns/", {"name": "Study R"}, format="json")
    csv = (b"original_id,original,generation,system,sentence_type,rating_1,rating_1_zscore\n"
           b"1,The cat sat on the mat.,The cat sat.,A,Deletions,80.0,0.5\n")

    def post(src: bytes, dst: bytes) -> Any:
        return client.post("/api/campaigns/study-r/imports/", {
            "file": io.BytesIO(csv), "kind": "simpeval", "reference_source": _named(io.BytesIO(src), "r.src"),
            "references": [_named(io.BytesIO(dst), "r.dst")]}, format="multipart")

    bad = post(b"The cat sat on the mat.\nMore.\n", b"The cat sat.\n")
    assert bad.status_code == 400 and "r.dst" in str(bad.json()) and not Reference.objects.exists()
    good = post(b"The cat sat on the mat.\n", b"The cat sat.\tA cat sat.\n")
    assert good.status_code == 201, good.content
    assert list(Reference.objects.values_list("text", flat=True).order_by("position")) == ["The cat sat.", "A cat sat."]


def _named(handle: Any, name: str) -> Any:
    handle.name = name
    return handle


# --- Rules the services enforce for every interface ---------------------------------------------------------


@pytest.fixture
def tutorial(staffed):
    """One tutorial source whose key wants the output of system TutGood ranked first."""
    from annotation.models import Output, Source, System

    source = Source.objects.create(campaign=staffed, external_id="tut-1", text="The big dog barked loudly.",
                                   is_tutorial=True, order=0)
    units = {}
    for name, text in (("TutGood", "The dog barked."), ("TutBad", "Dog dog loudly the.")):
        system = System.objects.create(campaign=staffed, name=name)
        units[name] = RatingUnit.objects.create(source=source, text=text, text_key=name)
        Output.objects.create(source=source, system=system, unit=units[name], text=text)
    source.tutorial_key = {"ranking": ["TutGood", "TutBad"]}
    source.save()
    return source, units


def rated(client, assignment):
    rows = RatingUnit.objects.filter(source=assignment.source).order_by("id")
    units = [public_id(assignment, unit.pk) for unit in rows]
    return {"submit_key": "k1", "steps_reviewed": STEPS_REVIEWED, "units": [
        {"unit": u, "category": "paraphrase", "rating": 50, "rank": i + 1} for i, u in enumerate(units)]}


def test_rest_api_refuses_work_until_the_tutorial_is_passed(tutorial, annotators, client_for):
    from annotation.services.tutorials import tutorial_answer_check

    source, units = tutorial
    annotator = annotators[0]
    client = client_for(annotator)
    assignment = Assignment.objects.filter(annotator=annotator).order_by("id").first()
    payload = rated(client, assignment)
    refusals = [
        client.post("/api/campaigns/demo/next/"),
        client.get(f"/api/assignments/{assignment.pk}/"),
        client.post(f"/api/assignments/{assignment.pk}/submit/", payload, format="json"),
        client.put(f"/api/assignments/{assignment.pk}/draft/", {"state": {}, "revision": 1}, format="json"),
    ]
    for response in refusals:
        assert response.status_code == 403, response.content
        assert response.json() == {
            "detail": "complete the tutorial of campaign 'demo' before annotating (1 practice sentence(s) left)",
            "field": "tutorial"}
    assert not assignment.annotations.exists()
    wrong = [{"unit": units["TutBad"].pk, "rank": 1, "rating": 80},
             {"unit": units["TutGood"].pk, "rank": 2, "rating": 20}]
    assert tutorial_answer_check(source=source, annotator=annotator, units=wrong)
    assert client.post("/api/campaigns/demo/next/").status_code == 403
    right = [{"unit": units["TutGood"].pk, "rank": 1, "rating": 80},
             {"unit": units["TutBad"].pk, "rank": 2, "rating": 20}]
    assert tutorial_answer_check(source=source, annotator=annotator, units=right) == []
    assert client.post("/api/campaigns/demo/next/").json() == {"assignment": assignment.pk}
    assert client.post(f"/api/assignments/{assignment.pk}/submit/", payload, format="json").status_code == 201
    # The other annotator has not passed it; an annotator who already submitted real work never goes back.
    assert client_for(annotators[1]).post("/api/campaigns/demo/next/").status_code == 403
    source.tutorial_passes.all().delete()
    assert client.post("/api/campaigns/demo/next/").status_code == 200


def test_a_tutorial_pass_is_remembered_across_sessions(tutorial, annotators):
    from django.test import Client

    _, units = tutorial
    source = Source.objects.get(pk=units["TutGood"].source_id)
    right = {"units": [{"unit": tutorial_public_id(annotators[0], source, units[name].pk), "rank": rank,
                        "rating": score} for rank, name, score in ((1, "TutGood", 85), (2, "TutBad", 10))]}
    first = Client()
    first.force_login(annotators[0])
    assert first.post("/campaigns/demo/tutorial/1/check/", right, content_type="application/json").json()["passed"]
    second = Client()
    second.force_login(annotators[0])
    assert second.post("/campaigns/demo/continue/")["Location"].startswith("/annotate/")


def test_the_practice_check_judges_the_whole_answer(tutorial, annotators):
    """Issue 44, defect 13: rating every output 50 passed a practice sentence (only the first and last ranked were
    looked at). The one judge (tutorials.tutorial_problems, behind the page's check and every other client) now
    wants every output ranked and rated, scores that tell the best from the worst and agree with the key's order,
    the middle of the key's ranking kept, and any expected scores of the key met."""
    from annotation.models import Output, System
    from annotation.services.tutorials import tutorial_problems

    source, units = tutorial
    for name, text in (("TutFair", "The dog barked a lot."), ("TutMeh", "The big dog barked loudly, yes.")):
        system = System.objects.create(campaign=source.campaign, name=name)
        units[name] = RatingUnit.objects.create(source=source, text=text, text_key=name)
        Output.objects.create(source=source, system=system, unit=units[name], text=text)
    source.tutorial_key = {"ranking": ["TutGood", "TutFair", "TutMeh", "TutBad"]}
    source.save()

    def answer(*rows):
        return [{"unit": units[name].pk, "rank": i + 1, "rating": score} for i, (name, score) in enumerate(rows)]

    right = answer(("TutGood", 90), ("TutFair", 70), ("TutMeh", 50), ("TutBad", 5))
    assert tutorial_problems(source=source, units=right) == []
    # Neighbours of close quality may swap.
    assert tutorial_problems(source=source, units=answer(("TutGood", 90), ("TutMeh", 60), ("TutFair", 58),
                                                          ("TutBad", 5))) == []
    # Every output 50, in the right order: the scores do not tell the best from the worst.
    flat = tutorial_problems(source=source, units=answer(("TutGood", 50), ("TutFair", 50), ("TutMeh", 50),
                                                         ("TutBad", 50)))
    assert flat and "hardly tell the best output from the worst" in flat[0]
    # Best and worst right, the middle upside down by two places is not.
    bad_middle = tutorial_problems(source=source, units=answer(("TutGood", 90), ("TutBad", 60), ("TutMeh", 50),
                                                               ("TutFair", 10)))
    assert any("should rank above" in p for p in bad_middle)
    # Scores against the key's order (a worse output 30 points above a better one).
    against = tutorial_problems(source=source, units=answer(("TutGood", 90), ("TutFair", 40), ("TutMeh", 70),
                                                            ("TutBad", 5)))
    assert any("which is better" in p for p in against)
    # Not every output rated (or ranked): not done.
    assert tutorial_problems(source=source, units=right[:3]) == [
        "Rank and rate every output first (a score from 0 to 100 for each)."]
    unrated = [{k: v for k, v in row.items() if k != "rating"} for row in right]
    assert tutorial_problems(source=source, units=unrated)
    # Expected scores in the key: within one anchor step (25 points).
    source.tutorial_key = {**source.tutorial_key, "ratings": {"TutGood": 100, "TutBad": 0}}
    source.save()
    assert tutorial_problems(source=source, units=right) == []
    far = tutorial_problems(source=source, units=answer(("TutGood", 70), ("TutFair", 60), ("TutMeh", 50),
                                                        ("TutBad", 40)))
    assert any("deserves about 100; you gave 70" in p for p in far)
    assert any("deserves about 0; you gave 40" in p for p in far)


def test_every_reopen_path_checks_the_permission(staffed, annotators, researcher, admin_user, make_user, client_for):
    from annotation.services.annotations import annotation_reopen
    from core.errors import NotAllowed

    annotator = annotators[0]
    assignment = Assignment.objects.filter(annotator=annotator).order_by("id").first()
    client = client_for(annotator)
    submitted = client.post(f"/api/assignments/{assignment.pk}/submit/", rated(client, assignment), format="json")
    annotation = assignment.annotations.get(pk=submitted.json()["id"])
    stranger = make_user("res2", "researcher")
    # The service refuses anyone but the campaign's researchers and admins, whatever the interface.
    for user in (annotator, annotators[1], stranger):
        with pytest.raises(NotAllowed, match="only the campaign's researchers and admins may reopen"):
            annotation_reopen(annotation=annotation, by=user)
    own = client.post(f"/api/annotations/{annotation.pk}/reopen/")
    assert own.status_code == 403 and "may reopen" in own.json()["detail"]
    # Those who may not even see the annotation get a 404, so ids do not leak.
    assert client_for(stranger).post(f"/api/annotations/{annotation.pk}/reopen/").status_code == 404
    assert client_for(annotators[1]).post(f"/api/annotations/{annotation.pk}/reopen/").status_code == 404
    assert not assignment.annotations.filter(status="draft").exists()
    reopened = client_for(researcher).post(f"/api/annotations/{annotation.pk}/reopen/")
    assert reopened.status_code == 201 and reopened.json()["version"] == 2
    assert client_for(admin_user).post(f"/api/annotations/{annotation.pk}/reopen/").status_code == 409


def test_a_removed_annotator_can_no_longer_read_their_assignment(staffed, annotators, researcher, client_for):
    """The page says 404 once the annotator is removed; the API says the same, for reads and writes."""
    from annotation.services.assignments import campaign_remove_annotator

    a = Assignment.objects.filter(annotator=annotators[0]).first()
    client = client_for(annotators[0])
    assert client.get(f"/api/assignments/{a.pk}/").status_code == 200
    campaign_remove_annotator(campaign=staffed, annotator=annotators[0])
    assert client.get(f"/api/assignments/{a.pk}/").status_code == 404
    assert client.put(f"/api/assignments/{a.pk}/draft/", {"state": {}, "revision": 1},
                      format="json").status_code == 404
    assert client.post(f"/api/assignments/{a.pk}/submit/", {"submit_key": "x", "steps_reviewed": STEPS_REVIEWED,
                                                                               "units": []},
                       format="json").status_code == 404
    # The campaign's researcher still sees it.
    assert client_for(researcher).get(f"/api/assignments/{a.pk}/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_identical_submits_at_once_answer_201_once(staffed, annotators, client_for):
    """Concurrent identical submits: one 201, the others 200 with the same annotation. PostgreSQL only."""
    import threading

    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL concurrency (the SQLite test database is one in-memory connection)")
    from annotation.models import Annotation

    a = Assignment.objects.filter(annotator=annotators[0]).first()
    units = client_for(annotators[0]).get(f"/api/assignments/{a.pk}/").json()["units"]
    payload = {"submit_key": "double-click", "steps_reviewed": STEPS_REVIEWED, "units": [
        {"unit": u["id"], "category": "paraphrase", "rating": 50, "rank": i + 1} for i, u in enumerate(units)
    ]}
    callers = 6
    barrier = threading.Barrier(callers)
    answers: list[tuple[int, int]] = []

    def submit():
        try:
            client = client_for(annotators[0])
            barrier.wait()
            r = client.post(f"/api/assignments/{a.pk}/submit/", payload, format="json")
            answers.append((r.status_code, r.json().get("id")))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(code for code, _ in answers) == [200] * (callers - 1) + [201]
    assert len({pk for _, pk in answers}) == 1
    assert Annotation.objects.filter(assignment=a, status=Annotation.Status.SUBMITTED).count() == 1


def test_ids_shown_to_annotators_reveal_nothing_about_systems(staffed, annotators, client_for):
    """Blinding: the ids on the page, in submit answers and in the annotator's view of an annotation are opaque
    per assignment. Before, they were database ids in import order: sorted, they named the same systems in
    every source."""
    from annotation.models import Annotation, Output

    system_of: dict[object, str] = {}
    for output in Output.objects.filter(source__campaign=staffed).select_related("system", "unit"):
        system_of[output.unit_id] = output.system.name
    mine = list(Assignment.objects.filter(annotator=annotators[0]).order_by("id"))
    orders = set()
    for assignment in mine:
        units = client_for(annotators[0]).get(f"/api/assignments/{assignment.pk}/").json()["units"]
        for unit in units:
            pk = next((u.pk for u in RatingUnit.objects.filter(source=assignment.source)
                       if public_id(assignment, u.pk) == unit["id"] or u.pk == unit["id"]), None)
            assert pk is not None
            system_of[unit["id"]] = system_of[pk]
            assert isinstance(unit["id"], str) and unit["id"] != str(pk)
        orders.add(tuple(system_of[i] for i in sorted(u["id"] for u in units)))
    assert len(mine) >= 3 and len(orders) > 1  # sorted ids do not name systems in a fixed order
    # The same source seen by two annotators has unrelated ids.
    theirs = Assignment.objects.filter(annotator=annotators[1], source=mine[0].source).first()
    if theirs is not None:
        a = {u["id"] for u in client_for(annotators[0]).get(f"/api/assignments/{mine[0].pk}/").json()["units"]}
        b = {u["id"] for u in client_for(annotators[1]).get(f"/api/assignments/{theirs.pk}/").json()["units"]}
        assert not a & b
    # Submitting with those ids works; the annotator's view of the annotation uses them, with no output ids.
    client = client_for(annotators[0])
    units = client.get(f"/api/assignments/{mine[0].pk}/").json()["units"]
    answer = client.post(f"/api/assignments/{mine[0].pk}/submit/", {"submit_key": "k", "steps_reviewed": STEPS_REVIEWED,
                                                                                       "units": [
        {"unit": u["id"], "category": "paraphrase", "rating": 50, "rank": i + 1} for i, u in enumerate(units)]},
        format="json")
    assert answer.status_code == 201, answer.content
    shown = answer.json()["judgements"]
    assert {j["unit"] for j in shown} == {u["id"] for u in units} and all("outputs" not in j for j in shown)
    annotation = Annotation.objects.get(pk=answer.json()["id"])
    assert annotation.judgements.count() == Output.objects.filter(source=mine[0].source).count()
    # A database id in a submit is refused, naming the field.
    other = mine[1]
    pks = list(RatingUnit.objects.filter(source=other.source).values_list("pk", flat=True))
    refused = client.post(f"/api/assignments/{other.pk}/submit/", {"submit_key": "k2", "steps_reviewed": STEPS_REVIEWED,
                                                                                       "units": [
        {"unit": pk, "category": "paraphrase", "rating": 50, "rank": i + 1} for i, pk in enumerate(pks)]},
        format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "units[0].unit"


def test_draft_state_keys_are_closed_on_write_and_older_drafts_read_without_their_other_keys(
    staffed, annotators, client_for, web_client_for,
):
    from annotation.models import Annotation

    assignment = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    client = client_for(annotators[0])
    url = f"/api/assignments/{assignment.pk}/draft/"
    state = {"format": 1, "step": "rate", "visited": ["categorise", "rate"], "ratings": {}, "submit_key": None,
             "groups": {"deletion": [], "paraphrase": [], "split": []}, "edits": {}, "ranking": None,
             "step_seconds": {"rate": 3}, "step_timestamps": {}, "revision": 4}
    assert client.put(url, {"state": state, "revision": 4}, format="json").status_code == 200

    refused = client.put(url, {"state": {**state, "notes": "x"}, "revision": 5}, format="json")
    assert refused.status_code == 400
    assert refused.json()["field"] == "state.notes" and "unknown key(s): notes" in refused.json()["detail"]
    assert Annotation.objects.get(assignment=assignment).draft_revision == 4  # nothing written

    # A draft stored before the keys were closed (free keys, one of them not even JSON-object-shaped).
    Annotation.objects.filter(assignment=assignment).update(draft={**state, "blob": "x" * 1000, "v": [1, {"a": 2}]})
    detail = client.get(f"/api/assignments/{assignment.pk}/")
    assert detail.status_code == 200
    assert detail.json()["annotation"]["draft"] == state
    page = web_client_for(annotators[0]).get(f"/annotate/{assignment.pk}/")
    assert page.status_code == 200 and "blob" not in page.content.decode()
    # Saving over it works as usual.
    assert client.put(url, {"state": {**state, "step": "edits"}, "revision": 6}, format="json").status_code == 200
    assert Annotation.objects.get(assignment=assignment).draft == {**state, "step": "edits"}
