"""core.prepared: a queryset compiled once answers as the queryset itself, for any values, in one statement."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.db.models.expressions import RawSQL
from django.db.transaction import TransactionManagementError

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
