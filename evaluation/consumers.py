"""Live campaign events for researchers' dashboards.

The consumer is an interface like a view: it checks who is connecting (the campaign's owners and
admins only), joins the campaign's group and relays the events that
`core.events` broadcasts there. Browsers only listen; anything they send is ignored.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotation.models import Campaign, User
from annotation.selectors import CampaignPurpose, campaign_list_visible
from core.events import campaign_group

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def _managed_campaign(user: User, slug: str) -> Campaign | None:
    return campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE).filter(slug=slug).first()


class CampaignEventsConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]  # channels has no type hints
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if not isinstance(user, User) or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        slug = self.scope["url_route"]["kwargs"]["slug"]
        campaign = await database_sync_to_async(_managed_campaign)(user, slug)
        if campaign is None:
            # Same answer for "no such campaign" and "not yours", so slugs do not leak.
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = campaign_group(campaign.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"event": "hello", "campaign": campaign.slug})

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "ping":
            await self.send_json({"event": "pong"})

    async def event_message(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])
