"""Shared fixtures. The suite runs against DATABASE_URL (PostgreSQL in CI) and says which it used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("SIMPEVAL_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
FIXTURES = REPO / "fixtures"


def pytest_report_header(config: pytest.Config) -> list[str]:
    from django.conf import settings

    db = settings.DATABASES["default"]
    where = db["NAME"] if db["ENGINE"].endswith("sqlite3") else f"{db.get('HOST') or 'socket'}:{db.get('PORT') or ''}"
    layer = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
    return [
        f"database: {db['ENGINE'].rsplit('.', 1)[-1]} ({where})",
        f"redis: {settings.REDIS_URL or 'not configured'}; channel layer: {layer}",
        f"released data: {DATA_DIR} ({'present' if DATA_DIR.is_dir() else 'absent'})",
    ]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "simpeval").is_dir():
        pytest.skip(f"released datasets not found in {DATA_DIR} (set SIMPEVAL_DATA_DIR)")
    return DATA_DIR


@pytest.fixture
def make_user(db):  # type: ignore[no-untyped-def]
    from annotation.models import User

    def make(username: str, role: str = "annotator", password: str = "pw-for-tests-1") -> User:
        user = User.objects.create_user(username=username, password=password, role=role)
        if role == "admin":
            user.is_staff = user.is_superuser = True
            user.save()
        return user

    return make


@pytest.fixture
def admin_user(make_user):  # type: ignore[no-untyped-def]
    return make_user("admin1", "admin")


@pytest.fixture
def researcher(make_user):  # type: ignore[no-untyped-def]
    return make_user("res1", "researcher")


@pytest.fixture
def annotators(make_user):  # type: ignore[no-untyped-def]
    return [make_user(f"ann{i}") for i in range(1, 4)]


@pytest.fixture
def demo_campaign(researcher):  # type: ignore[no-untyped-def]
    """The demo JSONL imported into campaign 'demo' (no analysis), owned by `researcher`."""
    from annotation.services.campaigns import campaign_create
    from annotation.services.imports import campaign_import

    campaign = campaign_create(name="Demo", slug="demo", owner=researcher, ratings_per_output=2)
    with (FIXTURES / "demo.jsonl").open("rb") as demo:
        campaign_import(kind="jsonl", file=demo, filename="demo.jsonl", campaign_slug="demo", user=researcher,
                        analyse=False)
    return campaign


@pytest.fixture
def api_client():  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def client_for(api_client):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    def make(user):  # type: ignore[no-untyped-def]
        client = APIClient()
        client.force_authenticate(user)
        return client

    return make
