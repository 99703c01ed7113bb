"""Websocket routes of the metrics app: live training progress of a learned-metric version (``ws/learned/<id>/``;
its former address ``ws/lens/<id>/`` still answers), perturbation-testbed progress."""

from django.urls import re_path

from metrics.consumers import TestbedProgressConsumer, TrainingProgressConsumer

websocket_urlpatterns = [
    re_path(r"^ws/learned/(?P<version_id>\d+)/$", TrainingProgressConsumer.as_asgi()),
    re_path(r"^ws/lens/(?P<version_id>\d+)/$", TrainingProgressConsumer.as_asgi()),
    re_path(r"^ws/testbed/(?P<job_id>\d+)/$", TestbedProgressConsumer.as_asgi()),
]
