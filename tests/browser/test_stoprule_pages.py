"""The stop rule's dashboard panel and the study planner page in Chromium (the page fixture also runs axe)."""

from __future__ import annotations

import pytest

from tests.factories import PASSWORD
from tests.factories import rated_campaign as make_rated_campaign

pytestmark = pytest.mark.browser


def test_settled_panel_and_planner(page, transactional_db, researcher, annotators, screenshots) -> None:
    campaign = make_rated_campaign("settle", annotators, n_sources=8)
    campaign.owners.add(researcher)
    page.goto("/login/?next=/research/campaigns/settle/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#dashboard[data-ready]")
    panel = page.locator("#settled-panel")
    assert "How settled is the ranking" in panel.text_content()
    assert page.locator("#settled-table tbody tr").count() == 2
    assert page.text_content("#settled-pairs") == "2"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    panel.screenshot(path=screenshots / "dashboard-settled-panel.png")
    # "Plan a study" opens the planner with this campaign as the pilot
    panel.get_by_role("link", name="Plan a study").click()
    page.wait_for_selector("#planner-form")
    assert page.input_value("#id_campaign") == "settle"
    page.fill("#id_sources", "2, 4, 8")
    page.fill("#id_raters", "1, 2")
    page.fill("#id_sims", "50")
    page.click("#planner-form button[type=submit]")
    page.wait_for_selector("#planner-result")
    assert page.locator("#planner-table tbody tr").count() == 6
    assert "sources ×" in page.text_content("#planner-recommended")
    page.screenshot(path=screenshots / "study-planner.png", full_page=True)
    # a bad size: the error sits next to its field
    page.fill("#id_raters", "1, 99")
    page.click("#planner-form button[type=submit]")
    page.wait_for_selector("#id_raters_error")
    assert "from 1 to 20" in page.text_content("#id_raters_error")


@pytest.mark.data
def test_settled_panel_on_simpeval_2022(page, transactional_db, researcher, screenshots, simpeval_data_dir) -> None:
    from annotation.models import Campaign
    from annotation.services.imports import campaign_import

    with (simpeval_data_dir / "simpeval" / "simpeval_2022.csv").open("rb") as handle:
        campaign_import(kind="simpeval", file=handle, filename="simpeval_2022.csv", campaign_slug="s22",
                        analyse=False)
    Campaign.objects.get(slug="s22").owners.add(researcher)
    page.goto("/login/?next=/research/campaigns/s22/")
    page.fill("#id_username", researcher.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#dashboard[data-ready]")
    assert page.locator("#settled-table tbody tr").count() == 5
    assert page.text_content("#settled-saved").strip() not in ("", "–")  # close pairs: a saving is measured
    page.locator("#settled-panel").screenshot(path=screenshots / "dashboard-settled-simpeval2022.png")
