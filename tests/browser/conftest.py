"""End-to-end tests in Debian's Chromium through Playwright's sync API and pytest-django's live server."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.signals import request_finished, request_started
from django.db import connections

from tests.browser import axe

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"

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


class ServerRequests:
    """Counts the requests the live server (a thread of this process) is handling, through Django's signals."""

    def __init__(self) -> None:
        self._idle = threading.Condition()
        self._active = 0
        request_started.connect(self._started, weak=False)
        request_finished.connect(self._finished, weak=False)

    def _started(self, **kwargs: object) -> None:
        with self._idle:
            self._active += 1

    def _finished(self, **kwargs: object) -> None:
        with self._idle:
            self._active -= 1
            if self._active == 0:
                self._idle.notify_all()

    def busy(self) -> bool:
        with self._idle:
            return self._active > 0

    def wait_idle(self, seconds: float = 5.0) -> bool:
        """Block until no request is being handled (True), or ``seconds`` pass with one still running (False)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout=seconds)

    def close(self) -> None:
        request_started.disconnect(self._started)
        request_finished.disconnect(self._finished)


@pytest.fixture
def page(browser, live_server):
    server = ServerRequests()
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    context.set_default_timeout(30000)
    axe_log = axe.install(context)
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
    # The page as the test left it is checked too (and this waits for a load-time run still going); first,
    # so that what the page sends meanwhile (an autosave) is waited for below.
    if page.url.startswith("http") and page.evaluate("typeof window.__rrAxe === 'function'"):
        axe.check(page, "at the end of the test")
    # Leave the page here, so that what it sends as it goes (the annotation page's autosave on pagehide) is
    # sent now, and let the live server finish everything before the test's database access ends: a request
    # still running when the database is flushed deadlocks against the flush, or hits a closed database.
    try:
        if page.url.startswith("http"):
            page.goto("about:blank")
        # Playwright delivers the request events only while it is being called, so this polls the condition
        # through short waits (at most 5 s) rather than blocking on the server alone.
        for _ in range(100):
            if not in_flight and not server.busy():
                break
            page.wait_for_timeout(50)
        context.close()
        server.wait_idle()
    finally:
        server.close()
    assert not errors, f"JavaScript errors: {errors}"
    assert not axe_log.violations, "axe-core, serious or critical:\n" + "\n".join(axe_log.violations)


@pytest.fixture
def campaign(transactional_db, demo_campaign, annotators):
    """The demo campaign with two annotators and (stand-in) automatic analysis."""
    from annotation.services.assignments import campaign_add_annotators
    from tests.browser.fake_analysis import analyse_source

    for source in demo_campaign.sources.all():
        analyse_source(source)
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators[:2])
    return demo_campaign


# --- Daphne in a process of its own, as `make run` serves the project (websockets, the live event feed) ----


class Server:
    """Daphne serving the project in a child process (forked, so it has this test's settings and database)."""

    def __init__(self) -> None:
        self.process: Any = None
        self.port = 0

    def start(self) -> None:
        from channels.testing.live import make_application
        from daphne.testing import DaphneProcess

        connections.close_all()  # the child must not share this process's database connections
        self.process = DaphneProcess("127.0.0.1", partial(make_application, static_wrapper=ASGIStaticFilesHandler),
                                     port=self.port or None)
        self.process.start()
        while not self.process.ready.wait(timeout=1):
            if not self.process.is_alive():
                raise RuntimeError("Daphne did not start")
        self.port = self.process.port.value

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(10)
        self.process = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def embedded(settings: Any) -> Iterator[Any]:
    """`make run`'s settings: the in-memory channel layer (one per process) and, by default then, the feed."""
    from channels.layers import channel_layers

    connection: Any = connections["default"]
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("the server process needs a database on disk or a server (PostgreSQL)")
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.LIVE_EVENTS_FEED = True
    settings.LIVE_EVENTS_POLL_SECONDS = 0.2
    settings.ALLOWED_HOSTS = ["*"]
    channel_layers.backends.pop("default", None)
    yield settings
    channel_layers.backends.pop("default", None)


@pytest.fixture
def server(embedded: Any, transactional_db: None) -> Iterator[Server]:
    served = Server()
    served.start()
    yield served
    served.stop()
