"""The bad-input corpus: every write path of the API, hostile values in every field.

Two layers. Named cases (issue 11, defects 6 and 7) assert the exact answer: a 400 (or 413) naming the
field, the same on SQLite and PostgreSQL. The corpus then sends each bad value in each field of each
write path and asserts no 5xx and nothing half-written: the row counts of every table of the apps are
the same before and after any refused request.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.apps import apps
from django.db import transaction

from core.errors import ServiceError
from tests.factories import STEPS_REVIEWED
from tests.probe.conftest import Probe

LONG = "x" * 5000
DIGITS = "9" * 5000
BAD_VALUES: list[Any] = [
    None, "", LONG, "\ud800", "a\x00b", "²", DIGITS, 2**31, 2**63, 2**70, -(2**63) - 1, -1, 0, 1.5, 1e308, True,
    [], {}, [[[[[[]]]]]], {"a": {"b": {"c": {}}}}, ["x"] * 1000, {"k" * 300: 1},
]


def row_counts() -> dict[str, int]:
    return {
        model._meta.label: model._default_manager.count()
        for app in ("annotation", "core", "metrics", "authtoken")
        for model in apps.get_app_config(app).get_models()
    }


def send(client: Any, method: str, url: str, body: Any = None, raw: str | bytes | None = None) -> Any:
    """One request in a rolled-back transaction; fails on a 5xx or on rows written by a refused request."""
    with transaction.atomic():
        before = row_counts()
        data = raw if raw is not None else json.dumps(body, ensure_ascii=True)
        response = client.generic(method, url, data=data, content_type="application/json")
        after = row_counts()
        transaction.set_rollback(True)
    assert response.status_code < 500, (method, url, str(body)[:200], response.status_code)
    if response.status_code >= 400:
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        assert not changed, (method, url, str(body)[:200], response.status_code, changed)
    return response


def field_of(response: Any) -> str:
    data = response.json()
    return str(data.get("field", "")) + " " + " ".join(str(k) for k in data)


# --- Defect 6: 500s that must be 400s with a field error --------------------------------------------------


def test_idle_release_minutes_overflow_is_a_field_error(probe: Probe, client_as: Any) -> None:
    client = client_as("researcher")
    for method, url in (("POST", "/api/campaigns/"), ("PATCH", f"/api/campaigns/{probe.campaign.slug}/")):
        response = send(client, method, url, {"name": "Overflow", "idle_release_minutes": 2147483647})
        assert response.status_code == 400 and "idle_release_minutes" in field_of(response)


def test_a_long_campaign_name_without_slug_gets_a_fitting_slug(probe: Probe, client_as: Any) -> None:
    client = client_as("researcher")
    response = client.post("/api/campaigns/", {"name": "word " * 30}, format="json")  # 150 characters
    assert response.status_code == 201, response.content
    assert response.json()["slug"] == "-".join(["word"] * 20)  # cut to 100 characters, no dash left at the end
    too_long = send(client, "POST", "/api/campaigns/", {"name": "n" * 201})
    assert too_long.status_code == 400 and "name" in field_of(too_long)


@pytest.mark.parametrize("value", ["²", DIGITS, "-1", "1e3", "٣"])
def test_version_parameter_is_checked(value: str, probe: Probe, client_as: Any) -> None:
    client = client_as("researcher")
    from urllib.parse import quote

    lens = f"/api/lens/campaigns/{probe.campaign.slug}"
    for method, url in (("POST", "/api/lens/score/"), ("GET", f"{lens}/leaderboard/"), ("POST", f"{lens}/rescore/")):
        response = send(client, method, f"{url}?version={quote(value)}", {"items": [{"complex": "a", "output": "b",
                                                                                       "references": ["c"]}]})
        assert response.status_code == 400, (url, value, response.content)
        assert response.json()["field"] == "version"


@pytest.mark.django_db(transaction=True)  # the consumer reaches the database from another thread
def test_lens_websocket_with_a_huge_id_closes_cleanly(admin_user: Any) -> None:
    from asgiref.sync import async_to_sync
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from metrics.routing import websocket_urlpatterns

    async def scenario(path: str) -> Any:
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
        comm.scope["user"] = admin_user
        connected, code = await comm.connect()
        await comm.disconnect()
        return connected, code

    for path in (f"/ws/lens/{DIGITS}/", "/ws/lens/٣/", "/ws/lens/99999999999999999/"):
        assert async_to_sync(scenario)(path) == (False, 4404), path


@pytest.mark.parametrize("revision", [2**31, 2**63, 2**70])
def test_draft_revision_past_the_column_is_a_field_error(revision: int, probe: Probe, client_as: Any) -> None:
    response = send(client_as("annotator"), "PUT", f"/api/assignments/{probe.assignment.pk}/draft/",
                    {"state": {}, "revision": revision})
    assert response.status_code == 400 and "revision" in field_of(response)


@pytest.mark.parametrize("pk", [2**31, 2**63, 2**70, 5541236296383908930069871984640])
def test_an_id_past_the_columns_in_an_annotators_url_is_a_404(pk: int, probe: Probe, client_as: Any) -> None:
    """The annotators' reads are prepared statements on PostgreSQL, which type an id as the column: one past
    its range must still answer 404, as plain SQL does (found by the schema fuzzer)."""
    client = client_as("annotator")
    for method, url, body in (("GET", f"/api/assignments/{pk}/", None),
                              ("PUT", f"/api/assignments/{pk}/draft/", {"state": {}, "revision": 1}),
                              ("POST", f"/api/assignments/{pk}/submit/", {"submit_key": "k", "units": []}),
                              ("GET", f"/api/annotations/{pk}/", None)):
        assert send(client, method, url, body).status_code == 404, (method, url)
    assert client.get(f"/api/assignments/{probe.assignment.pk}/").status_code == 200  # the session still works


def test_training_seed_out_of_range_is_a_field_error(probe: Probe, client_as: Any) -> None:
    response = send(client_as("admin"), "POST", "/api/learned/versions/",
                    {"campaigns": [probe.campaign.slug], "seed": 2**70})
    assert response.status_code == 400 and "seed" in field_of(response)


def _jsonl(**overrides: Any) -> dict[str, Any]:
    return {"id": "n1", "source": "A long sentence.", "references": ["A sentence."],
            "outputs": [{"system": "S", "text": "A sentence."}], **overrides}


BAD_IMPORTS = {
    "lone surrogate": (json.dumps(_jsonl(source="bad \ud800 text")) + "\n").encode(),
    "NUL escape": (json.dumps(_jsonl(source="bad \x00 text")) + "\n").encode(),
    "NUL byte": b'{"id": "n1", "source": "a\x00b", "outputs": [{"system": "S", "text": "x"}]}\n',
    "deep nesting": b'{"id": "n1", "source": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "long id": (json.dumps(_jsonl(id="i" * 201)) + "\n").encode(),
    "long system": (json.dumps(_jsonl(outputs=[{"system": "s" * 201, "text": "x"}])) + "\n").encode(),
    "simpeval long id": ("original_id,original,generation,system,rating_1\n" + "o" * 201
                         + ",A long one.,A one.,S,50\n").encode(),
}


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("case", BAD_IMPORTS, ids=list(BAD_IMPORTS))
def test_bad_import_content_is_a_400_naming_the_line(case: str, debug: bool, probe: Probe, client_as: Any,
                                                     settings: Any) -> None:
    settings.DEBUG = debug  # the DEBUG error page used to crash on a lone surrogate
    client = client_as("researcher")
    kind = "simpeval" if case.startswith("simpeval") else "jsonl"
    upload = io.BytesIO(BAD_IMPORTS[case])
    upload.name = f"bad.{'csv' if kind == 'simpeval' else 'jsonl'}"
    with transaction.atomic():
        before = row_counts()
        response = client.post(f"/api/campaigns/{probe.campaign.slug}/imports/", {"file": upload, "kind": kind},
                               format="multipart")
        assert row_counts() == before
        transaction.set_rollback(True)
    assert response.status_code == 400, response.content
    assert response.json()["line"] == (1 if kind == "jsonl" else 2)


# --- Defect 7: unbounded payloads ----------------------------------------------------------------------------


def _submit_body(probe: Probe, client: Any, **extra: Any) -> dict[str, Any]:
    units = [u["id"] for u in client.get(f"/api/assignments/{probe.assignment.pk}/").json()["units"]]
    return {"submit_key": "big", "steps_reviewed": STEPS_REVIEWED,
                                 "units": [{"unit": u, "category": "paraphrase", "rating": 50, "rank": i + 1}
                                           for i, u in enumerate(units)], **extra}


def test_submit_refuses_unknown_keys_and_unbounded_fields(probe: Probe, client_as: Any) -> None:
    client = client_as("annotator")
    url = f"/api/assignments/{probe.assignment.pk}/submit/"
    extra = send(client, "POST", url, _submit_body(probe, client, junk="x" * (5 * 1024 * 1024)))
    assert extra.status_code in (400, 413)
    unknown = send(client, "POST", url, _submit_body(probe, client, junk=1))
    assert unknown.status_code == 400 and unknown.json()["field"] == "junk"
    stamps = send(client, "POST", url, _submit_body(probe, client, step_timestamps={"rate": "t" * 1_000_000}))
    assert stamps.status_code == 400 and stamps.json()["field"] in ("step_timestamps.rate", "payload")
    short_stamps = send(client, "POST", url, _submit_body(probe, client, step_timestamps={"rate": "t" * 100}))
    assert short_stamps.status_code == 400 and short_stamps.json()["field"].startswith("step_timestamps")
    body = _submit_body(probe, client)
    body["units"][0]["edits"] = [{"type": "split", "source_span": None, "output_span": None, "anchor": 0}] * 20_000
    edits = send(client, "POST", url, body)
    assert edits.status_code == 400 and edits.json()["field"] in ("units[0].edits", "payload")
    body["units"][0]["edits"] = body["units"][0]["edits"][:300]
    edits = send(client, "POST", url, body)
    assert edits.status_code == 400 and edits.json()["field"] == "units[0].edits"
    ok = send(client, "POST", url, _submit_body(probe, client, step_timestamps={"rate": {"entered": "2026-01-01"}}))
    assert ok.status_code == 201, ok.content


def test_draft_has_a_size_cap_and_is_not_resent_when_unchanged(probe: Probe, client_as: Any) -> None:
    client = client_as("annotator")
    url = f"/api/assignments/{probe.assignment.pk}/draft/"
    huge = send(client, "PUT", url, {"state": {"blob": "x" * (10 * 1024 * 1024)}, "revision": 1})
    assert huge.status_code == 413
    big = send(client, "PUT", url, {"state": {"blob": "x" * (1024 * 1024)}, "revision": 1})
    assert big.status_code == 400 and big.json()["field"] == "state"
    assert client.put(url, {"state": {"step": "rate"}, "revision": 2}, format="json").status_code == 200
    detail = client.get(f"/api/assignments/{probe.assignment.pk}/")
    assert detail.status_code == 200 and detail["ETag"]
    again = client.get(f"/api/assignments/{probe.assignment.pk}/", HTTP_IF_NONE_MATCH=detail["ETag"])
    assert again.status_code == 304 and not again.content


def test_uploads_over_the_limit_get_413_before_parsing(probe: Probe, client_as: Any, settings: Any) -> None:
    settings.MAX_UPLOAD_BYTES = 1000
    client = client_as("researcher")
    line = json.dumps(_jsonl()) + "\n"
    for size in (2000, 200_000):  # in the service; and refused from Content-Length before the body is read
        upload = io.BytesIO((line * (size // len(line) + 1)).encode())
        upload.name = "big.jsonl"
        with transaction.atomic():
            before = row_counts()
            response = client.post(f"/api/campaigns/{probe.campaign.slug}/imports/",
                                   {"file": upload, "kind": "jsonl"}, format="multipart")
            assert row_counts() == before
            transaction.set_rollback(True)
        assert response.status_code == 413, response.content
        assert "MAX_UPLOAD_BYTES" in response.json()["detail"]


def test_the_import_service_caps_every_interface(probe: Probe, settings: Any) -> None:
    from annotation.services.imports import campaign_import
    from core.errors import TooLarge

    settings.MAX_UPLOAD_BYTES = 10
    with pytest.raises(TooLarge):
        campaign_import(kind="jsonl", file=io.BytesIO(b"x" * 11), filename="f.jsonl", campaign_slug="probe")


# --- The corpus: every write path, every field, every bad value ----------------------------------------------


def write_paths(probe: Probe) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(role, method, url, a valid-looking body) for every API write that takes a JSON body."""
    slug, a = probe.campaign.slug, probe.assignment.pk
    campaign = {"name": "C", "instructions": "", "ratings_per_output": 2, "compression_threshold": 0.5,
                "idle_release_minutes": 5}
    return [
        ("researcher", "POST", "/api/campaigns/", {"slug": "c", **campaign}),
        ("researcher", "PATCH", f"/api/campaigns/{slug}/", campaign),
        ("researcher", "POST", f"/api/campaigns/{slug}/annotators/", {"usernames": ["p-ann2"]}),
        ("annotator", "PUT", f"/api/assignments/{a}/draft/", {"state": {"step": "rate"}, "revision": 5}),
        ("annotator", "POST", f"/api/assignments/{a}/submit/", {"submit_key": "k", "steps_reviewed": STEPS_REVIEWED,
                                                                                   "units": [],
                                                                 "step_seconds": {}, "step_timestamps": {}}),
        ("admin", "POST", "/api/learned/versions/", {"campaigns": [slug], "encoder": "tiny", "k": 2, "epochs": 1,
                                                  "heldout": 0.1, "seed": 1, "note": "", "options": {}}),
        ("researcher", "POST", f"/api/campaigns/{slug}/allocation/", {"policy": "uniform", "seeds": 2, "budget": 10}),
        ("researcher", "POST", "/api/lens/score/", {"items": [{"complex": "a", "output": "b", "references": ["c"]}]}),
        ("anonymous", "POST", "/api/auth/token/", {"username": "p-ann", "password": "wrong"}),
    ]


RAW_BODIES = ["", "not json", "[]", '"text"', "1", "null", "[" * 100_000 + "]" * 100_000,
              '{"a": "\\ud800"}', '{"a": "\\u0000"}', '{"a": NaN}', "\xff\xfe"]


def test_bad_input_corpus_on_every_write_path(probe: Probe, client_as: Any, settings: Any) -> None:
    # The corpus reaches the token endpoint's validation: no sign-in limit or lock-out stops it first.
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "auth": "100000/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    settings.AXES_FAILURE_LIMIT = 100000
    sent = 0
    for role, method, url, body in write_paths(probe):
        client = client_as(role)
        for raw in RAW_BODIES:
            send(client, method, url, raw=raw)
            sent += 1
        for key in body:
            for value in BAD_VALUES:
                send(client, method, url, {**body, key: value})
                sent += 1
            if isinstance(body[key], list | dict) and body[key]:
                inner = body[key][0] if isinstance(body[key], list) else None
                if isinstance(inner, dict):
                    for inner_key in inner:
                        for value in BAD_VALUES:
                            send(client, method, url, {**body, key: [{**inner, inner_key: value}]})
                            sent += 1
        send(client, method, url, {**body, "unexpected": "x"})
        send(client, method, url, {**body, "\ud800": 1})
    # Writes without a body: hostile query strings and ids.
    researcher = client_as("researcher")
    for url in (f"/api/campaigns/{probe.campaign.slug}/annotators/{'u' * 300}/",
                f"/api/campaigns/{probe.campaign.slug}/annotators/a%00b/",
                "/api/assignments/?campaign=a%00b", f"/api/campaigns/{probe.campaign.slug}/export/?type=xlsx",
                f"/api/lens/campaigns/{probe.campaign.slug}/rescore/?version=%00"):
        for method in ("GET", "POST", "DELETE"):
            send(researcher, method, url)
            sent += 1
    assert sent > 500


# --- Issue 43, defect 8: the remaining 500s on input ----------------------------------------------------------

HUGE = "1" + "0" * 400  # a JSON integer no float and no column holds


def _raw_submit(probe: Probe, client: Any, **extra: Any) -> str:
    """A valid submit body as JSON text with `extra` spliced in as raw JSON (numbers json.dumps cannot write)."""
    body = json.dumps(_submit_body(probe, client))
    return body[:-1] + "".join(f', "{key}": {value}' for key, value in extra.items()) + "}"


@pytest.mark.parametrize("number", [HUGE, "-" + HUGE, "1" + "0" * 309, "1e400", "-1e400"])
def test_a_number_no_column_holds_is_a_400_naming_its_field(number: str, probe: Probe, client_as: Any) -> None:
    client = client_as("annotator")
    url = f"/api/assignments/{probe.assignment.pk}/submit/"
    body = _submit_body(probe, client)
    raw = json.dumps(body).replace('"rating": 50', f'"rating": {number}', 1)
    rating = send(client, "POST", url, raw=raw)
    assert rating.status_code == 400 and rating.json()["field"] == "units[0].rating", rating.content
    steps = send(client, "POST", url, raw=_raw_submit(probe, client, step_seconds=f'{{"rate": {number}}}'))
    assert steps.status_code == 400 and steps.json()["field"] == "step_seconds.rate", steps.content
    draft = send(client, "PUT", f"/api/assignments/{probe.assignment.pk}/draft/",
                 raw=f'{{"state": {{"step_seconds": {{"rate": {number}}}}}, "revision": 1}}')
    assert draft.status_code == 400 and draft.json()["field"] == "state.step_seconds.rate", draft.content
    quality = send(client_as("researcher"), "POST", f"/api/campaigns/{probe.campaign.slug}/quality/setup/",
                   raw=f'{{"attention_rate": {number}, "repeat_share": 0}}')
    assert quality.status_code == 400 and quality.json()["field"] == "attention_rate", quality.content


def test_quality_shares_are_one_rule_for_page_and_api(probe: Probe, client_as: Any) -> None:
    from evaluation.services.quality import quality_share

    values: list[Any] = [10**400, -(10**400), "1" + "0" * 400, "1e400", "nan", "²", True, None, [], "", 2]
    for value in values:
        with pytest.raises(ServiceError) as error:
            quality_share(value, field="attention_rate", high=1)
        assert error.value.field == "attention_rate"
    assert quality_share("0.25", field="repeat_share", high=0.5) == 0.25
    assert quality_share(1, field="attention_rate", high=1) == 1.0
    page = client_as("researcher").post(f"/research/campaigns/{probe.campaign.slug}/quality/",
                                        {"action": "setup", "attention_rate": "0", "repeat_share": "9" * 400})
    assert page.status_code == 400  # the dashboard, the error next to its field (issue 44)
    assert "repeat_share" in field_error(page, "repeat-share")


def field_error(response: Any, element_id: str) -> str:
    """The error a page shows next to the field ``element_id`` (frontend/research/_field.html)."""
    found = re.search(rf'<small class="field-error" id="{element_id}_error"[^>]*>(.*?)</small>',
                      response.content.decode(), re.S)
    assert found, f"no error next to #{element_id}"
    return found.group(1)


@pytest.mark.parametrize("max_uses", [10**20, 2**31, 10**9])
def test_invite_max_uses_past_its_bound_is_a_400(max_uses: int, probe: Probe, client_as: Any) -> None:
    response = send(client_as("researcher"), "POST", f"/api/campaigns/{probe.campaign.slug}/invites/",
                    {"max_uses": max_uses})
    assert response.status_code == 400 and "max_uses" in field_of(response), response.content


@pytest.mark.parametrize("raw", ["²", "٣", "9" * 30, "-1", "0", "1.5", "1e3", " ", "9" * 5000])
def test_page_forms_refuse_numbers_they_cannot_use(raw: str, probe: Probe, client_as: Any) -> None:
    from annotation.models import CampaignInvite

    client = client_as("researcher")
    slug = probe.campaign.slug
    invites = CampaignInvite.objects.count()
    invite = client.post(f"/research/campaigns/{slug}/invites/", {"max_uses": raw})
    assert invite.status_code == (400 if raw.strip() else 302)
    if raw.strip():
        assert "max_uses" in field_error(invite, "invite-max-uses")
        assert CampaignInvite.objects.count() == invites
    batch = client.post(f"/research/campaigns/{slug}/crowd/", {"action": "batch", "batch_size": raw})
    assert batch.status_code == (400 if raw.strip() else 302)
    probe.campaign.refresh_from_db()
    if raw.strip():
        assert "batch_size" in field_error(batch, "batch-size")
        assert probe.campaign.batch_size is None


def test_page_forms_take_whole_numbers_in_their_bounds(probe: Probe, client_as: Any) -> None:
    from annotation.models import CampaignInvite

    client = client_as("researcher")
    client.post(f"/research/campaigns/{probe.campaign.slug}/invites/", {"max_uses": " 12 "})
    assert CampaignInvite.objects.filter(campaign=probe.campaign, max_uses=12).exists()
    client.post(f"/research/campaigns/{probe.campaign.slug}/crowd/", {"action": "batch", "batch_size": "7"})
    probe.campaign.refresh_from_db()
    assert probe.campaign.batch_size == 7


def test_reopening_after_the_annotator_left_is_refused(probe: Probe, client_as: Any) -> None:
    from annotation.models import Annotation
    from annotation.services.assignments import campaign_remove_annotator

    researcher = client_as("researcher")
    url = f"/api/annotations/{probe.annotation.pk}/reopen/"
    assert researcher.post(url).status_code == 201
    campaign_remove_annotator(campaign=probe.campaign, annotator=probe.users["annotator"])
    again = send(researcher, "POST", url)
    assert again.status_code in (400, 409) and again.json()["field"] == "annotation", again.content
    page = researcher.post(f"/research/campaigns/{probe.campaign.slug}/items/{probe.annotation.assignment_id}/",
                           {"action": "reopen"})
    assert page.status_code == 302
    assert Annotation.objects.filter(previous=probe.annotation).count() == 1


TUTORIAL_BODIES = [
    "[" * 100_000 + "]" * 100_000, '{"units": ' + "[" * 100_000 + "]" * 100_000 + "}", "1", "null", "not json",
    '{"units": [{"unit": "a", "rank": "x"}, {"unit": "b", "rank": 1}]}',
    '{"units": [{"unit": ["a"], "rank": 1}, {"unit": {"b": 1}, "rank": 2}]}',
    '{"units": [{"unit": "a", "rank": 1e400}, {"unit": "b", "rank": ' + HUGE + "}]}",
    '{"units": [{"unit": "a", "rank": [1]}, {"unit": "b", "rank": {}}]}',
    '{"units": [{"unit": "a\\u0000", "rank": 1, "category": ["x"]}]}',
]


@pytest.mark.parametrize("body", TUTORIAL_BODIES, ids=range(len(TUTORIAL_BODIES)))
def test_tutorial_check_answers_bad_bodies_without_a_500(body: str, probe: Probe, client_as: Any) -> None:
    response = send(client_as("annotator"), "POST", f"/campaigns/{probe.campaign.slug}/tutorial/1/check/", raw=body)
    assert response.status_code in (200, 400), response.content
    assert response.status_code == 400 or response.json()["passed"] is False


def test_a_version_whose_checkpoint_is_gone_is_a_409_without_its_path(probe: Probe, client_as: Any) -> None:
    """Found by the schema fuzzer as a researcher: the probe's LENS version points at no checkpoint."""
    response = send(client_as("researcher"), "POST", f"/api/lens/score/?version={probe.version.pk}",
                    {"items": [{"complex": "A long sentence.", "output": "A sentence.", "references": ["A one."]}]})
    assert response.status_code == 409 and response.json()["field"] == "version", response.content
    assert "/srv/secret" not in response.content.decode()
