"""A write that waited past SQLite's busy timeout gets a retry answer (503, Retry-After), never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError
from django.urls import reverse


def locked(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("database is locked")


def test_the_api_answers_503_with_retry_after(client_for, researcher, demo_campaign, monkeypatch):
    monkeypatch.setattr("annotation.api.campaigns.campaign_progress", locked)
    got = client_for(researcher).get(f"/api/campaigns/{demo_campaign.slug}/progress/")
    assert got.status_code == 503
    assert got["Retry-After"] == "5"
    assert got.json()["detail"].startswith("database busy, retry")


def test_a_page_answers_503_with_retry_after(web_client_for, annotators, monkeypatch):
    monkeypatch.setattr("frontend.views_annotator.campaign_progress_for_annotator", locked)
    got = web_client_for(annotators[0]).get(reverse("frontend:home"))
    assert got.status_code == 503
    assert got["Retry-After"] == "5"
    assert got.json()["detail"].startswith("database busy, retry")


@pytest.mark.django_db
def test_other_database_errors_are_not_taken_for_busy(client_for, researcher, demo_campaign, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("no such table: x")

    monkeypatch.setattr("annotation.api.campaigns.campaign_progress", broken)
    with pytest.raises(OperationalError):
        client_for(researcher).get(f"/api/campaigns/{demo_campaign.slug}/progress/")
