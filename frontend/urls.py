from django.contrib.auth import views as auth_views
from django.urls import include, path

from frontend.throttling import address_throttled

app_name = "frontend"

# Annotator pages (home, instructions, annotation) and researcher/admin pages (dashboards, imports,
# learned-metric training) live in separate modules.
urlpatterns = [
    # Sign-in posts count per address as the token API's do; wrong passwords lock out (django-axes).
    path("login/", address_throttled("auth", what="sign-in attempts from this address")(
        auth_views.LoginView.as_view(template_name="frontend/login.html", redirect_authenticated_user=True)),
        name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("frontend.urls_annotator")),
    path("", include("frontend.urls_research")),
    path("", include("frontend.urls_learned")),
]
