"""The app's URLs and one that fails, so that a browser test can see the server-error page (500)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import handler403, handler404, handler500
from config.urls import urlpatterns as app_urlpatterns

__all__ = ["handler403", "handler404", "handler500", "urlpatterns"]


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a deliberate failure (tests.browser.urls_failing)")


urlpatterns = [path("test-server-error/", fail), *app_urlpatterns]
