"""The campaign events websocket: owners and admins hear submissions; others are turned away."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from annotation.models import Assignment, RatingUnit
from annotation.services.annotations import annotation_submit
from annotation.services.assignments import campaign_add_annotators
from annotation.services.events import annotation_submitted
from evaluation.consumers import CLOSE_FORBIDDEN, CLOSE_UNAUTHENTICATED
from evaluation.routing import websocket_urlpatterns
from tests.factories import STEPS_REVIEWED, public_id

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(user, slug: str = "demo") -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/campaigns/{slug}/")
    comm.scope["user"] = user
    return comm


def submit_first(user) -> int:
    assignment = Assignment.objects.filter(annotator=user).order_by("id")[0]
    units = list(RatingUnit.objects.filter(source=assignment.source).order_by("id"))
    items = [{"unit": public_id(assignment, u.pk), "category": "paraphrase", "rating": 90 - 5 * i, "rank": i + 1,
              "edits": None} for i, u in enumerate(units)]
    annotation = annotation_submit(assignment=assignment, user=user, payload={"steps_reviewed": STEPS_REVIEWED,
                                                                              "units": items}, submit_key="ws")
    return annotation.pk


def test_owner_receives_submission_events(demo_campaign, researcher, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    annotator = annotators[0]

    async def scenario() -> dict:
        comm = communicator(researcher)
        connected, _ = await comm.connect()
        assert connected
        assert (await comm.receive_json_from())["event"] == "hello"
        # The submit's on_commit hook broadcasts to the campaign group.
        await database_sync_to_async(submit_first)(annotator)
        event = await comm.receive_json_from(timeout=5)
        await comm.send_json_to({"event": "ping"})
        assert (await comm.receive_json_from())["event"] == "pong"
        await comm.disconnect()
        return event

    event = async_to_sync(scenario)()
    assert event["event"] == "annotation.submitted"
    assert event["annotator"] == annotator.pseudonym
    assert event["annotator_done"] == 1 and event["source_done"] == 1
    assert annotator.username not in str(event)


def test_admin_hears_an_explicit_broadcast(demo_campaign, make_user, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:1])
    admin = make_user("boss", "admin")
    annotation_id = submit_first(annotators[0])  # broadcast before anyone listens: lost, as it should be

    async def scenario() -> dict:
        comm = communicator(admin)
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_json_from()
        await database_sync_to_async(annotation_submitted)(annotation_id=annotation_id)
        event = await comm.receive_json_from(timeout=5)
        assert await comm.receive_nothing()
        await comm.disconnect()
        return event

    expected = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first().source.external_id
    assert async_to_sync(scenario)()["source"] == expected


@pytest.mark.parametrize("who", ["annotator", "other researcher", "anonymous", "unknown campaign"])
def test_others_are_rejected(demo_campaign, researcher, annotators, make_user, who):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:1])
    user, slug = {
        "annotator": (annotators[0], "demo"),
        "other researcher": (make_user("res2", "researcher"), "demo"),
        "anonymous": (AnonymousUser(), "demo"),
        "unknown campaign": (researcher, "nope"),
    }[who]

    async def scenario() -> tuple[bool, int | None]:
        comm = communicator(user, slug)
        connected, code = await comm.connect()
        return connected, code

    connected, code = async_to_sync(scenario)()
    assert not connected
    assert code == (CLOSE_UNAUTHENTICATED if who == "anonymous" else CLOSE_FORBIDDEN)


def test_full_asgi_stack_uses_the_session(demo_campaign, researcher, client):
    """Through config.asgi: the session cookie identifies the researcher, the origin must be allowed."""
    from config.asgi import application

    client.force_login(researcher)
    cookie = f"sessionid={client.cookies['sessionid'].value}"

    async def scenario() -> bool:
        comm = WebsocketCommunicator(application, "/ws/campaigns/demo/",
                                     headers=[(b"cookie", cookie.encode()), (b"origin", b"http://testserver"),
                                              (b"host", b"testserver")])
        connected, _ = await comm.connect()
        if connected:
            await comm.disconnect()
        return connected

    assert async_to_sync(scenario)()
