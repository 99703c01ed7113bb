"""Live events for browsers, sent over the Channels layer.

A campaign's dashboard listens on ``campaign_group(campaign_id)`` (consumers in ``evaluation.consumers``
relay the events). Sending never fails the caller: a dashboard that misses an event reloads.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def campaign_group(campaign_id: int) -> str:
    return f"campaign-{campaign_id}"


def broadcast(group: str, payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, {"type": "event.message", "payload": payload})
    except Exception:  # an annotator's submit must not fail because a dashboard is unreachable
        logger.exception("could not broadcast to %s", group)
