"""A simulated crowd study in Chromium under `make run`'s embedded default (issue 44, "Must show"): the web server
is Daphne in a process of its own with the in-memory channel layer, so the researcher's dashboard is live only
through the event feed (no Redis). The researcher imports a SimpEval file with reference files from the import
page, opens a crowd link with one place, a batch of one source and the platform's completion URL (a stand-in
platform served by the test), and keeps the dashboard open at desktop size. A Prolific worker on a phone
arrives through the link, annotates their source through the three steps and is sent back to the platform
with the completion code, while the open dashboard shows their progress without a reload. A second worker
is told that the study is full before starting, and the dashboard counts them.

Screenshots: artifacts/screenshots/crowd-study/.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from annotation.models import Assignment, Campaign, CrowdWorker, Reference
from tests.browser import axe
from tests.browser.actions import login
from tests.browser.conftest import Server
from tests.browser.test_pages import WIDEST

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
PLATFORM = "https://platform.example/submissions/complete"
PLATFORM_PAGE = ('<!doctype html><html lang="en"><head><title>Platform</title></head>'
                 '<body><main><h1>Submission complete</h1></main></body></html>')

SOURCES = [
    "The old harbour, which was rebuilt after the storm of 1953, now holds a busy market every morning.",
    "Although the ferry was late because of the fog, the teacher still reached the island before noon.",
]
OUTPUTS = {  # system -> its output of each source
    "Trim": ["The old harbour now holds a busy market every morning.",
             "The ferry was late because of the fog. The teacher still reached the island before noon."],
    "Keep": ["The old harbour was rebuilt after the storm of 1953. It now holds a market every morning.",
             "The ferry was late. But the teacher reached the island before noon."],
}
REFERENCES = [  # two reference files, line-aligned with SOURCES; the second has two references a line
    ["The old harbour has a market every morning.", "The ferry was late, but the teacher got there before noon."],
    ["The harbour was rebuilt after a storm.\tIt has a busy market each morning.",
     "The teacher reached the island before noon.\tThe ferry was late because of fog."],
]


def study_files(folder: Path) -> tuple[Path, Path, list[Path]]:
    """A SimpEval CSV without ratings yet (a blank rating column), its source sentences and two reference files."""
    rows = ["original_id,original,generation,system,rating_1"]
    for i, source in enumerate(SOURCES):
        rows += [f'{i + 1},"{source}","{outputs[i]}",{system},' for system, outputs in OUTPUTS.items()]
    study = folder / "study.csv"
    study.write_text("\n".join(rows) + "\n")
    src = folder / "study.src"
    src.write_text("\n".join(SOURCES) + "\n")
    dsts = []
    for k, lines in enumerate(REFERENCES):
        dst = folder / f"study.simp.{k}"
        dst.write_text("\n".join(lines) + "\n")
        dsts.append(dst)
    return study, src, dsts


@contextmanager
def browsing(browser: Any, server: Server, viewport: dict[str, int]) -> Iterator[Any]:
    """A page in a context of its own (its own cookies), with axe-core on every document and no JavaScript error."""
    context = browser.new_context(viewport=viewport, base_url=server.url)
    context.set_default_timeout(30000)
    log = axe.install(context)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text)
            if msg.type == "error" and "Failed to load resource" not in msg.text else None)
    yield page
    if page.url.startswith("http") and page.evaluate("typeof window.__rrAxe === 'function'"):
        axe.check(page, "at the end of the test")
    context.close()
    assert not errors, f"JavaScript errors: {errors}"
    assert not log.violations, "axe-core, serious or critical:\n" + "\n".join(log.violations)


def submit_form(page: Any, form: str, fields: dict[str, str]) -> None:
    for name, value in fields.items():
        page.fill(f"{form} [name={name}]", value)
    with page.expect_navigation():
        page.click(f"{form} button[type=submit]")
    assert not page.locator(f"{form} .field-error").count(), page.locator(f"{form} .field-error").all_text_contents()


def text(page: Any, selector: str) -> str:
    return " ".join((page.locator(selector).text_content() or "").split())


def test_a_crowd_study_from_the_import_to_the_platform_with_the_dashboard_live(
    browser: Any, server: Server, researcher: Any, screenshots: Path, tmp_path: Path,
) -> None:
    shots = screenshots / "crowd-study"
    shots.mkdir(exist_ok=True)
    study, src, dsts = study_files(tmp_path)
    with browsing(browser, server, DESKTOP) as desk:
        # 1. The researcher imports the study with its reference files from the import page.
        login(desk, researcher.username, to="/research/import/", ready="#id_file")
        desk.fill("#id_name", "Crowd study")
        desk.fill("#id_slug", "crowd-study")
        desk.fill("#id_ratings_per_output", "1")
        desk.set_input_files("#id_file", str(study))
        desk.set_input_files("#id_reference_source", str(src))
        desk.set_input_files("#id_references", [str(p) for p in dsts])
        desk.screenshot(path=shots / "01-import-1366.png", full_page=True)
        desk.click("form.import-form button[type=submit]", timeout=120_000)
        desk.wait_for_selector("#people-title", timeout=120_000)
        assert desk.url.endswith("/research/campaigns/crowd-study/")
        assert "6 references" in text(desk, "main"), text(desk, "main")[:600]
        campaign = Campaign.objects.get(slug="crowd-study")
        assert Reference.objects.filter(source__campaign=campaign).count() == 6

        # 2. A crowd link with one place, a batch of one source and the platform's completion URL.
        with desk.expect_navigation():
            desk.click("#crowd-link-form button:has-text('Open a crowd link')")
        submit_form(desk, "#crowd-places-form", {"places": "1"})
        submit_form(desk, "#crowd-completion-form", {"crowd_completion_url": PLATFORM + "?cc={code}"})
        submit_form(desk, "#batch-form", {"batch_size": "1"})
        campaign.refresh_from_db()
        assert (campaign.crowd_places, campaign.batch_size) == (1, 1)
        link = text(desk, "#crowd-link")
        assert link.startswith(f"{server.url}/crowd/crowd-study/{campaign.crowd_token}/?PROLIFIC_PID=")

        # 3. The dashboard stays open; its pill says live (the feed, as no channel layer is shared).
        desk.goto("/research/campaigns/crowd-study/")
        desk.wait_for_selector('#live-status[data-state="live"]')
        assert text(desk, "#live-status") == "live"
        desk.wait_for_selector("#dashboard[data-ready]")
        assert text(desk, "#rating-count") == "0"
        # No shared ratings yet: alpha is "undefined", written across the 0.667 and 0.8 guide lines on a halo.
        undefined = desk.locator("#alpha-plot text.muted-text").first
        assert "undefined" in (undefined.text_content() or "")
        assert undefined.evaluate("(t) => getComputedStyle(t).paintOrder.startsWith('stroke') && "
                                  "getComputedStyle(t).stroke !== 'none'")
        desk.evaluate("window.__notReloaded = true")
        desk.screenshot(path=shots / "02-dashboard-before-1366.png", full_page=True)

        # 4. A Prolific worker on a phone: the link, the instructions, one source in three steps, the code.
        arrived: list[str] = []

        def platform(route: Any) -> None:
            arrived.append(route.request.url)
            route.fulfill(status=200, content_type="text/html", body=PLATFORM_PAGE)

        with browsing(browser, server, PHONE) as phone:
            phone.context.route("https://platform.example/**", platform)
            visit = link.replace("{{%PROLIFIC_PID%}}", "5f0aa1").replace("{{%STUDY_ID%}}", "st1").replace(
                "{{%SESSION_ID%}}", "se1")
            phone.goto(visit)
            assert "/instructions/" in phone.url
            phone.screenshot(path=shots / "03-instructions-390.png", full_page=True)
            worker = CrowdWorker.objects.get(worker_id="5f0aa1").user
            phone.click("button:has-text('Start annotating')")
            phone.wait_for_selector("[data-annotate-root][data-ready]")
            phone.check("[data-step-panel=categorise] [data-confirm-step=categorise]")
            assert "{#" not in text(phone, "main")  # a template comment spread over lines is printed
            phone.screenshot(path=shots / "04-step1-390.png", full_page=True)
            phone.click("[data-step-delta='1']")
            phone.wait_for_selector("[data-step-panel=edits]:not([hidden])")
            phone.screenshot(path=shots / "05-step2-390.png", full_page=True)
            phone.click("[data-step-delta='1']")
            units = phone.eval_on_selector_all("[data-rank-list] > .card[data-unit]",
                                               "els => els.map(e => e.dataset.unit)")
            assert len(units) == 2
            for i, unit in enumerate(units):
                phone.fill(f"#rate-{unit}", str(80 - 30 * i))
            phone.screenshot(path=shots / "06-step3-390.png", full_page=True)
            phone.click("[data-submit]")
            phone.wait_for_selector("[data-finished]:not([hidden])")
            assert "All 1 done" in text(phone, "[data-batch-progress]")
            phone.screenshot(path=shots / "07-submitted-390.png", full_page=True)

            # 5. Meanwhile the dashboard shows the worker's progress and the new ratings, without a reload.
            desk.wait_for_function(
                "([sel, want]) => document.querySelector(sel)?.textContent.replace(/\\s+/g, ' ').trim() === want",
                arg=[f'#annotator-progress li[data-annotator="{worker.pseudonym}"] .count', "1 / 1"])
            desk.wait_for_function("() => document.getElementById('rating-count').textContent === '2'")
            assert desk.evaluate("window.__notReloaded") is True
            desk.screenshot(path=shots / "08-dashboard-live-1366.png", full_page=True)

            phone.click("button:has-text('Next sentence')")
            phone.wait_for_url("**/campaigns/crowd-study/done/")
            code = campaign.completion_code
            assert phone.locator("#completion-code").input_value() == code
            assert "you go back to the platform in" in text(phone, "#redirect-note")
            go, stay = (phone.locator(sel).bounding_box() for sel in ("#completion-go", "#completion-stay"))
            assert go["y"] + go["height"] + 4 <= stay["y"] or go["x"] + go["width"] + 4 <= stay["x"], (go, stay)
            phone.screenshot(path=shots / "09-completion-390.png", full_page=True)
            phone.wait_for_url(f"{PLATFORM}?cc={quote(code, safe='')}", timeout=20_000)
            assert arrived == [f"{PLATFORM}?cc={quote(code, safe='')}"]
            phone.screenshot(path=shots / "10-platform-390.png")
        assert Assignment.objects.filter(annotator=worker, status="submitted").count() == 1

        # 6. A second worker finds the study full before starting, at both sizes.
        with browsing(browser, server, PHONE) as late:
            for size, pid in ((PHONE, "5f0bb2"), (DESKTOP, "5f0bb2")):
                late.set_viewport_size(size)
                late.goto(link.replace("{{%PROLIFIC_PID%}}", pid).replace("{{%STUDY_ID%}}", "st1").replace(
                    "{{%SESSION_ID%}}", "se2"))
                assert "there is no work left for you" in text(late, "h1")
                assert "study is full" in text(late, "main")
                late.screenshot(path=shots / f"11-study-full-{size['width']}.png", full_page=True)
        assert not CrowdWorker.objects.filter(worker_id="5f0bb2").exists()
        desk.reload()
        desk.wait_for_selector("#dashboard[data-ready]")
        assert "1 worker opened the link when nothing was left" in text(desk, "#crowd-turned-away")
        assert "Every place is taken (1)" in text(desk, "#crowd-room")
        desk.locator("#people").screenshot(path=shots / "12-dashboard-crowd-1366.png")
        desk.set_viewport_size(PHONE)
        desk.reload()
        desk.wait_for_selector("#dashboard[data-ready]")
        desk.screenshot(path=shots / "13-dashboard-390.png", full_page=True)
        assert desk.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), \
            desk.evaluate(WIDEST, PHONE["width"])
