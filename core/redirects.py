"""Permanent moves of an address: one view for every former path the project still answers."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.urls import reverse


def moved(request: HttpRequest, rest: str = "", *, to: str) -> HttpResponse:
    """A 308 from a former address to the URL named ``to`` followed by ``rest``, query string included; 308
    keeps the method and the body, so a client's POST to the old path still arrives."""
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(reverse(to) + rest + (f"?{query}" if query else ""), preserve_request=True)
