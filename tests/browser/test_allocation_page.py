"""The allocation-simulation page in Chromium: a researcher starts a simulation from the form, and its page
shows the summary table and the curves (the worker runs eagerly in tests, on commit of the request)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.actions import login
from tests.factories import rated_campaign

pytestmark = pytest.mark.browser


def test_a_researcher_runs_a_simulation_and_reads_its_result(
    page: Any, transactional_db: Any, researcher: Any, annotators: Any, screenshots: Any, settings: Any, tmp_path: Any,
) -> None:
    settings.VAR_DIR = tmp_path
    campaign = rated_campaign("study", annotators, n_sources=10)
    campaign.owners.add(researcher)
    login(page, researcher.username, to="/research/campaigns/study/", ready="#dashboard")
    page.click("text=Allocation simulations")
    page.wait_for_selector("[data-allocation-form]")
    page.check("input[name=policy][value=elimination]")
    page.fill("#id_seeds", "0")
    page.click("[data-allocation-form] button[type=submit]")
    assert "from 1 to" in page.locator("#id_seeds_error").text_content()
    page.fill("#id_seeds", "5")
    page.click("[data-allocation-form] button[type=submit]")
    page.wait_for_selector("[data-allocation-summary]")
    rows = page.locator("[data-allocation-summary] tbody tr")
    assert [rows.nth(i).get_attribute("data-policy") for i in range(rows.count())] == [
        "uniform", "adaptive", "elimination"]
    assert page.locator("[data-allocation-plot] svg").count() == 1
    assert page.locator("[data-allocation-status]").text_content() == "done"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=screenshots / "allocation-simulation.png", full_page=True)
