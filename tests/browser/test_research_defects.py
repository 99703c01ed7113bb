"""Issue 14, defect 10, in Chromium: the research dashboard and the LENS pages (every page also passes axe:
conftest.py's page fixture)."""

from __future__ import annotations

import pytest

from metrics.models import LearnedVersion, TrainingEvent
from tests.browser.actions import login
from tests.factories import LearnedVersionFactory

pytestmark = pytest.mark.browser


def test_dashboard_before_any_rating(page, campaign, researcher, screenshots):
    login(page, researcher.username, to="/research/campaigns/demo/", ready=None)
    page.wait_for_selector("#dashboard[data-ready]")
    # Named progress bars (axe: aria-progressbar-name), one per annotator.
    bars = page.locator("#annotator-progress [role=progressbar]")
    assert bars.count() == 2
    assert all(bars.nth(i).get_attribute("aria-label").startswith("Sources submitted by") for i in range(2))
    # An empty leaderboard says why it is empty.
    empty = page.locator("#leaderboard-table [data-empty=leaderboard]")
    assert empty.is_visible() and "No ratings yet" in empty.text_content()
    assert page.text_content("#rating-count").strip() == "0"
    page.screenshot(path=screenshots / "defect10-dashboard-empty.png", full_page=True)
    # The research header has no learned-metrics link for a researcher (training is for admins) ...
    assert page.locator("nav[aria-label=Main] >> text=Learned metrics").count() == 0


def test_lens_pages_link_both_ways_and_the_live_chart_fills_without_the_websocket(
    page, transactional_db, admin_user, screenshots,
):
    version = LearnedVersionFactory.create(status=LearnedVersion.Status.RUNNING, started_by=admin_user)
    TrainingEvent.objects.create(version=version, kind="step", epoch=1, step=10, total_steps=100, loss=0.9)
    login(page, admin_user.username, to="/research/", ready=None)
    page.wait_for_selector("h1")
    # Research header -> learned metrics; their header -> campaigns.
    page.click("nav[aria-label=Main] >> text=Learned metrics")
    page.wait_for_selector("h1:has-text('Learned metrics')")
    chart = page.locator(f'[data-learned-chart][data-version="{version.pk}"]')
    page.wait_for_function(f"document.querySelector('[data-learned-chart][data-version=\"{version.pk}\"]')"
                           ".dataset.events === '1'")
    # The worker stores an event; no websocket message reaches this page (the live server speaks HTTP
    # only, like `make run`'s in-memory channel layer for a separate worker): the chart still fills.
    TrainingEvent.objects.create(version=version, kind="step", epoch=1, step=20, total_steps=100, loss=0.7)
    page.wait_for_function(f"document.querySelector('[data-learned-chart][data-version=\"{version.pk}\"]')"
                           ".dataset.events === '2'", timeout=15000)
    assert "step 20/100" in chart.locator("[data-learned-last]").text_content()
    version.status = LearnedVersion.Status.SUCCEEDED
    version.save(update_fields=["status"])
    page.screenshot(path=screenshots / "defect10-lens-live.png", full_page=True)
    page.click("nav[aria-label=Main] >> text=Campaigns")
    page.wait_for_url("**/research/")


# --- Issue 44 -------------------------------------------------------------------------------------------


def test_dashboard_form_error_is_next_to_the_field_focused_and_keeps_the_values(
    page, campaign, researcher, screenshots,
):
    """Defect 5: an unknown username and a share of 2 come back next to their field, focused and in view."""
    login(page, researcher.username, to="/research/campaigns/demo/", ready=None)
    page.wait_for_selector("#dashboard[data-ready]")
    page.fill("#add-usernames", "alice")
    page.click("#people-add button[type=submit]")
    page.wait_for_selector("#add-usernames_error")
    error = page.locator("#add-usernames_error")
    assert "alice" in error.text_content() and error.locator("a[href='#account-form']").count() == 1
    assert page.evaluate("document.activeElement.id") == "add-usernames"
    assert page.input_value("#add-usernames") == "alice"
    field = page.locator("#add-usernames")
    assert field.get_attribute("aria-invalid") == "true"
    assert "add-usernames_error" in field.get_attribute("aria-describedby")
    # In view: the field and its error, not a heading far from the message.
    viewport = page.viewport_size["height"]
    for box in (field.bounding_box(), error.bounding_box()):
        assert box["y"] >= 0 and box["y"] + box["height"] <= viewport
    page.screenshot(path=screenshots / "issue44-d5-unknown-username.png")

    page.goto("/research/campaigns/demo/")
    page.fill("#attention-rate", "2")
    page.fill("#repeat-share", "0.3")
    page.click("#quality-setup button[type=submit]")
    page.wait_for_selector("#attention-rate_error")
    assert page.evaluate("document.activeElement.id") == "attention-rate"
    assert page.input_value("#attention-rate") == "2" and page.input_value("#repeat-share") == "0.3"
    box = page.locator("#attention-rate_error").bounding_box()
    assert 0 <= box["y"] <= page.viewport_size["height"] - box["height"]
    page.screenshot(path=screenshots / "issue44-d5-quality-share.png")


def test_remove_is_confirmed_on_a_page_that_says_what_happens(page, campaign, researcher, annotators, screenshots):
    """Defect 12: Remove leads to a confirmation (no script needed), whose Cancel changes nothing."""
    from annotation.models import Assignment

    unfinished = Assignment.objects.filter(annotator=annotators[0], status__in=("assigned", "in_progress")).count()
    login(page, researcher.username, to="/research/campaigns/demo/", ready=None)
    page.wait_for_selector("#dashboard[data-ready]")
    page.click(f"#people-table button[aria-label='Remove {annotators[0].username}']")
    page.wait_for_selector("#confirm-title")
    assert page.evaluate("document.activeElement.id") == "confirm-title"
    assert f"{unfinished} unfinished source(s)" in page.text_content("#confirm-consequences")
    page.screenshot(path=screenshots / "issue44-d12-remove-confirm.png")
    page.click("#confirm-form a:has-text('Cancel')")
    page.wait_for_selector("#dashboard[data-ready]")
    assert campaign.memberships.get(annotator=annotators[0]).active
    page.click(f"#people-table button[aria-label='Remove {annotators[0].username}']")
    page.click(f"#confirm-form button:has-text('Remove {annotators[0].username}')")
    page.wait_for_selector(f"text=Removed {annotators[0].username}; {unfinished} unfinished source(s)")
    assert page.locator(f"text=Removed {annotators[0].username};").count() == 1  # defect 11: once
    assert not campaign.memberships.get(annotator=annotators[0]).active


def test_the_loss_line_is_drawn_from_epoch_events_too(page, transactional_db, admin_user, tmp_path, screenshots):
    """Defect 10: a run too short for step events (progress_every steps) still shows its loss line."""
    checkpoint = tmp_path / "best"
    checkpoint.mkdir()
    version = LearnedVersionFactory.create(checkpoint_path=str(checkpoint), note="short run", started_by=admin_user)
    for epoch, (loss, tau) in enumerate(((0.9, 0.1), (0.6, 0.3), (0.4, 0.35)), 1):
        TrainingEvent.objects.create(version=version, kind="epoch", epoch=epoch, step=3 * epoch, total_steps=9,
                                     loss=loss, heldout_tau=tau)
    login(page, admin_user.username, to=f"/learned/{version.pk}/", ready=None)
    page.wait_for_selector("[data-learned-chart][data-events='3']")
    chart = page.locator("[data-learned-chart]")
    assert chart.get_attribute("data-loss-points") == "3"
    # The loss colour is on the canvas (not only the τ line's).
    blue = page.evaluate("""() => {
        const c = document.querySelector('[data-learned-chart] canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 36 && d[i + 1] === 86 && d[i + 2] === 199) n++;
        return n;
    }""")
    assert blue > 50
    assert page.text_content("#version-note") == "short run"
    page.screenshot(path=screenshots / "issue44-d10-loss-line.png", full_page=True)


def test_the_testbed_run_page_follows_the_run_without_a_websocket(page, transactional_db, researcher):
    """The test server has no websocket (as behind some proxies): the run page rereads its progress instead of
    waiting for events that never come, and reloads with the result once the run has ended."""
    from core.services import background_job_create, background_job_fail, background_job_progress, background_job_start

    job = background_job_create(kind="testbed", total=0, owner=researcher)
    login(page, researcher.username, to=f"/research/testbed/{job.pk}/", ready=None)
    page.wait_for_selector('[data-testbed-progress][data-socket="reconnecting"]')
    page.evaluate("window.__notReloaded = true")
    background_job_start(job_id=job.pk, total=40)
    background_job_progress(job_id=job.pk, done=12)
    page.wait_for_function("() => document.querySelector('[data-testbed-count]').textContent === '12 / 40'")
    assert page.locator("[data-testbed-status]").text_content() == "running"
    assert page.evaluate("window.__notReloaded") is True
    background_job_fail(job.pk, "ValueError: the corpus is empty")
    page.wait_for_selector("text=ValueError: the corpus is empty")
    assert page.locator("[data-testbed-status]").text_content() == "failed"
