"""Live campaign events for researchers' dashboards.

The consumer is an interface like a view: it checks who is connecting (the campaign's owners and
admins only), joins the campaign's group and relays the events that
`core.events` broadcasts there (`core.consumers.LiveGroupsConsumer`): submissions, and the progress of the
campaign's background jobs. Browsers only listen (and ping); anything else they send is ignored.
"""

from __future__ import annotations

from channels.db import database_sync_to_async

from annotation.models import Campaign, User
from annotation.selectors import CampaignPurpose, campaign_list_visible
from core.consumers import LiveGroupsConsumer
from core.events import campaign_group, live_events_shared

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403


def _managed_campaign(user: User, slug: str) -> Campaign | None:
    return campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE).filter(slug=slug).first()


class CampaignEventsConsumer(LiveGroupsConsumer):
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
        await self.live_join(campaign_group(campaign.pk))
        await self.accept()
        # "shared": whether the worker's events reach this page too (else the page says it gets no live updates).
        await self.send_json({"event": "hello", "campaign": campaign.slug, "shared": live_events_shared()})
