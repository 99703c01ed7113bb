"""Live events for browsers: sent over the Channels layer, or through the ``LiveEvent`` table.

A campaign's dashboard listens on ``campaign_group(campaign_id)``, a background job's page on
``job_group(job_id)`` (consumers in ``evaluation.consumers`` and ``metrics.consumers`` relay the events,
through ``core.consumers.LiveGroupsConsumer``). Sending never fails the caller: a page that misses an event
refreshes its state when its websocket connects again.

Which way an event goes is ``LIVE_EVENTS_FEED``. Off (the default with Redis), ``broadcast`` sends it over the
channel layer that every process shares. On (the default without Redis: the in-memory layer is private to
one process, and ``make run``'s Celery worker is another), ``broadcast`` stores a row once the sender's
transaction commits, and every open websocket reads its groups' new rows (:class:`FeedCursor`); the layer is
not used, so an event sent by the web process itself reaches each page once too.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.models import LiveEvent

logger = logging.getLogger(__name__)

# Old rows are pruned when a row's id is a multiple of this, so the table holds at most
# LIVE_EVENTS_MAX_ROWS + PRUNE_EVERY rows, none much older than LIVE_EVENTS_KEEP_SECONDS while events come.
PRUNE_EVERY = 50
# A websocket reads at most this many rows at a time (it reads again at once while there are more).
FEED_BATCH = 200
# PostgreSQL gives a row its id when it is inserted, so a row can commit after one with a larger id. The feed
# reads the rows of the last REREAD_SECONDS again (skipping those it sent) so that such a row is not missed.
REREAD_SECONDS = 5.0
SENT_KEPT = 1000


def subject_group(model: str, pk: int) -> str:
    """The group of one object's page, by its model's name (lower case) and id: ``campaign-7``."""
    return f"{model}-{pk}"


def campaign_group(campaign_id: int) -> str:
    return subject_group("campaign", campaign_id)


def job_group(job_id: int) -> str:
    """The group of one background job (its progress and its end)."""
    return subject_group("job", job_id)


def live_feed_enabled() -> bool:
    """Whether events go through the ``LiveEvent`` table rather than the channel layer."""
    return bool(getattr(settings, "LIVE_EVENTS_FEED", False))


def live_events_shared() -> bool:
    """Whether an event sent by any process (a Celery worker's included) reaches the web process's pages: through
    the feed, or over a channel layer other than the in-memory one (which is private to its process)."""
    if live_feed_enabled():
        return True
    backend = str(settings.CHANNEL_LAYERS.get("default", {}).get("BACKEND", ""))
    return bool(backend) and not backend.endswith("InMemoryChannelLayer")


def broadcast(group: str, payload: dict[str, Any]) -> None:
    """Send ``payload`` to the pages listening on ``group`` (never raises)."""
    if live_feed_enabled():
        try:
            # Once committed: an event never announces what a rollback undid, and rows commit in id order.
            transaction.on_commit(partial(_feed_write, group, payload))
        except Exception:
            logger.exception("could not store the live event for %s", group)
        return
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, {"type": "event.message", "payload": payload})
    except Exception:  # an annotator's submit must not fail because a dashboard is unreachable
        logger.exception("could not broadcast to %s", group)


def _feed_write(group: str, payload: dict[str, Any]) -> None:
    try:
        row = LiveEvent.objects.create(group=group[:100], payload=payload)
        if row.pk % PRUNE_EVERY == 0:
            live_feed_prune(newest=row.pk)
    except Exception:
        logger.exception("could not store the live event for %s", group)


def live_feed_prune(*, newest: int | None = None) -> int:
    """Delete the rows older than ``LIVE_EVENTS_KEEP_SECONDS`` and all but the newest ``LIVE_EVENTS_MAX_ROWS``;
    returns how many went."""
    newest = live_feed_last_id() if newest is None else newest
    keep = timezone.now() - timedelta(seconds=int(settings.LIVE_EVENTS_KEEP_SECONDS))
    old = LiveEvent.objects.filter(created_at__lt=keep)
    over = LiveEvent.objects.filter(pk__lte=newest - int(settings.LIVE_EVENTS_MAX_ROWS))
    return int(old.delete()[0]) + int(over.delete()[0])


def live_feed_last_id() -> int:
    """The newest row's id (0: none)."""
    return LiveEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0


class FeedCursor:
    """Where one websocket stands in the feed: ``read()`` gives the payloads of its groups' rows that came
    since the last read (since ``start``, an id, at first), each once, in id order (at most ``FEED_BATCH`` at a
    time; ``more`` then says to read again at once).

    Rows above ``low`` that were not sent are read again for ``REREAD_SECONDS``, so a row that commits after
    one with a larger id is still sent; ``low`` then moves to the newest id there was that long ago. At most
    ``SENT_KEPT`` sent ids are remembered (a larger burst moves ``low`` on sooner).
    """

    def __init__(self, groups: Sequence[str], start: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.groups = list(groups)
        self.low = start
        self.sent: set[int] = set()
        self.marks: deque[tuple[float, int]] = deque()
        self.clock = clock
        self.more = False

    def read(self) -> list[dict[str, Any]]:
        now = self.clock()
        top = live_feed_last_id()
        rows = list(
            LiveEvent.objects.filter(group__in=self.groups, pk__gt=self.low).exclude(pk__in=self.sent)
            .order_by("pk").values_list("pk", "payload")[:FEED_BATCH]
        )
        self.sent.update(pk for pk, _ in rows)
        self.more = len(rows) == FEED_BATCH
        self.marks.append((now, rows[-1][0] if self.more else max(top, self.low)))
        while self.marks and now - self.marks[0][0] >= REREAD_SECONDS:
            self.low = max(self.low, self.marks.popleft()[1])
        if len(self.sent) > SENT_KEPT:
            self.low = max(self.low, sorted(self.sent)[-SENT_KEPT - 1])
        self.sent = {pk for pk in self.sent if pk > self.low}
        return [payload for _, payload in rows]
