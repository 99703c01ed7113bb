"""Live events without a shared channel layer (issue 44, defect 3): the event feed (core.events, core.consumers).

Under `make run` the web process and the Celery worker each have their own in-memory channel layer, so an event
the worker sends over it never reaches a page. Here "the worker" is simulated by sending with a channel layer of
its own (another in-memory layer, as in another process): the only thing the two share is the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer, channel_layers
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from core import events
from core.events import FeedCursor, broadcast, campaign_group, live_feed_prune
from core.models import LiveEvent
from core.services import background_job_create, background_job_finish, background_job_progress, background_job_start
from evaluation.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db(transaction=True)

IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def embedded(settings: Any) -> Any:
    """The embedded default of `make run`: no Redis, the in-memory layer, the feed on."""
    settings.CHANNEL_LAYERS = IN_MEMORY
    settings.LIVE_EVENTS_FEED = True
    settings.LIVE_EVENTS_POLL_SECONDS = 0.05
    channel_layers.backends.pop("default", None)
    yield settings
    channel_layers.backends.pop("default", None)


@contextmanager
def in_another_process() -> Iterator[None]:
    """Code run inside sends with a channel layer of its own, like the Celery worker's under `make run`."""
    own = channel_layers.backends.get("default")
    channel_layers.backends["default"] = InMemoryChannelLayer()
    try:
        yield
    finally:
        if own is None:
            channel_layers.backends.pop("default", None)
        else:
            channel_layers.backends["default"] = own


def worker_sends(group: str, payload: dict[str, Any]) -> None:
    with in_another_process():
        broadcast(group, payload)


def dashboard(user: Any, slug: str = "demo") -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/campaigns/{slug}/")
    comm.scope["user"] = user
    return comm


def test_an_event_the_worker_sends_reaches_an_open_dashboard_once(embedded, demo_campaign, researcher):
    group = campaign_group(demo_campaign.pk)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], bool]:
        comm = dashboard(researcher)
        connected, _ = await comm.connect()
        assert connected
        hello = await comm.receive_json_from()
        await database_sync_to_async(worker_sends)(group, {"event": "annotation.submitted", "source": "s1"})
        event = await comm.receive_json_from(timeout=5)
        nothing_more = await comm.receive_nothing(timeout=0.5)  # read again for REREAD_SECONDS, sent once
        await comm.disconnect()
        return hello, event, nothing_more

    hello, event, nothing_more = async_to_sync(scenario)()
    assert hello["event"] == "hello" and hello["shared"] is True
    assert event == {"event": "annotation.submitted", "source": "s1"}
    assert nothing_more


def test_an_event_the_web_process_sends_itself_arrives_once(embedded, demo_campaign, researcher):
    group = campaign_group(demo_campaign.pk)

    async def scenario() -> list[dict[str, Any]]:
        comm = dashboard(researcher)
        await comm.connect()
        await comm.receive_json_from()
        await database_sync_to_async(broadcast)(group, {"event": "annotation.submitted", "source": "s2"})
        got = [await comm.receive_json_from(timeout=5)]
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        return got

    assert async_to_sync(scenario)() == [{"event": "annotation.submitted", "source": "s2"}]


def test_the_worker_s_job_progress_and_end_reach_the_campaign_dashboard(embedded, demo_campaign, researcher):
    job = background_job_create(kind="metric-scores", subject=demo_campaign, total=72, owner=researcher)

    def work() -> None:
        with in_another_process():
            background_job_start(job_id=job.pk, total=72)
            background_job_progress(job_id=job.pk, done=40)
            background_job_finish(job_id=job.pk, done=72)

    async def scenario() -> list[dict[str, Any]]:
        comm = dashboard(researcher)
        await comm.connect()
        await comm.receive_json_from()
        await database_sync_to_async(work)()
        got = [await comm.receive_json_from(timeout=5) for _ in range(3)]
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        return got

    got = async_to_sync(scenario)()
    assert [(e["event"], e["job"], e["status"], e["done"], e["total"]) for e in got] == [
        ("job.progress", job.pk, "running", 0, 72),
        ("job.progress", job.pk, "running", 40, 72),
        ("job.progress", job.pk, "done", 72, 72),
    ]


def test_another_campaign_s_events_do_not_reach_the_dashboard(embedded, demo_campaign, researcher):
    async def scenario() -> bool:
        comm = dashboard(researcher)
        await comm.connect()
        await comm.receive_json_from()
        await database_sync_to_async(worker_sends)(campaign_group(demo_campaign.pk + 1000), {"event": "x"})
        nothing = await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()
        return nothing

    assert async_to_sync(scenario)()


def test_with_a_shared_layer_events_go_over_it_and_nothing_is_stored(settings, demo_campaign, researcher):
    settings.CHANNEL_LAYERS = IN_MEMORY  # stands for Redis here: one process
    settings.LIVE_EVENTS_FEED = False
    channel_layers.backends.pop("default", None)
    group = campaign_group(demo_campaign.pk)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        comm = dashboard(researcher)
        await comm.connect()
        hello = await comm.receive_json_from()
        await database_sync_to_async(broadcast)(group, {"event": "annotation.submitted"})
        event = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return hello, event

    try:
        hello, event = async_to_sync(scenario)()
    finally:
        channel_layers.backends.pop("default", None)
    assert event == {"event": "annotation.submitted"}
    assert hello["shared"] is False  # the in-memory layer without the feed: the page says it is not live
    assert not LiveEvent.objects.exists()


def test_an_event_of_a_rolled_back_transaction_is_not_stored(embedded):
    from django.db import transaction

    with pytest.raises(RuntimeError), transaction.atomic():
        broadcast("campaign-1", {"event": "x"})
        raise RuntimeError("rolled back")
    broadcast("campaign-1", {"event": "y"})
    assert [row.payload for row in LiveEvent.objects.all()] == [{"event": "y"}]


def test_the_feed_keeps_a_bounded_number_of_rows(embedded):
    embedded.LIVE_EVENTS_MAX_ROWS = 20
    for i in range(250):
        broadcast("campaign-1", {"event": "n", "i": i})
    count = LiveEvent.objects.count()
    assert count <= 20 + events.PRUNE_EVERY
    newest = LiveEvent.objects.order_by("-pk").first()
    assert newest is not None and newest.payload["i"] == 249


def test_old_rows_are_pruned(embedded):
    embedded.LIVE_EVENTS_KEEP_SECONDS = 60
    for i in range(3):
        broadcast("campaign-1", {"i": i})
    LiveEvent.objects.filter(payload__i__lt=2).update(created_at=timezone.now() - timedelta(seconds=61))
    assert live_feed_prune() == 2
    assert [row.payload for row in LiveEvent.objects.all()] == [{"i": 2}]


def test_a_row_that_commits_after_a_later_one_is_still_sent_once(embedded):
    now = [0.0]
    LiveEvent.objects.create(pk=10, group="g", payload={"n": 10})
    LiveEvent.objects.create(pk=12, group="g", payload={"n": 12})
    LiveEvent.objects.create(pk=13, group="other", payload={"n": 13})
    cursor = FeedCursor(["g"], 9, clock=lambda: now[0])
    assert cursor.read() == [{"n": 10}, {"n": 12}]
    now[0] = 1.0
    LiveEvent.objects.create(pk=11, group="g", payload={"n": 11})  # its id was handed out before 12's
    assert cursor.read() == [{"n": 11}]
    now[0] = 2.0
    assert cursor.read() == []
    now[0] = 2.0 + events.REREAD_SECONDS  # the rows seen that long ago are not read again
    assert cursor.read() == []
    assert cursor.low >= 13 and cursor.sent == set()
    LiveEvent.objects.create(pk=14, group="g", payload={"n": 14})
    assert cursor.read() == [{"n": 14}]


def test_a_big_burst_is_read_in_batches_in_order(embedded):
    LiveEvent.objects.bulk_create([LiveEvent(group="g", payload={"i": i}) for i in range(events.FEED_BATCH + 30)])
    cursor = FeedCursor(["g"], 0)
    first = cursor.read()
    assert len(first) == events.FEED_BATCH and cursor.more
    second = cursor.read()
    assert [e["i"] for e in first + second] == list(range(events.FEED_BATCH + 30))
    assert not cursor.more


def test_a_feed_that_cannot_be_read_closes_the_socket_so_the_page_stops_saying_live(
    embedded, demo_campaign, researcher, monkeypatch,
):
    def broken(self: FeedCursor) -> list[dict[str, Any]]:
        raise RuntimeError("database gone")

    monkeypatch.setattr(FeedCursor, "read", broken)

    async def scenario() -> dict[str, Any]:
        comm = dashboard(researcher)
        await comm.connect()
        await comm.receive_json_from()
        closed = await comm.receive_output(timeout=5)
        await comm.wait()
        return closed

    assert async_to_sync(scenario)() == {"type": "websocket.close", "code": 1011}


def test_a_failed_testbed_run_reaches_its_page(embedded, make_user):
    from core.services import background_job_fail
    from metrics.consumers import TestbedProgressConsumer

    researcher = make_user("tb-res", "researcher")
    job = background_job_create(kind="testbed", total=7, owner=researcher)

    def worker_fails() -> None:
        with in_another_process():
            background_job_fail(job.pk, "ValueError: no corpus")

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        comm = WebsocketCommunicator(TestbedProgressConsumer.as_asgi(), f"/ws/testbed/{job.pk}/")
        comm.scope["user"] = researcher
        comm.scope["url_route"] = {"kwargs": {"job_id": str(job.pk)}}
        assert (await comm.connect())[0]
        first = await comm.receive_json_from()
        await database_sync_to_async(worker_fails)()
        event = await comm.receive_json_from(timeout=5)
        await comm.disconnect()
        return first, event

    first, event = async_to_sync(scenario)()
    assert first["status"] == "queued"
    assert (event["event"], event["status"], event["error"]) == ("job.progress", "failed", "ValueError: no corpus")
