"""The base of every websocket that relays live events (``core.events``) to a page.

A consumer checks who connects, then calls :meth:`LiveGroupsConsumer.live_join` with its groups before it
reads and sends the state the page starts from, so no event falls between the two. With the shared
channel layer (Redis) it joins the layer's groups; with the event feed (``LIVE_EVENTS_FEED``, no Redis) it
reads the groups' new ``LiveEvent`` rows every ``LIVE_EVENTS_POLL_SECONDS`` in a task of its own, and closes
the socket (1011) if the database cannot be read, so that the page shows it is offline and connects again.
Either way each event reaches the page as one JSON message, and ``{"event": "ping"}`` gets
``{"event": "pong"}`` (pages use it to notice a connection that went silent).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from core.events import FeedCursor, live_feed_enabled, live_feed_last_id

logger = logging.getLogger(__name__)

CLOSE_FEED_FAILED = 1011


class LiveGroupsConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]  # channels has no type hints
    live_groups: tuple[str, ...] = ()
    _feed_task: asyncio.Task[None] | None = None

    async def live_join(self, *groups: str) -> None:
        self.live_groups = tuple(groups)
        if live_feed_enabled():
            cursor = FeedCursor(groups, await database_sync_to_async(live_feed_last_id)())
            self._feed_task = asyncio.ensure_future(self._relay_feed(cursor))
            return
        for group in groups:
            await self.channel_layer.group_add(group, self.channel_name)

    async def live_leave(self) -> None:
        task, self._feed_task = self._feed_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        elif self.live_groups and not live_feed_enabled():
            for group in self.live_groups:
                await self.channel_layer.group_discard(group, self.channel_name)
        self.live_groups = ()

    async def _relay_feed(self, cursor: FeedCursor) -> None:
        interval = max(0.05, float(settings.LIVE_EVENTS_POLL_SECONDS))
        try:
            while True:
                if not cursor.more:
                    await asyncio.sleep(interval)
                for payload in await database_sync_to_async(cursor.read)():
                    await self.send_json(payload)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("live events of %s could not be read; closing the websocket", self.live_groups)
            self._feed_task = None
            await self.close(code=CLOSE_FEED_FAILED)

    async def disconnect(self, code: int) -> None:
        await self.live_leave()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Pages only listen, and ask ``ping`` to see that the connection is alive."""
        if isinstance(content, dict) and content.get("event") == "ping":
            await self.send_json({"event": "pong"})

    async def event_message(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])
