"""The annotator's requests do only their own work: their database statements are pinned here.

Counts are of what the request sends, token authentication included; inside the test's transaction
BEGIN/COMMIT show up as SAVEPOINT/RELEASE SAVEPOINT, which the totals count. Submit: the token, the
assignment under its lock (with the visibility rule), the outputs with the live versions, the annotation,
the assignment and the judgements: six statements. The dashboards' broadcast runs after commit on the worker.
"""

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, OutputJudgement
from tests.factories import STEPS_REVIEWED

TRANSACTION = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")


@pytest.fixture
def token_client():
    def make(user):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return client

    return make


def statements(captured):
    """The captured statements other than transaction control; a prepared read's ``EXECUTE`` (PostgreSQL,
    core.prepared) is read as the statement it runs."""
    prepared: dict[str, str] = {}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT name, statement FROM pg_prepared_statements")
            prepared = dict(cursor.fetchall())
    sent = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(TRANSACTION)]
    return [prepared[sql.split()[1].split("(")[0]] if sql.startswith("EXECUTE ") else sql for sql in sent]


def answer_for(client, assignment):
    units = client.get(f"/api/assignments/{assignment.pk}/").json()["units"]
    return {"submit_key": "k1", "step_seconds": {"rate": 3}, "steps_reviewed": STEPS_REVIEWED, "units": [
        {"unit": u["id"], "category": "deletion", "rating": 70 - i, "rank": i + 1,
         "edits": [{"type": "split", "anchor": 0}] if i == 0 else None}
        for i, u in enumerate(units)]}


def test_submit_takes_six_statements_and_answers_what_a_fresh_read_answers(
    staffed_campaign, annotators, token_client, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    a = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    client = token_client(annotators[0])
    body = answer_for(client, a)
    with django_capture_on_commit_callbacks() as callbacks, django_assert_max_num_queries(8) as captured:
        r = client.post(f"/api/assignments/{a.pk}/submit/", body, format="json")
    assert r.status_code == 201, r.content
    assert len(statements(captured)) <= 6, statements(captured)
    assert len(callbacks) == 1  # the broadcast, queued once the submit commits
    # Built from the rows it wrote, the answer is the one a later read of the stored annotation gives.
    stored = client.get(f"/api/annotations/{r.json()['id']}/").json()
    assert r.json() == stored
    assert OutputJudgement.objects.filter(annotation_id=stored["id"]).count() == a.source.outputs.count()
    assert [j["rank"] for j in stored["judgements"]] == list(range(1, len(body["units"]) + 1))


def test_submit_of_a_draft_updates_it_in_as_many_statements(
    staffed_campaign, annotators, token_client, django_assert_max_num_queries
):
    a = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    client = token_client(annotators[0])
    assert client.put(f"/api/assignments/{a.pk}/draft/", {"state": {"step": 1}, "revision": 3},
                      format="json").status_code == 200
    draft = Annotation.objects.get(assignment=a)
    body = answer_for(client, a)
    with django_assert_max_num_queries(8) as captured:
        r = client.post(f"/api/assignments/{a.pk}/submit/", body, format="json")
    assert r.status_code == 201 and r.json()["id"] == draft.pk
    assert len(statements(captured)) <= 6, statements(captured)
    draft.refresh_from_db()
    assert draft.status == Annotation.Status.SUBMITTED and draft.draft_revision == 3 and draft.submit_key == "k1"


def test_a_repeated_submit_answers_the_same_annotation_under_the_lock(
    staffed_campaign, annotators, token_client, django_assert_max_num_queries
):
    a = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    client = token_client(annotators[0])
    body = answer_for(client, a)
    first = client.post(f"/api/assignments/{a.pk}/submit/", body, format="json")
    with django_assert_max_num_queries(8):
        again = client.post(f"/api/assignments/{a.pk}/submit/", body, format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    other = client.post(f"/api/assignments/{a.pk}/submit/", {**body, "submit_key": "k2"}, format="json")
    assert other.status_code == 409


def test_submit_answers_404_to_others_and_403_to_the_campaigns_researcher(
    staffed_campaign, annotators, researcher, token_client
):
    a = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    body = answer_for(token_client(annotators[0]), a)
    assert token_client(annotators[1]).post(f"/api/assignments/{a.pk}/submit/", body,
                                            format="json").status_code == 404
    assert token_client(annotators[1]).post(f"/api/assignments/{a.pk}/submit/", {},
                                            format="json").status_code == 404
    assert token_client(researcher).post(f"/api/assignments/{a.pk}/submit/", body,
                                         format="json").status_code == 403
    assert token_client(annotators[0]).post("/api/assignments/999999/submit/", body,
                                            format="json").status_code == 404
    assert not Annotation.objects.filter(assignment=a).exists()


def test_next_fetch_and_draft_are_pinned(staffed_campaign, annotators, token_client, django_assert_max_num_queries):
    client = token_client(annotators[0])
    with django_assert_max_num_queries(7):  # token, campaign, lock with membership and tutorials, current
        pk = client.post(f"/api/campaigns/{staffed_campaign.slug}/next/").json()["assignment"]
    assert pk is not None
    with django_assert_max_num_queries(4):  # token, assignment with membership, live annotation, units
        assert client.get(f"/api/assignments/{pk}/").status_code == 200
    # token, assignment with membership, lock, tutorials, live version, insert, assignment; the savepoint's two
    with django_assert_max_num_queries(9):
        assert client.put(f"/api/assignments/{pk}/draft/", {"state": {}, "revision": 1},
                          format="json").status_code == 200


def test_claiming_from_the_pool_is_pinned(demo_campaign, annotators, token_client, django_assert_max_num_queries):
    """A claim that takes a free slot: token, campaign, lock with membership and tutorials, current, the
    first free slot, the new assignment, the slot; and the savepoint's two. A campaign without a batch size
    does not count the annotator's sources."""
    from annotation.models import CampaignAnnotator

    CampaignAnnotator.objects.create(campaign=demo_campaign, annotator=annotators[0])
    from annotation.services.assignments import campaign_ensure_slots

    campaign_ensure_slots(campaign=demo_campaign)
    assert demo_campaign.batch_size is None
    client = token_client(annotators[0])
    with django_assert_max_num_queries(9) as captured:
        pk = client.post(f"/api/campaigns/{demo_campaign.slug}/next/").json()["assignment"]
    assert pk is not None
    assert not any("COUNT(" in sql for sql in statements(captured))
