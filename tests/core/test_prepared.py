"""core.prepared: a queryset compiled once answers as the queryset itself, for any values, in one statement."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.db.models.expressions import RawSQL
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment, Campaign, Source, User
from core.prepared import PreparedQuery

pytestmark = pytest.mark.django_db


def assignments_of(*, annotator_id: int, campaign_id: int) -> QuerySet[Assignment]:
    return (
        Assignment.objects.select_related("source", "campaign")
        .annotate(tutorials=Exists(Source.objects.filter(campaign_id=OuterRef("campaign_id"), is_tutorial=True)))
        .filter(annotator_id=annotator_id, campaign_id=campaign_id).order_by("source__order", "id")
    )


def described(rows: list[Any]) -> list[tuple[Any, ...]]:
    return [(a.pk, a.status, a.source.text, a.campaign.slug, a.tutorials, a._state.adding, a._state.db)
            for a in rows]


def test_the_prepared_query_answers_as_the_queryset_for_every_value(staffed_campaign, annotators) -> None:
    prepared = PreparedQuery(assignments_of)
    seen = 0
    for user in [*annotators, annotators[0]]:
        expected = list(assignments_of(annotator_id=user.pk, campaign_id=staffed_campaign.pk))
        got = prepared.run(annotator_id=user.pk, campaign_id=staffed_campaign.pk)
        assert described(got) == described(expected)
        assert all(not a._state.adding and a.source._state.db == "default" for a in got)  # rows from the database
        seen += len(got)
    assert seen > 0
    assert prepared.run(annotator_id=annotators[0].pk, campaign_id=staffed_campaign.pk + 1000) == []
    assert len(prepared._compiled) == 1  # compiled once


def test_a_run_is_one_statement(staffed_campaign, annotators, django_assert_num_queries) -> None:
    prepared = PreparedQuery(assignments_of)
    prepared.run(annotator_id=annotators[0].pk, campaign_id=staffed_campaign.pk)
    with django_assert_num_queries(1):
        prepared.run(annotator_id=annotators[1].pk, campaign_id=staffed_campaign.pk)


def test_values_queries_and_strings(staffed_campaign) -> None:
    def by_slug(*, slug: str) -> QuerySet[Any, Any]:
        return Campaign.objects.filter(slug=slug).annotate(n_sources=Count("sources")).values("slug", "n_sources")

    prepared = PreparedQuery(by_slug)
    assert prepared.run(slug=staffed_campaign.slug) == list(by_slug(slug=staffed_campaign.slug))
    assert prepared.run(slug="no-such-campaign") == []
    assert prepared.run(slug="it's; -- not SQL") == []  # a parameter, never text of the SQL


def test_each_shape_has_its_own_sql(staffed_campaign, annotators, researcher) -> None:
    def campaigns(shape: str, *, user_id: int) -> QuerySet[Campaign]:
        if shape == "all":
            return Campaign.objects.all()
        return Campaign.objects.filter(memberships__annotator_id=user_id, memberships__active=True)

    prepared = PreparedQuery(campaigns)
    assert prepared.run("member", user_id=researcher.pk) == []
    assert prepared.run("all", user_id=researcher.pk) == [staffed_campaign]
    assert prepared.run("member", user_id=annotators[0].pk) == [staffed_campaign]
    assert len(prepared._compiled) == 2


def test_an_empty_queryset_needs_no_statement(django_assert_num_queries) -> None:
    prepared = PreparedQuery(lambda *, user_id: Campaign.objects.none().filter(owners__id=user_id))
    with django_assert_num_queries(0):
        assert prepared.run(user_id=1) == []


def test_a_value_written_into_the_sql_is_refused() -> None:
    def inlined(*, pk: int) -> QuerySet[Campaign]:
        return Campaign.objects.annotate(flag=RawSQL(f"SELECT {pk}", ())).filter(pk=pk)

    with pytest.raises(ValueError, match="became part of the SQL"):
        PreparedQuery(inlined).run(pk=1)


def test_a_value_compared_with_a_smallint_column_is_kept(staffed_campaign) -> None:
    """The usual integer stand-in is past a smallint's range, where Django drops the condition as matching
    nothing; the query is compiled again with stand-ins that fit, not kept as always empty."""
    prepared = PreparedQuery(lambda *, n: Campaign.objects.filter(ratings_per_output=n))
    n = staffed_campaign.ratings_per_output
    assert staffed_campaign in prepared.run(n=n)
    assert prepared.run(n=n) == list(Campaign.objects.filter(ratings_per_output=n))
    assert prepared.run(n=n + 1) == list(Campaign.objects.filter(ratings_per_output=n + 1))


def test_values_are_integers_or_strings(staffed_campaign) -> None:
    prepared = PreparedQuery(lambda *, pk: Campaign.objects.filter(pk=pk))
    prepared.run(pk=staffed_campaign.pk)
    with pytest.raises(TypeError, match="integers or strings"):
        prepared.run(pk=1.5)
    with pytest.raises(TypeError, match="integers or strings"):
        prepared.run(pk=True)


@pytest.mark.django_db(transaction=True)
def test_locking_reads_still_need_a_transaction(demo_campaign) -> None:
    prepared = PreparedQuery(lambda *, pk: Campaign.objects.select_for_update().filter(pk=pk))
    with transaction.atomic():
        assert prepared.run(pk=demo_campaign.pk) == [demo_campaign]
    if not connection.features.has_select_for_update:
        assert prepared.run(pk=demo_campaign.pk) == [demo_campaign]  # Django ignores the lock here too
        return
    with pytest.raises(TransactionManagementError):
        prepared.run(pk=demo_campaign.pk)


def test_users_of_each_role_see_what_the_visibility_rule_says(staffed_campaign, annotators, researcher) -> None:
    """campaign_get_visible is prepared per kind of user: the compiled SQL of one role never serves another."""
    from django.http import Http404

    from annotation.selectors import campaign_get_visible

    admin = User.objects.create_user(username="adm", password=None, role=User.Role.ADMIN)
    outsider = User.objects.create_user(username="out", password=None, role=User.Role.ANNOTATOR)
    for user in (annotators[0], admin, researcher):
        assert campaign_get_visible(user=user, slug=staffed_campaign.slug) == staffed_campaign
    for user in (outsider, User.objects.create_user(username="r2", password=None, role=User.Role.RESEARCHER)):
        with pytest.raises(Http404):
            campaign_get_visible(user=user, slug=staffed_campaign.slug)


# --- server-side prepared statements (PostgreSQL) ----------------------------------------------------------

on_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="server-side statements: PostgreSQL")


def test_a_statement_numbers_its_values_and_keeps_literal_percent_signs() -> None:
    from core.prepared import _Statement

    statement = _Statement.of("SELECT '5%%' WHERE a = %s AND b LIKE %s AND c = %s", ("bigint", "text", "unknown"))
    assert statement.prepare == (f"PREPARE {statement.name} (bigint, text, unknown) AS "
                                 "SELECT '5%%' WHERE a = $1 AND b LIKE $2 AND c = $3")
    assert statement.execute == f"EXECUTE {statement.name}(%s, %s, %s)"
    bare = _Statement.of("SELECT 1", ())
    assert bare.prepare == f"PREPARE {bare.name} AS SELECT 1" and bare.execute == f"EXECUTE {bare.name}"
    assert _Statement.of("SELECT 1", ()).name != bare.name  # one name per compiled query
    with pytest.raises(ValueError, match="placeholders"):
        _Statement.of("SELECT %s", ("bigint", "text"))


def test_query_values_are_declared_and_django_s_constants_are_not(staffed_campaign) -> None:
    prepared = PreparedQuery(lambda *, pk, slug: Campaign.objects.filter(pk=pk, slug=slug).exclude(name="constant"))
    prepared.run(pk=staffed_campaign.pk, slug=staffed_campaign.slug)
    statement = prepared._compiled[("default", None)].statement
    declared = statement.prepare.split(" AS ", 1)[0].split("(", 1)[1].rstrip(")").split(", ")
    assert sorted(declared) == ["bigint", "text", "unknown"]  # the two values; Django's constant


class _Connection:
    def __init__(self, vendor: str, **settings: Any) -> None:
        self.vendor, self.settings_dict = vendor, settings


def test_statements_are_server_side_on_postgresql_unless_a_transaction_pooler_is_configured() -> None:
    from core.prepared import server_side_prepared

    assert server_side_prepared(_Connection("postgresql"))
    assert not server_side_prepared(_Connection("sqlite"))
    assert not server_side_prepared(_Connection("postgresql", DISABLE_SERVER_SIDE_CURSORS=True))  # PgBouncer
    assert not server_side_prepared(_Connection("postgresql", SERVER_SIDE_PREPARED=False))
    assert server_side_prepared(_Connection("postgresql", DISABLE_SERVER_SIDE_CURSORS=True, SERVER_SIDE_PREPARED=True))


@on_postgres
def test_the_first_run_on_a_session_prepares_and_later_runs_execute_in_one_statement(
    staffed_campaign, annotators
) -> None:
    from django.test.utils import CaptureQueriesContext

    prepared = PreparedQuery(assignments_of)
    runs = []
    for user in (annotators[0], annotators[1], annotators[0]):
        with CaptureQueriesContext(connection) as captured:
            got = prepared.run(annotator_id=user.pk, campaign_id=staffed_campaign.pk)
        assert described(got) == described(list(assignments_of(annotator_id=user.pk, campaign_id=staffed_campaign.pk)))
        runs.append([q["sql"] for q in captured.captured_queries])
    assert [len(sent) for sent in runs] == [1, 1, 1]
    name = prepared._compiled[("default", None)].statement.name
    assert runs[0][0].startswith(f"PREPARE {name} (") and ") AS SELECT " in runs[0][0]
    assert f"; EXECUTE {name}(" in runs[0][0]
    assert all(sent[0].startswith(f"EXECUTE {name}(") for sent in runs[1:])
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name = %s", [name])
        assert "annotation_assignment" in cursor.fetchone()[0]


@on_postgres
@pytest.mark.django_db(transaction=True)
def test_a_new_session_prepares_again(demo_campaign) -> None:
    from django.test.utils import CaptureQueriesContext

    prepared = PreparedQuery(lambda *, pk: Campaign.objects.filter(pk=pk))
    assert prepared.run(pk=demo_campaign.pk) == [demo_campaign]
    connection.close()  # a new connection is a new session, without the statement
    with CaptureQueriesContext(connection) as captured:
        assert prepared.run(pk=demo_campaign.pk) == [demo_campaign]
    assert [q["sql"].split(" ", 1)[0] for q in captured.captured_queries] == ["PREPARE"]


@on_postgres
def test_after_a_failed_run_the_statement_is_made_again(staffed_campaign) -> None:
    """A PREPARE that took effect stays when the EXECUTE sent with it fails (here: a division by zero) and
    its transaction rolls back; the next run reads the session's statements back and makes the failed one
    again, in one round trip."""
    from django.db import DataError
    from django.test.utils import CaptureQueriesContext

    def divided(*, pk: int, by: int) -> QuerySet[Any, Any]:
        return Campaign.objects.annotate(share=RawSQL("100 / %s", (by,))).filter(pk=pk).values_list("share", flat=True)

    prepared = PreparedQuery(divided)
    with pytest.raises(DataError, match="division by zero"), transaction.atomic():
        prepared.run(pk=staffed_campaign.pk, by=0)
    name = prepared._compiled[("default", None)].statement.name
    with CaptureQueriesContext(connection) as captured:
        assert prepared.run(pk=staffed_campaign.pk, by=4) == [25]
        assert prepared.run(pk=staffed_campaign.pk, by=5) == [20]
    sent = [q["sql"] for q in captured.captured_queries]
    assert sent[0] == "SELECT name FROM pg_prepared_statements"
    assert sent[1].startswith(f"DEALLOCATE {name}; PREPARE {name} (bigint, bigint) AS SELECT ")
    assert sent[2].startswith(f"EXECUTE {name}(")


def test_an_integer_past_64_bits_is_answered_as_the_queryset_answers_it(staffed_campaign) -> None:
    """No column holds 2**70 (an id from a URL, say): as a prepared statement's value it is an error, and
    SQLite's driver cannot bind it at all; the queryset itself matches nothing."""
    prepared = PreparedQuery(lambda *, pk: Campaign.objects.filter(pk=pk))
    assert prepared.run(pk=staffed_campaign.pk) == [staffed_campaign]
    for pk in (2**70, 2**63, -(2**63) - 1):
        assert prepared.run(pk=pk) == list(Campaign.objects.filter(pk=pk)) == []
    with CaptureQueriesContext(connection) as captured:
        assert prepared.run(pk=2**63 - 1) == []  # the largest bigint: still the compiled query
    assert len(captured.captured_queries) == 1
    if connection.vendor == "postgresql":
        assert captured.captured_queries[0]["sql"].startswith("EXECUTE ")


@on_postgres
def test_a_value_past_a_narrower_column_matches_nothing_as_in_plain_sql(staffed_campaign) -> None:
    """Values are declared bigint, so one past an int column's range is compared, not refused."""
    Campaign.objects.filter(pk=staffed_campaign.pk).update(idle_release_minutes=30)
    prepared = PreparedQuery(lambda *, minutes: Campaign.objects.filter(idle_release_minutes=minutes))
    assert prepared.run(minutes=30) == [staffed_campaign]
    assert prepared.run(minutes=2**40) == prepared.run(minutes=-(2**40)) == []


@on_postgres
def test_a_statement_whose_plan_went_stale_recovers_on_the_next_run(staffed_campaign) -> None:
    """A column's type changed under a running process (a migration): PostgreSQL refuses the prepared
    statement once ("cached plan must not change result type"), and the run after that makes it again."""
    from django.db import NotSupportedError

    prepared = PreparedQuery(lambda *, pk: Campaign.objects.filter(pk=pk).values_list("name", flat=True))
    assert prepared.run(pk=staffed_campaign.pk) == [staffed_campaign.name]
    with connection.cursor() as cursor:
        cursor.execute('ALTER TABLE "annotation_campaign" ALTER COLUMN "name" TYPE varchar(777)')
    with pytest.raises(NotSupportedError, match="must not change result type"), transaction.atomic():
        prepared.run(pk=staffed_campaign.pk)
    assert prepared.run(pk=staffed_campaign.pk) == [staffed_campaign.name]


@on_postgres
def test_with_server_side_statements_off_the_plain_sql_is_sent(staffed_campaign, monkeypatch) -> None:
    from django.test.utils import CaptureQueriesContext

    monkeypatch.setitem(connection.settings_dict, "SERVER_SIDE_PREPARED", False)  # as behind PgBouncer
    prepared = PreparedQuery(lambda *, pk: Campaign.objects.filter(pk=pk))
    with CaptureQueriesContext(connection) as captured:
        assert prepared.run(pk=staffed_campaign.pk) == [staffed_campaign]
    assert captured.captured_queries[0]["sql"].startswith("SELECT ")
