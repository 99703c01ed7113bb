"""What a person does in the browser, as functions of a Playwright page: log in, tab, drag; and one API read."""

from __future__ import annotations

from typing import Any

from tests.factories import PASSWORD


def login(page: Any, username: str, *, to: str = "", ready: str | None = "h1:has-text(\"My work\")") -> None:
    """Log in from the login page, sent on to ``to`` (the user's home when empty); then wait for ``ready``
    (None: do not wait)."""
    page.goto(f"/login/?next={to}" if to else "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    if ready is not None:
        page.wait_for_selector(ready)


def tab_to(page: Any, selector: str, limit: int = 120, shift: bool = False) -> None:
    """Press Tab until the focused element matches `selector` (keyboard-only navigation)."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Shift+Tab" if shift else "Tab")
    raise AssertionError(f"Tab never reached {selector}")


def drag(page: Any, handle: Any, target: Any, *, above: bool = True) -> None:
    """Drag `handle` with the mouse to just above (or below) `target`, scrolling with the wheel on the way."""
    handle.scroll_into_view_if_needed()
    h = handle.bounding_box()
    page.mouse.move(h["x"] + h["width"] / 2, h["y"] + h["height"] / 2)
    page.mouse.down()
    page.mouse.move(h["x"] + 40, 400, steps=5)
    height = page.viewport_size["height"]
    for _ in range(30):
        t = target.bounding_box()
        if 120 < t["y"] < height - 120:
            break
        page.mouse.wheel(0, 250 if t["y"] >= height - 120 else -250)
        page.mouse.move(h["x"] + 40, 401, steps=1)
    t = target.bounding_box()
    y = t["y"] + (4 if above else t["height"] - 4)
    page.mouse.move(t["x"] + 30, y, steps=8)
    page.mouse.move(t["x"] + 32, y + (1 if above else -1), steps=2)
    page.mouse.up()


def api_annotation(user: Any, annotation_id: int) -> dict[str, Any]:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    response = client.get(f"/api/annotations/{annotation_id}/")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def open_next(page: Any) -> int:
    """Open the next assigned sentence from the home page; its assignment id."""
    page.click("[data-testid=continue-demo]")
    page.wait_for_selector("[data-annotate-root][data-ready]")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def card_ids(page: Any, selector: str) -> list[str]:
    """The rating units of the cards in ``selector``, in their order on the page."""
    return [str(x) for x in page.eval_on_selector_all(f"{selector} > .card[data-unit]",
                                                       "els => els.map(e => e.dataset.unit)")]
