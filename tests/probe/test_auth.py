"""Issue 11, defects 8 and 9: authentication hardening, and what one researcher sees of another's work."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import STEPS_REVIEWED
from tests.probe.conftest import Probe


@pytest.fixture
def with_password(probe: Probe) -> Any:
    user = probe.users["annotator"]
    user.set_password("right-horse-battery")
    user.save()
    return user


def test_token_login_locks_out_after_wrong_passwords(with_password: Any, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 5
    client = APIClient()
    right = {"username": with_password.username, "password": "right-horse-battery"}
    assert client.post("/api/auth/token/", right, format="json").status_code == 200  # successes do not count
    answers = [client.post("/api/auth/token/", {**right, "password": f"guess{i}"}, format="json").status_code
               for i in range(8)]
    assert answers[:4] == [401] * 4
    assert answers[4:] == [429] * 4  # the fifth wrong password locks sign-in
    blocked = client.post("/api/auth/token/", right, format="json")
    assert blocked.status_code == 429 and "Retry-After" in blocked and "token" not in blocked.json()


def test_tokens_expire(with_password: Any, settings: Any) -> None:
    client = APIClient()
    key = client.post("/api/auth/token/", {"username": with_password.username, "password": "right-horse-battery"},
                      format="json").json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/assignments/").status_code == 200
    Token.objects.filter(key=key).update(created=timezone.now() - timedelta(seconds=settings.API_TOKEN_TTL_SECONDS + 1))
    expired = client.get("/api/assignments/")
    assert expired.status_code == 401 and expired["WWW-Authenticate"] == "Token"
    assert "expired" in expired.json()["detail"]
    assert not Token.objects.filter(key=key).exists()
    client.credentials()
    fresh = client.post("/api/auth/token/", {"username": with_password.username, "password": "right-horse-battery"},
                        format="json").json()["token"]
    assert fresh != key


def test_logout_revokes_the_token(with_password: Any) -> None:
    token = Token.objects.create(user=with_password)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.post("/api/auth/logout/").status_code == 204
    assert api.get("/api/assignments/").status_code == 401
    # Logging out of the pages revokes it too.
    token = Token.objects.create(user=with_password)
    page = APIClient()
    page.force_login(with_password)
    page.post("/logout/")
    assert not Token.objects.filter(pk=token.pk).exists()


def test_anonymous_and_bad_token_get_401_with_www_authenticate(probe: Probe) -> None:
    client = APIClient()
    for url in ("/api/assignments/", "/api/campaigns/", f"/api/campaigns/{probe.campaign.slug}/progress/"):
        response = client.get(url)
        assert response.status_code == 401 and response["WWW-Authenticate"] == "Token", url
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    response = client.get("/api/campaigns/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"


def test_lens_versions_do_not_leak_other_researchers_campaigns_or_paths(probe: Probe, client_as: Any) -> None:
    mine = client_as("researcher").get("/api/learned/versions/").json()
    assert mine[0]["campaigns"] == [probe.campaign.slug]
    assert mine[0].get("checkpoint_path") is None
    theirs = client_as("other_researcher").get(f"/api/learned/versions/{probe.version.pk}/").json()
    assert theirs["campaigns"] == [probe.other_campaign.slug]
    assert "/srv/secret" not in str(theirs)
    admin = client_as("admin").get("/api/learned/versions/").json()
    assert sorted(admin[0]["campaigns"]) == sorted([probe.campaign.slug, probe.other_campaign.slug])
    assert admin[0]["checkpoint_path"] == "/srv/secret/ckpt"


def test_tutorial_gate_holds_through_the_rest_api(probe: Probe, client_as: Any) -> None:
    """Defect 5: an annotator who has not passed the tutorial gets no work through the API either."""
    from annotation.models import Assignment
    from annotation.services.assignments import campaign_add_annotators
    from annotation.services.campaigns import campaign_update

    newcomer = probe.users["other_annotator"]  # has submitted nothing in this campaign, passed no tutorial
    campaign_update(campaign=probe.campaign, ratings_per_output=2)  # room for a second annotator
    campaign_add_annotators(campaign=probe.campaign, annotators=[newcomer])
    client = client_as("other_annotator")
    blocked = client.post(f"/api/campaigns/{probe.campaign.slug}/next/")
    assert blocked.status_code == 403 and "tutorial" in blocked.json()["detail"]
    assignment = Assignment.objects.filter(annotator=newcomer, campaign=probe.campaign).first()
    assert assignment is not None
    from annotation.models import RatingUnit
    from tests.factories import public_id

    units = [public_id(assignment, unit.pk) for unit in RatingUnit.objects.filter(source=assignment.source)]
    body = {"submit_key": "t", "steps_reviewed": STEPS_REVIEWED,
                               "units": [{"unit": u, "category": "paraphrase", "rating": 50, "rank": i + 1}
                                         for i, u in enumerate(units)]}
    submit = client.post(f"/api/assignments/{assignment.pk}/submit/", body, format="json")
    assert submit.status_code == 403 and "tutorial" in submit.json()["detail"]
    draft = client.put(f"/api/assignments/{assignment.pk}/draft/", {"state": {}, "revision": 1}, format="json")
    assert draft.status_code == 403
