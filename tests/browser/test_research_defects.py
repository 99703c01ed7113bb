"""Issue 14, defect 10, in Chromium: the research dashboard and the LENS pages (every page also passes axe:
conftest.py's page fixture)."""

from __future__ import annotations

import pytest

from metrics.models import LearnedVersion, TrainingEvent
from tests.factories import PASSWORD, LearnedVersionFactory

pytestmark = pytest.mark.browser


def log_in(page, user, to: str) -> None:
    page.goto(f"/login/?next={to}")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")


def test_dashboard_before_any_rating(page, campaign, researcher, screenshots):
    log_in(page, researcher, "/research/campaigns/demo/")
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
    log_in(page, admin_user, "/research/")
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
