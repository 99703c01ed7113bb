"""The report's versioned cache and the live dashboard's time-boxed reuse (issue 12)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

import evaluation.services.report as report_service
from annotation.models import Assignment
from annotation.services.annotations import annotation_reopen
from evaluation.services.report import campaign_report
from tests.evaluation.test_report_collected import collected, submit  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def change_ratings(campaign, annotators, researcher) -> None:
    done = Assignment.objects.filter(annotator=annotators[0], campaign=campaign).order_by("id")[0]
    annotation_reopen(annotation=done.annotations.get(status="submitted"), by=researcher)
    submit(done, annotators[0], 0.2, 70.0, key="again")


def test_live_reuses_a_recent_report_while_ratings_arrive(collected, annotators, researcher):  # noqa: F811
    first = campaign_report(campaign=collected, n_boot=20, live=True)
    change_ratings(collected, annotators, researcher)
    reused = campaign_report(campaign=collected, n_boot=20, live=True)
    assert reused["fingerprint"] == first["fingerprint"] and reused["generated_at"] == first["generated_at"]
    fresh = campaign_report(campaign=collected, n_boot=20)  # not live: always the current ratings
    assert fresh["fingerprint"] != first["fingerprint"]


def test_live_rebuilds_once_the_window_has_passed(collected, annotators, researcher, monkeypatch):  # noqa: F811
    first = campaign_report(campaign=collected, n_boot=20, live=True)
    change_ratings(collected, annotators, researcher)
    monkeypatch.setattr(report_service, "REPORT_LIVE_SECONDS", 0)
    assert campaign_report(campaign=collected, n_boot=20, live=True)["fingerprint"] != first["fingerprint"]


def test_earlier_versions_are_found_again(collected, django_assert_max_num_queries):  # noqa: F811
    first = campaign_report(campaign=collected, n_boot=20)
    with django_assert_max_num_queries(3):  # the ratings' version only
        assert campaign_report(campaign=collected, n_boot=20, live=True)["generated_at"] == first["generated_at"]


def test_the_api_takes_live_and_names_a_bad_value(collected, researcher):  # noqa: F811
    client = APIClient()
    client.force_authenticate(researcher)
    url = f"/api/campaigns/{collected.slug}/report/"
    assert client.get(url, {"live": "1"}).status_code == 200
    bad = client.get(url, {"live": "yes"})
    assert bad.status_code == 400 and "live" in bad.content.decode()


def test_the_api_says_when_a_live_report_is_behind_the_ratings(collected, annotators, researcher):  # noqa: F811
    """Issue 44: the dashboard reloads its report on each submit it hears of, but a live report younger than
    REPORT_LIVE_SECONDS is reused whatever arrived since; after the last submit of a burst the dashboard kept
    the older report (its rating count, leaderboard) until another submit came. The API now says when one on
    the current ratings can be had, and the dashboard asks again then."""
    from evaluation.api.reports import REPORT_BEHIND_HEADER

    client = APIClient()
    client.force_authenticate(researcher)
    url = f"/api/campaigns/{collected.slug}/report/"
    first = client.get(url, {"live": "1"})
    assert first.status_code == 200 and REPORT_BEHIND_HEADER not in first
    change_ratings(collected, annotators, researcher)
    behind = client.get(url, {"live": "1"})
    assert behind.json()["fingerprint"] == first.json()["fingerprint"]
    assert 1 <= int(behind[REPORT_BEHIND_HEADER]) <= report_service.REPORT_LIVE_SECONDS
    current = client.get(url)  # not live: the current ratings, nothing to wait for
    assert current.json()["fingerprint"] != first.json()["fingerprint"] and REPORT_BEHIND_HEADER not in current
    assert REPORT_BEHIND_HEADER not in client.get(url, {"live": "1"})  # now the latest report is the current one
