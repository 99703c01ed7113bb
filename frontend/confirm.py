"""The confirmation step of the pages' destructive actions (remove, exclude, promote, roll back).

Progressive enhancement without a script: the button posts the action as before; a POST without
``confirm=1`` renders a page that says exactly what will happen and posts the same fields again with
``confirm=1``. The REST API is unchanged (it has no confirmation step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def confirmed(request: HttpRequest) -> bool:
    """Whether this POST is the confirmed one (``confirm=1``)."""
    return request.POST.get("confirm") == "1"


@dataclass(frozen=True)
class Confirmation:
    title: str
    consequences: list[str]
    button: str
    cancel: str
    """Where Cancel goes (the page the action started from)."""
    warning: str = ""
    checkbox: dict[str, str] | None = None
    """``{"name", "label"}``: a box that must be ticked to go on (sent with the confirmed POST)."""
    stylesheet: str = "frontend/research/research.css"
    keep: tuple[str, ...] = field(default=())
    """The submitted fields to post again (all but the CSRF token and ``confirm`` when empty)."""


def confirm_page(request: HttpRequest, confirmation: Confirmation) -> HttpResponse:
    """The confirmation page of ``request`` (a POST not yet confirmed): its form posts the same fields to the
    same address with ``confirm=1``."""
    skip = {"csrfmiddlewaretoken", "confirm"}
    if confirmation.checkbox:
        skip.add(confirmation.checkbox["name"])
    fields = [(name, value) for name, values in request.POST.lists() for value in values
              if name not in skip and (not confirmation.keep or name in confirmation.keep)]
    return render(request, "frontend/confirm.html", {"confirm": {
        **confirmation.__dict__, "fields": fields, "action": request.get_full_path(),
    }})
