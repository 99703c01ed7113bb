"""Issue 43, defect 4 (brute force) and the attempt limits: sign-in lock-out, client addresses behind trusted
proxies only, tries at the tutorial, and accounts made through crowd and invite links."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import RequestFactory
from rest_framework.test import APIClient

from tests.probe.conftest import Probe

PASSWORD = "right-horse-battery"


@pytest.fixture
def with_password(probe: Probe) -> Any:
    user = probe.users["annotator"]
    user.set_password(PASSWORD)
    user.save()
    return user


def later(monkeypatch: Any, seconds: float) -> None:
    """Move the clock that the cache's expiry and the rate windows read `seconds` ahead."""
    now = time.time
    monkeypatch.setattr(time, "time", lambda: now() + seconds)


def test_rotating_forwarded_for_does_not_escape_the_token_lockout(with_password: Any, monkeypatch: Any) -> None:
    client = APIClient()
    answers = [
        client.post("/api/auth/token/", {"username": with_password.username, "password": f"guess{i}"},
                    format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code
        for i in range(40)
    ]
    assert answers.count(401) < 10 and answers[-30:] == [429] * 30
    right = client.post("/api/auth/token/", {"username": with_password.username, "password": PASSWORD},
                        format="json", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert right.status_code == 429 and "token" not in right.json()
    assert int(right["Retry-After"]) > 0 and right["Retry-After"] in right.json()["detail"]  # says when
    # Past the request rate's minute, the lock-out still holds the right password back.
    later(monkeypatch, 61)
    locked = client.post("/api/auth/token/", {"username": with_password.username, "password": PASSWORD},
                         format="json")
    assert locked.status_code == 429 and "token" not in locked.json()
    assert "locked" in locked.json()["detail"] and locked.json()["field"] == "password"


def test_login_page_refuses_the_right_password_until_the_cool_off(with_password: Any, settings: Any,
                                                                  monkeypatch: Any) -> None:
    client = APIClient()
    for i in range(30):
        client.post("/login/", {"username": with_password.username, "password": f"guess{i}"},
                    HTTP_X_FORWARDED_FOR=f"203.0.113.{i}")
    right = client.post("/login/", {"username": with_password.username, "password": PASSWORD})
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    assert "try again in" in right.content.decode() and int(right["Retry-After"]) > 0
    # From another address the username is locked as well.
    other = APIClient(REMOTE_ADDR="192.0.2.50")
    assert other.post("/login/", {"username": with_password.username, "password": PASSWORD}).status_code == 429
    later(monkeypatch, settings.AXES_COOLOFF_TIME.total_seconds() + 61)
    after = client.post("/login/", {"username": with_password.username, "password": PASSWORD})
    assert after.status_code == 302 and client.session["_auth_user_id"] == str(with_password.pk)


def test_one_client_address_rule_for_drf_axes_and_the_pages(settings: Any) -> None:
    from axes.helpers import get_client_ip_address
    from rest_framework.throttling import BaseThrottle

    from core.throttle import client_address

    assert settings.TRUSTED_PROXY_COUNT == 0 and settings.REST_FRAMEWORK["NUM_PROXIES"] == 0
    factory = RequestFactory()
    cases = [{}, {"HTTP_X_FORWARDED_FOR": "203.0.113.9"}, {"HTTP_X_FORWARDED_FOR": "203.0.113.9, 10.0.0.2"},
             {"HTTP_X_FORWARDED_FOR": "1.1.1.1, 203.0.113.9, 10.0.0.2"}]
    seen = {}
    for proxies in (0, 1, 2):
        settings.TRUSTED_PROXY_COUNT = proxies
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": proxies}
        for meta in cases:
            request = factory.get("/")
            request.META.update({"REMOTE_ADDR": "10.0.0.1", **meta})
            address = client_address(request)
            assert address == BaseThrottle().get_ident(request) == get_client_ip_address(request)  # type: ignore[arg-type]
            seen[(proxies, meta.get("HTTP_X_FORWARDED_FOR"))] = address
    assert {seen[(0, xff)] for xff in (None, "203.0.113.9", "203.0.113.9, 10.0.0.2")} == {"10.0.0.1"}
    assert seen[(1, "203.0.113.9, 10.0.0.2")] == "10.0.0.2"
    assert seen[(2, "1.1.1.1, 203.0.113.9, 10.0.0.2")] == "203.0.113.9"


def test_behind_a_trusted_proxy_each_client_is_locked_out_alone(probe: Probe, settings: Any) -> None:
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = APIClient(REMOTE_ADDR="10.0.0.1")
    for i in range(10):
        proxy.post("/api/auth/token/", {"username": f"nobody{i}", "password": "x"}, format="json",
                   HTTP_X_FORWARDED_FOR="203.0.113.5")
    locked = proxy.post("/api/auth/token/", {"username": "someone", "password": "x"}, format="json",
                        HTTP_X_FORWARDED_FOR="203.0.113.5")
    other = proxy.post("/api/auth/token/", {"username": "someone", "password": "x"}, format="json",
                       HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert (locked.status_code, other.status_code) == (429, 401)


def tutorial_check(client: APIClient, probe: Probe) -> Any:
    return client.post(f"/campaigns/{probe.campaign.slug}/tutorial/1/check/", {"units": []}, format="json",
                       HTTP_ACCEPT="application/json")


def test_tutorial_check_has_an_attempt_limit(probe: Probe, client_as: Any, monkeypatch: Any) -> None:
    from core.throttle import throttle_rate

    allowed, window = throttle_rate("tutorial")
    client = client_as("annotator")
    answers = [tutorial_check(client, probe) for _ in range(allowed + 3)]
    assert [a.status_code for a in answers] == [200] * allowed + [429] * 3
    assert answers[0].json()["passed"] is False
    refused = answers[-1]
    assert refused.json()["field"] == "tutorial" and "try again in" in refused.json()["detail"]
    assert 0 < int(refused["Retry-After"]) <= window
    # The next window brings new tries.
    later(monkeypatch, window)
    assert tutorial_check(client, probe).status_code == 200


def test_tutorial_service_refuses_past_the_limit(probe: Probe) -> None:
    from annotation.models import Source
    from annotation.services.tutorials import tutorial_answer_check
    from core.throttle import Throttled, throttle_rate

    allowed, _ = throttle_rate("tutorial")
    source = Source.objects.get(campaign=probe.campaign, is_tutorial=True)
    annotator = probe.users["annotator"]
    for _ in range(allowed):
        assert tutorial_answer_check(source=source, annotator=annotator, units=[])
    with pytest.raises(Throttled) as refused:
        tutorial_answer_check(source=source, annotator=annotator, units=[])
    assert refused.value.status == 429 and refused.value.retry_after > 0
    # Each annotator has their own tries.
    assert tutorial_answer_check(source=source, annotator=probe.users["other_annotator"], units=[])


def test_crowd_link_flood_from_one_address_is_refused(probe: Probe) -> None:
    from annotation.models import CrowdWorker
    from annotation.services.operations import crowd_open
    from core.throttle import throttle_rate

    allowed, _ = throttle_rate("crowd")
    token = crowd_open(campaign=probe.campaign).crowd_token
    statuses = [
        APIClient().get(f"/crowd/{probe.campaign.slug}/{token}/?PROLIFIC_PID=FLOOD{i:04d}").status_code
        for i in range(allowed + 10)
    ]
    assert 429 not in statuses[:allowed] and statuses[allowed:] == [429] * 10
    assert CrowdWorker.objects.filter(campaign=probe.campaign).count() <= allowed
    other = APIClient(REMOTE_ADDR="192.0.2.77").get(f"/crowd/{probe.campaign.slug}/{token}/?PROLIFIC_PID=REAL1")
    assert other.status_code != 429


def test_invite_sign_ups_from_one_address_are_refused(probe: Probe) -> None:
    from annotation.models import User
    from annotation.services.operations import invite_create
    from core.throttle import throttle_rate

    allowed, _ = throttle_rate("invite")
    token = invite_create(campaign=probe.campaign, by=probe.users["researcher"]).token
    before = User.objects.count()
    sign_up = {"password": "a-long-pass-phrase-77"}
    statuses = [APIClient().post(f"/invite/{token}/", {**sign_up, "username": f"flood{i}"}).status_code
                for i in range(allowed + 5)]
    assert 429 not in statuses[:allowed] and statuses[allowed:] == [429] * 5
    assert User.objects.count() - before == allowed
    refused = APIClient().post(f"/invite/{token}/", {"username": "late", "password": "a-long-pass-phrase-77"})
    assert refused.status_code == 429 and "try again in" in refused.content.decode()
