"""The error pages: one not-found, one permission-denied and one server-error path for every HTML page.

``handler404`` and ``handler403`` (config/urls.py) send API paths a JSON body, as every API error, and
everyone else the site's own styled page. A view that must hide whether something exists (another
annotator's assignment) returns ``not_found_page`` itself, so the annotator sees the same styled 404 in
development too, where Django would otherwise show its debug page for a raised Http404.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found_page(request: HttpRequest, message: str = "") -> HttpResponse:
    return render(request, "frontend/errors/404.html", {"message": message}, status=404)


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return not_found_page(request)


def handler403(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    message = str(exception) if exception is not None and str(exception) else ""
    return render(request, "frontend/errors/403.html", {"message": message}, status=403)


def handler500(request: HttpRequest) -> HttpResponse:
    """The styled page (with the viewport a phone needs) rendered without the request's context: whatever failed
    (the database, a context processor) must not fail this page too."""
    if is_api(request):
        return JsonResponse({"detail": "Server error."}, status=500)
    return HttpResponseServerError(loader.get_template("frontend/errors/500.html").render({}))
