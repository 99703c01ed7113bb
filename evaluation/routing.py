from django.urls import path

from evaluation.consumers import CampaignEventsConsumer

websocket_urlpatterns = [
    path("ws/campaigns/<slug:slug>/", CampaignEventsConsumer.as_asgi()),
]
