"""Websocket routes of every app, gathered for the ASGI application."""

from evaluation.routing import websocket_urlpatterns as evaluation_ws
from metrics.routing import websocket_urlpatterns as metrics_ws

websocket_urlpatterns = [*evaluation_ws, *metrics_ws]
