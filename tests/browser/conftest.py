"""End-to-end tests in Debian's Chromium through Playwright's sync API and pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
PASSWORD = "pw-for-tests-1"

# Playwright's sync API runs an event loop in this thread; Django's ORM must still be usable here.


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    reason = None
    if not Path(CHROMIUM).exists():
        reason = f"Chromium not found at {CHROMIUM} (install Debian's chromium package)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright Python package is not installed"
    for item in items:
        if Path(item.fspath).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """One Chromium for the browser tests only: Playwright's sync API runs an event loop in this
    thread (hence DJANGO_ALLOW_ASYNC_UNSAFE), which must be gone before other tests use async_to_sync."""
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def page(browser, live_server):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    context.set_default_timeout(30000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Network failures are expected (offline and 404 tests), and so are failed websockets: the live server
    # speaks HTTP only. Anything else logged as an error is a bug.
    expected = ("Failed to load resource", "WebSocket connection")
    page.on("console", lambda msg: errors.append(msg.text)
            if msg.type == "error" and not any(e in msg.text for e in expected) else None)
    in_flight: set[object] = set()
    page.on("request", lambda request: in_flight.add(request))
    page.on("requestfinished", lambda request: in_flight.discard(request))
    page.on("requestfailed", lambda request: in_flight.discard(request))
    yield page
    # Let the live server finish what the page still asked for (an autosave, say) before the test's
    # database access ends; otherwise the server thread's request_finished handler hits a closed database.
    for _ in range(50):
        if not in_flight:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(100)
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def campaign(transactional_db, demo_campaign, annotators):  # type: ignore[no-untyped-def]
    """The demo campaign with two annotators and (stand-in) automatic analysis."""
    from annotation.services.assignments import campaign_add_annotators
    from tests.browser.fake_analysis import analyse_source

    for source in demo_campaign.sources.all():
        analyse_source(source)
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    return demo_campaign


def login(page, username: str) -> None:  # type: ignore[no-untyped-def]
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text(\"My work\")")


def tab_to(page, selector: str, limit: int = 120, shift: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Press Tab until the focused element matches `selector` (keyboard-only navigation)."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press("Shift+Tab" if shift else "Tab")
    raise AssertionError(f"Tab never reached {selector}")


def drag(page, handle, target, *, above: bool = True) -> None:  # type: ignore[no-untyped-def]
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


def api_annotation(user, annotation_id: int) -> dict:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    response = client.get(f"/api/annotations/{annotation_id}/")
    assert response.status_code == 200, response.content
    return response.json()
