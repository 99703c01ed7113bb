"""Websocket routes of the metrics app: live LENS training progress, perturbation-testbed progress."""

from django.urls import re_path

from metrics.consumers import TestbedProgressConsumer, TrainingProgressConsumer

websocket_urlpatterns = [
    re_path(r"^ws/lens/(?P<version_id>\d+)/$", TrainingProgressConsumer.as_asgi()),
    re_path(r"^ws/testbed/(?P<job_id>\d+)/$", TestbedProgressConsumer.as_asgi()),
]
