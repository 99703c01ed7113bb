"""Issue 11, defect 10: the API docs work offline, the schema tells the truth, and schemathesis agrees.

schemathesis generates requests from the OpenAPI schema (a bounded number per operation) and sends them
in-process to the WSGI app as an admin, with the probe's objects in the database. Every check it knows must
pass: no 5xx, every status and body as documented, schema-valid data accepted and invalid data refused.
Queued background work never runs here (tasks start on commit, and the test's transaction never commits).
"""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings

from tests.probe.conftest import Probe

MAX_EXAMPLES = 25  # per operation: about 30 operations in well under a minute


def test_docs_page_is_served_from_the_installed_package(client: Any) -> None:
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cdn." not in html and "https://" not in html.replace("https://swagger.io", "")
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert any("swagger-ui" in a for a in assets), assets
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200, asset


def test_schema_documents_the_errors_and_nullable_fields(client: Any) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            codes = set(operation["responses"])
            assert {"400", "401", "403", "404"} <= codes, (method, path)
            if method in ("post", "put", "patch", "delete"):
                assert {"409", "413"} <= codes, (method, path)
    assert "429" in schema["paths"]["/api/auth/token/"]["post"]["responses"]
    version = schema["components"]["schemas"]["LearnedVersion"]["properties"]
    assert version["started_by"].get("nullable") is True
    export = schema["paths"]["/api/campaigns/{slug}/export/"]["get"]["parameters"]
    assert next(p for p in export if p["name"] == "type")["schema"]["enum"] == ["csv", "jsonl"]


def test_unknown_export_type_is_refused(probe: Probe, client_as: Any) -> None:
    response = client_as("researcher").get(f"/api/campaigns/{probe.campaign.slug}/export/?type=xlsx")
    assert response.status_code == 400 and response.json()["field"] == "type"


def test_api_conforms_to_its_schema(probe: Probe) -> None:
    """Every operation of the schema, MAX_EXAMPLES generated cases each, all of schemathesis's checks."""
    from django.core.wsgi import get_wsgi_application
    from rest_framework.authtoken.models import Token

    headers = {"Authorization": f"Token {Token.objects.create(user=probe.users['admin']).key}"}
    # As Django's test client does: the WSGI handler would otherwise close the test's database connection
    # (inside its transaction) at the end of every request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        api = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())
        failures = _run_all(api, headers)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert not failures, "\n\n".join(failures)


def _run_all(api: Any, headers: dict[str, str]) -> list[str]:
    failures: list[str] = []
    operations = 0
    for result in api.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: Any) -> None:
            case.call_and_validate(headers=headers)

        try:
            check()
        except (Exception, BaseExceptionGroup) as exc:  # every operation is tried; failures are listed together
            failures.append(f"{operation.label}: {str(exc)[:2000]}")
    assert operations >= 25
    return failures
