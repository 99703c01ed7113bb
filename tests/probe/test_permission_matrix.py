"""The permission matrix: every URL of the URL conf x every method x every role.

The routes come from the URL conf itself, so a new view without a rule here fails
`test_every_url_has_a_rule`. Adding a URL is one line in RULES: its name, then for each method the
roles that may reach the operation (one of the role sets below). For every role outside the set the
probe asserts a refusal that reveals nothing: 401 with `WWW-Authenticate` for an anonymous API call, the
login redirect for an anonymous page, 403 or 404 for a logged-in user. For a role inside the set it
asserts the request got past the permission checks (the answer may still be a 400 for the probe's
minimal body). A method a URL does not declare must be refused (405, or the role's 401/403).
No answer is ever a 5xx. Each request runs in a rolled-back transaction, so every role meets the same state.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.urls import reverse

from tests.probe.conftest import ROLES, Probe
from tests.probe.urlconf import Route, project_routes

EVERYONE = frozenset(ROLES)
LOGGED_IN = EVERYONE - {"anonymous"}
RESEARCHERS = frozenset({"researcher", "other_researcher", "admin"})  # any researcher, and admins
OWNERS = frozenset({"researcher", "admin"})  # the campaign's own researcher, and admins
ADMINS = frozenset({"admin"})
ASSIGNEE = frozenset({"annotator"})  # the annotator the assignment / campaign membership belongs to
ASSIGNMENT_READERS = ASSIGNEE | OWNERS

RULES: dict[str, dict[str, frozenset[str]]] = {
    "healthz": {"GET": EVERYONE, "POST": EVERYONE},
    "schema": {"GET": EVERYONE},
    "api-docs": {"GET": EVERYONE},
    "api-token": {"POST": EVERYONE},
    "api-logout": {"POST": LOGGED_IN},
    "campaign-list": {"GET": LOGGED_IN, "POST": RESEARCHERS},
    "campaign-detail": {"GET": OWNERS, "PATCH": OWNERS},
    "campaign-annotators": {"POST": OWNERS},
    "campaign-annotator-remove": {"DELETE": OWNERS},
    "campaign-invites": {"POST": OWNERS},
    "campaign-crowd": {"GET": OWNERS, "POST": OWNERS},
    "campaign-import": {"POST": OWNERS},
    "campaign-progress": {"GET": OWNERS},
    "campaign-source-practice": {"PUT": OWNERS, "DELETE": OWNERS},
    "assignment-next": {"POST": ASSIGNEE | OWNERS},  # researchers reach it and are told they are no annotator
    "assignment-list": {"GET": LOGGED_IN},
    "assignment-detail": {"GET": ASSIGNMENT_READERS},
    "assignment-draft": {"PUT": ASSIGNEE},
    "assignment-submit": {"POST": ASSIGNEE},
    "annotation-detail": {"GET": ASSIGNMENT_READERS},
    "annotation-reopen": {"POST": OWNERS},
    "campaign-export": {"GET": OWNERS},
    "campaign-report": {"GET": OWNERS},
    "campaign-leaderboard-csv": {"GET": OWNERS},
    "campaign-quality": {"GET": OWNERS},
    "campaign-quality-setup": {"POST": OWNERS},
    "campaign-quality-exclusions": {"POST": OWNERS, "DELETE": OWNERS},
    "learned-version-list": {"GET": RESEARCHERS, "POST": ADMINS},
    "learned-version-detail": {"GET": RESEARCHERS},
    # The probe's version is an admin's, trained on both researchers' campaigns: its curve is the admin's only.
    "learned-version-events": {"GET": ADMINS},
    "learned-version-promote": {"POST": ADMINS},
    "learned-version-cancel": {"POST": ADMINS},
    # The former addresses: a 308 to the new one for everyone (the new address decides who may pass).
    "lens-versions-moved": dict.fromkeys(("GET", "POST", "PUT", "PATCH", "DELETE"), EVERYONE),
    "lens-versions-moved-page": dict.fromkeys(("GET", "POST", "PUT", "PATCH", "DELETE"), EVERYONE),
    "lens-score": {"POST": RESEARCHERS},
    "lens-campaign-rescore": {"POST": OWNERS},
    "lens-campaign-leaderboard": {"GET": OWNERS},
    "metric-score": {"POST": RESEARCHERS},
    "campaign-metrics": {"GET": OWNERS},
    "campaign-metric-points": {"GET": OWNERS},
    "campaign-metric-card": {"GET": OWNERS},
    "campaign-metric-score": {"POST": OWNERS},
    "campaign-metric-scores-csv": {"GET": OWNERS},
    "campaign-settledness": {"GET": OWNERS},
    # Any researcher may plan a study (from a released dataset, or from a campaign they manage).
    "study-planner": {"POST": RESEARCHERS},
    "campaign-allocation": {"GET": OWNERS, "POST": OWNERS},
    "campaign-allocation-job": {"GET": OWNERS},
    "campaign-allocation-summary": {"GET": OWNERS},
    "frontend:login": {"GET": EVERYONE, "POST": EVERYONE},
    "frontend:logout": {"POST": EVERYONE},
    "frontend:home": {"GET": LOGGED_IN, "POST": LOGGED_IN},
    "frontend:instructions": {"GET": ASSIGNEE},
    "frontend:continue": {"POST": ASSIGNEE},
    "frontend:tutorial": {"GET": ASSIGNEE},
    "frontend:tutorial-check": {"POST": ASSIGNEE},
    "frontend:annotate": {"GET": ASSIGNEE},
    "frontend:completion": {"GET": ASSIGNEE},
    # Invite and crowd links are how a person without an account arrives.
    "frontend:invite": {"GET": EVERYONE, "POST": EVERYONE},
    "frontend:set-password": {"GET": EVERYONE, "POST": EVERYONE},
    "frontend:crowd": {"GET": EVERYONE},
    "frontend:crowd-return": {"GET": EVERYONE},  # a crowd worker's personal link: whoever holds it
    "frontend:research-home": {"GET": RESEARCHERS, "POST": RESEARCHERS},
    "frontend:research-import": {"GET": RESEARCHERS, "POST": RESEARCHERS},
    "frontend:research-dashboard": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-lens-rescore": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-metrics-score": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-metric-card": {"GET": OWNERS},
    "frontend:research-job-retry": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-people": {"POST": OWNERS},
    "frontend:research-invite": {"POST": OWNERS},
    "frontend:research-account": {"POST": OWNERS},
    "frontend:research-crowd": {"POST": OWNERS},
    "frontend:research-allocation-setting": {"POST": OWNERS},
    "frontend:research-quality": {"POST": OWNERS},
    "frontend:research-item": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-practice": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-allocation": {"GET": OWNERS, "POST": OWNERS},
    "frontend:research-allocation-detail": {"GET": OWNERS},
    "frontend:research-planner": {"GET": RESEARCHERS, "POST": RESEARCHERS},
    # Any researcher may start a testbed run (on a shared corpus); a run is seen by who started it, and admins.
    "frontend:research-testbed": {"GET": RESEARCHERS, "POST": RESEARCHERS},
    "frontend:research-testbed-detail": {"GET": OWNERS},
    "frontend:research-testbed-corpus": {"POST": RESEARCHERS},
    "frontend:learned-index": {"GET": ADMINS, "POST": ADMINS},
    "frontend:learned-detail": {"GET": ADMINS, "POST": ADMINS},
    "frontend:learned-promote": {"POST": ADMINS},
    "frontend:learned-cancel": {"POST": ADMINS},
    "frontend:lens-moved": {"GET": EVERYONE, "POST": EVERYONE},
    "frontend:lens-moved-page": {"GET": EVERYONE, "POST": EVERYONE},
}

# Bodies that get a request past input validation to the permission decision of the service.
BODIES: dict[str, dict[str, Any]] = {
    "assignment-draft": {"state": {}, "revision": 1},
    "assignment-submit": {"submit_key": "probe", "units": []},
    "campaign-list": {"name": "Probe campaign"},
}
# Pages that send everyone, logged in or not, to the login page.
TO_LOGIN = {"frontend:logout"}

ROUTES = project_routes()


def test_every_url_has_a_rule() -> None:
    names = {route.name for route in ROUTES}
    missing = sorted(names - set(RULES))
    assert not missing, f"URLs without a permission rule (add one line each to RULES in {__file__}): {missing}"
    stale = sorted(set(RULES) - names)
    assert not stale, f"rules for URLs that no longer exist: {stale}"
    for name, methods in RULES.items():
        route = next(r for r in ROUTES if r.name == name)
        assert set(methods) <= set(route.methods), f"{name}: a rule for a method the probe does not send"


def _send(client: Any, route: Route, method: str, url: str) -> Any:
    body = BODIES.get(route.name, {})
    with transaction.atomic():
        if route.is_api:
            response = client.generic(method, url, data=_json(body), content_type="application/json")
        else:
            response = getattr(client, method.lower())(url, {})
        transaction.set_rollback(True)
    return response


def _json(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body)


def _to_login(response: Any) -> bool:
    return response.status_code == 302 and "/login/" in response.get("Location", "")


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_permission_matrix(route: Route, probe: Probe, client_as: Any) -> None:
    rule = RULES.get(route.name)
    if rule is None:
        pytest.fail(f"{route.name} ({route.route}) has no rule in RULES")
    url = reverse(route.name, kwargs={a: probe.kwargs_for(route.name, a) for a in route.arguments})
    problems: list[str] = []
    clients = {role: client_as(role) for role in ROLES}
    for method in route.methods:
        allowed = rule.get(method)
        for role in ROLES:
            response = _send(clients[role], route, method, url)
            status = response.status_code
            where = f"{method} {url} as {role}: {status}"
            if status >= 500:
                problems.append(f"{where} (server error)")
            elif allowed is None:
                # DRF checks permissions before the method: a role kept out hears so first.
                ok = status in (401, 403, 405) if route.is_api else status == 405 or _to_login(response)
                if not ok:
                    problems.append(f"{where} (undeclared method: expected a refusal)")
            elif role in allowed:
                if status in (401, 403, 404) or (_to_login(response) and route.name not in TO_LOGIN):
                    problems.append(f"{where} (the rule lets {role} in)")
            elif role == "anonymous":
                if route.is_api and (status != 401 or "WWW-Authenticate" not in response):
                    problems.append(f"{where} (expected 401 with WWW-Authenticate)")
                if not route.is_api and not _to_login(response):
                    problems.append(f"{where} (expected the login redirect)")
            elif status not in (403, 404):
                problems.append(f"{where} (expected 403 or 404: the rule keeps {role} out)")
    assert not problems, "\n".join(problems)
