from django.urls import path

from frontend import views_annotator as views
from frontend import views_operations

urlpatterns = [
    path("", views.home, name="home"),
    path("campaigns/<slug:slug>/instructions/", views.instructions, name="instructions"),
    path("campaigns/<slug:slug>/continue/", views.continue_next, name="continue"),
    path("campaigns/<slug:slug>/tutorial/<int:n>/", views.tutorial, name="tutorial"),
    path("campaigns/<slug:slug>/tutorial/<int:n>/check/", views.tutorial_check_view, name="tutorial-check"),
    path("annotate/<int:pk>/", views.annotate, name="annotate"),
    path("campaigns/<slug:slug>/done/", views_operations.completion_view, name="completion"),
    path("invite/<str:token>/", views_operations.invite_view, name="invite"),
    path("account/password/<str:uid>/<str:token>/", views_operations.set_password_view, name="set-password"),
    path("crowd/<slug:slug>/<str:token>/", views_operations.crowd_view, name="crowd"),
    path("crowd/<slug:slug>/return/<str:key>/", views_operations.crowd_return_view, name="crowd-return"),
]
