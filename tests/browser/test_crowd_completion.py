"""The crowd worker's completion page in Chromium (issue 44, defect 4): the code is copied by its button, or
left selected where the clipboard is refused, and after a visible countdown the worker is sent to the
platform's completion URL with the code in it (here a stand-in platform served by the test)."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, CrowdWorker
from annotation.services.campaigns import campaign_update
from annotation.services.operations import crowd_open
from tests.browser.actions import login
from tests.factories import campaign_with_outputs, submit_assignment

pytestmark = pytest.mark.browser
PLATFORM = "https://platform.example/submissions/complete"
PLATFORM_PAGE = ('<!doctype html><html lang="en"><head><title>Platform</title></head>'
                 '<body><main><h1>Submission complete</h1></main></body></html>')


def test_the_completion_page_copies_the_code_and_sends_the_worker_back(page, live_server, transactional_db,
                                                                        researcher, screenshots) -> None:
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], n_sources=1, ratings_per_output=1))
    campaign_update(campaign=campaign, crowd_completion_url=PLATFORM + "?cc={code}")
    arrived: list[str] = []

    def platform(route) -> None:
        arrived.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body=PLATFORM_PAGE)

    page.context.route("https://platform.example/**", platform)
    page.goto(f"/crowd/{campaign.slug}/{campaign.crowd_token}/?PROLIFIC_PID=5f00aa&STUDY_ID=st&SESSION_ID=se")
    assert "/instructions/" in page.url
    worker = CrowdWorker.objects.get(worker_id="5f00aa").user
    submit_assignment(Assignment.objects.get(annotator=worker))

    page.goto(f"/campaigns/{campaign.slug}/done/")
    code = campaign.completion_code
    field = page.locator("#completion-code")
    assert field.input_value() == code
    note = page.locator("#redirect-note")
    assert "you go back to the platform in" in (note.text_content() or "")
    page.screenshot(path=screenshots / "crowd-completion-1280.png", full_page=True)
    # Without the clipboard permission the button leaves the code selected and says how to copy it.
    page.click("#copy-code")
    selected = page.evaluate(
        "() => { const f = document.getElementById('completion-code');"
        " return f.value.slice(f.selectionStart, f.selectionEnd); }")
    assert selected == code
    # the clipboard's refusal arrives as a rejected promise: the status is written after the click returns
    page.wait_for_function("() => document.getElementById('copy-status').textContent !== ''")
    status = page.locator("#copy-status").text_content() or ""
    assert "copied" in status or "Ctrl+C" in status, status
    # With it, the code is on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.click("#copy-code")
    page.wait_for_function("() => document.getElementById('copy-status').textContent === 'Code copied.'")
    assert page.evaluate("() => navigator.clipboard.readText()") == code
    # The countdown ends at the platform, the code in its URL.
    page.wait_for_url(f"{PLATFORM}?cc={code}", timeout=20_000)
    assert arrived == [f"{PLATFORM}?cc={code}"]


def test_stay_stops_the_countdown(page, live_server, transactional_db, researcher) -> None:
    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], n_sources=1, ratings_per_output=1))
    campaign_update(campaign=campaign, crowd_completion_url=PLATFORM + "?cc={code}")
    page.context.route("https://platform.example/**",
                       lambda route: route.fulfill(status=200, content_type="text/html", body=PLATFORM_PAGE))
    page.goto(f"/crowd/{campaign.slug}/{campaign.crowd_token}/?PROLIFIC_PID=5f00bb")
    submit_assignment(Assignment.objects.get(annotator=CrowdWorker.objects.get(worker_id="5f00bb").user))
    page.goto(f"/campaigns/{campaign.slug}/done/")
    page.click("#completion-stay")
    page.wait_for_timeout(11_000)  # past the countdown
    assert page.url.endswith(f"/campaigns/{campaign.slug}/done/")
    assert "you stay here" in (page.locator("#redirect-note").text_content() or "")
    page.click("#completion-go")
    page.wait_for_url(f"{PLATFORM}?cc={campaign.completion_code}")


def test_a_full_study_turns_the_worker_away_and_the_dashboard_says_so(page, live_server, transactional_db,
                                                                      researcher, annotators, screenshots) -> None:
    from annotation.services.assignments import campaign_add_annotators

    campaign = crowd_open(campaign=campaign_with_outputs(owners=[researcher], n_sources=2, ratings_per_output=1))
    campaign_add_annotators(campaign=campaign, annotators=annotators[:1])
    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/crowd/{campaign.slug}/{campaign.crowd_token}/?PROLIFIC_PID=late{width}")
        assert "there is no work left for you" in (page.locator("h1").text_content() or "")
        assert "return the study" in (page.locator("#crowd-return-advice").text_content() or "")
        page.screenshot(path=screenshots / f"crowd-full-{width}.png", full_page=True)
    assert not CrowdWorker.objects.exists()
    login(page, researcher.username, to=f"/research/campaigns/{campaign.slug}/", ready="#people")
    # At desktop size: the dashboard's phone layout is issue 44's defect 7, fixed apart.
    page.set_viewport_size({"width": 1366, "height": 768})
    page.goto(f"/research/campaigns/{campaign.slug}/")
    away = page.locator("#crowd-turned-away").text_content() or ""
    assert "2 workers opened the link when nothing was left" in away
    assert "no work" in (page.locator("#crowd-room").text_content() or "")
    page.locator("#people").screenshot(path=screenshots / "crowd-dashboard-1366.png")
