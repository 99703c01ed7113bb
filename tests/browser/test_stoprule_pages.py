"""The stop rule's dashboard panel and the study planner page in Chromium (the page fixture also runs axe)."""

from __future__ import annotations

import pytest

from tests.browser.actions import login
from tests.factories import rated_campaign as make_rated_campaign

pytestmark = pytest.mark.browser


def test_settled_panel_and_planner(page, transactional_db, researcher, annotators, screenshots) -> None:
    campaign = make_rated_campaign("settle", annotators, n_sources=8)
    campaign.owners.add(researcher)
    login(page, researcher.username, to="/research/campaigns/settle/", ready="#dashboard[data-ready]")
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
    login(page, researcher.username, to="/research/campaigns/s22/", ready="#dashboard[data-ready]")
    assert page.locator("#settled-table tbody tr").count() == 5
    assert page.text_content("#settled-saved").strip() not in ("", "–")  # close pairs: a saving is measured
    page.locator("#settled-panel").screenshot(path=screenshots / "dashboard-settled-simpeval2022.png")


def test_new_settledness_figures_are_announced_to_a_screen_reader(page, transactional_db, researcher,
                                                                  annotators, screenshots) -> None:
    """The panel is replaced whole when a submit makes the dashboard reread it; a polite status line outside
    it says the new figures, and only when they change."""
    from concurrent.futures import ThreadPoolExecutor

    from django.core.cache import cache

    from annotation.models import OutputJudgement

    campaign = make_rated_campaign("settle", annotators, n_sources=8)
    campaign.owners.add(researcher)
    login(page, researcher.username, to="/research/campaigns/settle/", ready="#dashboard[data-ready]")
    announce = page.locator("#settled-announce")
    assert announce.get_attribute("aria-live") == "polite" and announce.get_attribute("role") == "status"
    reread = """() => import("/static/frontend/research/live.js").then((m) => m.refreshRegions(["settled"]))"""
    page.evaluate(reread)  # the same figures: nothing to say
    page.wait_for_timeout(300)
    assert announce.text_content() == ""

    def tie_the_top_two() -> None:  # trim now rated like copy-ref everywhere: their order is a coin toss
        for judgement in OutputJudgement.objects.filter(annotation__source__campaign=campaign,
                                                        output__system__name="trim"):
            top = OutputJudgement.objects.get(annotation=judgement.annotation, output__system__name="copy-ref")
            OutputJudgement.objects.filter(pk=judgement.pk).update(rating=top.rating)
        cache.clear()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(tie_the_top_two).result()
    page.evaluate(reread)
    page.wait_for_function("document.getElementById('settled-announce').textContent !== ''")
    said = announce.text_content()
    assert said.startswith("Ranking: ") and "of 2 adjacent pairs settled" in said and "2 of 2" not in said
    # the panel and the allocation card at a phone's width: nothing wider than the page
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.locator("#settled-panel").screenshot(path=screenshots / "phone-settled-panel.png")
    page.locator("#allocation-card").screenshot(path=screenshots / "phone-allocation-card.png")


PHONE = {"width": 375, "height": 812}
# Every control of the planner's form whose box reaches past the viewport's right edge (or starts left of it).
OUTSIDE_VIEWPORT = """() => [...document.querySelectorAll("#planner-form :is(select, input, button)")]
  .map((el) => [el.id || el.name || el.textContent, el.getBoundingClientRect()])
  .filter(([, box]) => box.left < 0 || box.right > document.documentElement.clientWidth)
  .map(([name, box]) => `${name}: ${Math.round(box.left)}..${Math.round(box.right)}`)"""

# The right edge of a dropdown at its natural width (its longest choice's), without the page's max-width.
NATURAL_RIGHT = """(selector) => {
  const el = document.querySelector(selector);
  const saved = el.getAttribute("style");
  el.style.maxWidth = "none"; el.style.width = "max-content"; el.style.alignSelf = "flex-start";
  const right = el.getBoundingClientRect().right;
  if (saved === null) el.removeAttribute("style"); else el.setAttribute("style", saved);
  return right;
}"""


def test_the_planners_dropdowns_fit_a_phone(page, transactional_db, researcher, screenshots) -> None:
    """At 375 px the target dropdown (its longest choice wider than the screen) and the pilot dropdowns lie
    within the viewport, and nothing makes the page scroll sideways."""
    page.set_viewport_size(PHONE)
    login(page, researcher.username, to="/research/planner/", ready="#planner-form")
    target = page.locator("#id_target").bounding_box()
    assert target is not None and target["x"] >= 0 and target["x"] + target["width"] <= PHONE["width"], target
    # Unclamped, a dropdown is as wide as its longest choice: that width fits too, so no choice is cut off.
    assert page.evaluate(NATURAL_RIGHT, "#id_target") <= page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate(OUTSIDE_VIEWPORT) == []
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.select_option("#id_target", "alpha")  # the longest choice, shown in the closed dropdown
    assert page.evaluate(OUTSIDE_VIEWPORT) == []
    page.locator("#planner-form").screenshot(path=screenshots / "phone-planner-form.png")
