"""Admin pages of the LENS registry: train, watch progress live, promote / roll back, cancel."""

from django.urls import path

from frontend import views_lens

urlpatterns = [
    path("lens/", views_lens.lens_index, name="lens-index"),
    path("lens/<int:version_id>/", views_lens.lens_detail, name="lens-detail"),
    path("lens/<int:version_id>/promote/", views_lens.lens_promote, name="lens-promote"),
    path("lens/<int:version_id>/cancel/", views_lens.lens_cancel, name="lens-cancel"),
]
