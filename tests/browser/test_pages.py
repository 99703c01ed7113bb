from __future__ import annotations

import pytest

from annotation.models import Output, RatingUnit, Source, System
from tests.browser.actions import login
from tests.factories import tutorial_public_id

pytestmark = pytest.mark.browser


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_home_instructions_and_annotation_at_tablet_width(page, campaign, annotators, screenshots):
    page.set_viewport_size({"width": 800, "height": 1100})
    login(page, annotators[0].username)
    assert "0 / " in page.text_content("[data-testid=progress-demo]")
    page.screenshot(path=screenshots / "home.png")
    page.click("text=Instructions")
    page.wait_for_selector("h1:has-text('Instructions')")
    assert no_horizontal_scroll(page)
    page.screenshot(path=screenshots / "instructions.png", full_page=True)
    page.click("text=Start annotating")
    page.wait_for_selector("[data-annotate-root][data-ready]")
    assert no_horizontal_scroll(page)
    page.screenshot(path=screenshots / "tablet-step1.png")
    page.click("[data-goto-step=rate]")
    assert no_horizontal_scroll(page)
    page.screenshot(path=screenshots / "tablet-step3.png")
    page.click("[data-submit]")
    error = page.locator("[data-error]")
    assert error.is_visible() and "not rated yet" in error.text_content()


def test_tutorial_is_checked_before_work_starts(page, campaign, annotators, screenshots):
    source = Source.objects.create(campaign=campaign, external_id="tut", text="The big brown dog barked loudly.",
                                   is_tutorial=True, tutorial_key={"ranking": ["TGood", "TBad"]})
    for name, text in (("TGood", "The dog barked."), ("TBad", "Dog the brown loudly big.")):
        unit = RatingUnit.objects.create(source=source, text=text, text_key=name, auto_category="deletion")
        Output.objects.create(source=source, system=System.objects.create(campaign=campaign, name=name),
                              unit=unit, text=text)
    login(page, annotators[0].username)
    page.click("[data-testid=continue-demo]")
    page.wait_for_selector("text=Complete the tutorial to start annotating.")
    page.click("text=Practice sentence 1")
    page.wait_for_selector("[data-annotate-root][data-ready]")
    page.click("[data-goto-step=rate]")
    ids = [str(x) for x in page.eval_on_selector_all("[data-rank-list] > .card", "els => els.map(e => e.dataset.unit)")]
    good = tutorial_public_id(annotators[0], source, RatingUnit.objects.get(source=source, text_key="TGood").pk)
    bad_first = [u for u in ids if u != good] + [good]
    # Put the bad output on top and submit: the check fails with an explanation.
    if ids[0] == good:
        page.focus(f'[data-rank-list] .card[data-unit="{good}"]')
        page.keyboard.press("Shift+ArrowDown")
    for unit_id in bad_first:
        page.fill(f"#rate-{unit_id}", "80" if unit_id == good else "20")
    # Steps 1 and 2 were never checked: submitting asks to check or confirm them.
    page.click("[data-submit]")
    assert "not opened step 2" in page.text_content("[data-error]")
    page.check("[data-confirm-step=edits]")
    page.check("[data-review] [data-confirm-step=categorise]")
    assert page.is_hidden("[data-error]")
    page.click("[data-submit]")
    page.wait_for_selector("[data-tutorial-result] h2:has-text('Not quite')")
    page.screenshot(path=screenshots / "tutorial-feedback.png")
    page.focus(f'[data-rank-list] .card[data-unit="{good}"]')
    page.keyboard.press("Shift+ArrowUp")
    page.click("[data-submit]")
    page.wait_for_selector("[data-tutorial-result] h2:has-text('Well done')")
    page.click("[data-tutorial-result] a")
    page.click("text=Start annotating")
    page.wait_for_selector("[data-annotate-root][data-ready]")
    assert "/annotate/" in page.url
