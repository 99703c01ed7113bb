"""Admin pages of the learned-metric registry (LENS, REFEREE, SIERA): train, watch progress live, promote /
roll back, cancel. The pages' former addresses under ``/lens/`` redirect permanently (308: a POST stays a
POST with its body)."""

from django.urls import path

from core.redirects import moved
from frontend import views_learned

urlpatterns = [
    path("learned/", views_learned.learned_index, name="learned-index"),
    path("learned/<int:version_id>/", views_learned.learned_detail, name="learned-detail"),
    path("learned/<int:version_id>/promote/", views_learned.learned_promote, name="learned-promote"),
    path("learned/<int:version_id>/cancel/", views_learned.learned_cancel, name="learned-cancel"),
    path("lens/", moved, {"to": "frontend:learned-index"}, name="lens-moved"),
    path("lens/<path:rest>", moved, {"to": "frontend:learned-index"}, name="lens-moved-page"),
]
