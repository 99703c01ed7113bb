from django.contrib import admin
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database check for load balancers and docker-compose."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})


# Styled pages for people, JSON under /api/ (frontend.errors: one not-found path for every page).
handler404 = "frontend.errors.handler404"
handler403 = "frontend.errors.handler403"
handler500 = "frontend.errors.handler500"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI in our own page (the document's language, readable colours, no links nested in buttons).
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema", template_name="frontend/api_docs.html"),
         name="api-docs"),
    path("api/", include("annotation.api.urls")),
    path("api/", include("evaluation.api.urls")),
    path("api/", include("metrics.api.urls")),
    path("", include("frontend.urls")),
]
