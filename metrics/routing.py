"""Websocket routes of the metrics app: live LENS training progress."""

from django.urls import re_path

from metrics.consumers import LensProgressConsumer

websocket_urlpatterns = [
    re_path(r"^ws/lens/(?P<version_id>\d+)/$", LensProgressConsumer.as_asgi()),
]
