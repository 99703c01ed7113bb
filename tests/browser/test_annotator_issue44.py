"""The annotator-page defects of issue 44, each met the way a new annotator meets it in Chromium."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Assignment
from tests.browser.actions import card_ids, login, open_next

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}



def check_step_one_by_a_move(page) -> None:
    """Move the first output of step 1 to another group with the keyboard (which checks step 1)."""
    page.locator("[data-step-panel=categorise] .card[data-unit]").first.focus()
    group = page.evaluate("document.activeElement.closest('[data-group]').dataset.group")
    page.keyboard.press("s" if group != "split" else "d")


def saved(page) -> None:
    page.wait_for_function("document.querySelector('[data-save-status]').textContent === 'All changes saved'")


def test_an_out_of_range_rating_blocks_submit(page, campaign, annotators, screenshots):
    """Defect 1: 150 turned the field red, but the earlier 50 was submitted without a word and the count said
    "8 of 8 rated". Now the output counts as not rated, the field says why, and submitting is refused."""
    login(page, annotators[0].username)
    assignment_id = open_next(page)
    check_step_one_by_a_move(page)
    page.click("[data-goto-step=edits]")
    page.click("[data-goto-step=rate]")
    ranking = card_ids(page, "[data-rank-list]")
    for unit in ranking:
        page.fill(f"#rate-{unit}", "50")
    n = len(ranking)
    counter = page.locator("[data-rated-count]")
    assert counter.text_content() == f"{n} of {n} rated"
    # A valid field names no description: its hidden error message would be read out all the same.
    assert page.locator("[data-rank-list] input.rate-number[aria-describedby]").count() == 0
    wrong = ranking[2]
    page.fill(f"#rate-{wrong}", "150")
    card = page.locator(f'[data-rank-list] .card[data-unit="{wrong}"]')
    assert counter.text_content() == f"{n - 1} of {n} rated · 1 not a valid rating"
    message = card.locator(".rate-error")
    assert message.is_visible() and message.text_content() == "Enter a number from 0 to 100"
    assert card.locator(".not-rated").is_hidden()  # one message, the one that says why
    field = page.locator(f"#rate-{wrong}")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.get_attribute("aria-describedby") == message.get_attribute("id")
    assert ", rating not valid:" in card.get_attribute("aria-label")
    # The stale 50 is gone from the saved draft too.
    saved(page)
    draft = Annotation.objects.get(assignment_id=assignment_id, status="draft").draft
    assert wrong not in draft["ratings"] and len(draft["ratings"]) == n - 1
    page.click("[data-submit]")
    error = page.locator("[data-error]")
    assert error.is_visible() and "1 rating is not a number from 0 to 100 (rank 3)" in error.text_content()
    assert page.evaluate("document.activeElement.id") == f"rate-{wrong}"
    page.screenshot(path=screenshots / "issue44-1-invalid-rating.png")
    assert Assignment.objects.get(pk=assignment_id).status != "submitted"
    assert not Annotation.objects.filter(assignment_id=assignment_id, status="submitted").exists()
    # Corrected, the message goes and the value submitted is the one shown.
    page.fill(f"#rate-{wrong}", "70")
    assert error.is_hidden() and message.is_hidden() and field.get_attribute("aria-invalid") is None
    assert field.get_attribute("aria-describedby") is None
    assert counter.text_content() == f"{n} of {n} rated"
    page.click("[data-submit]")
    page.wait_for_selector("[data-finished]:not([hidden])")
    annotation = Annotation.objects.get(assignment_id=assignment_id, status="submitted")
    ratings = dict(annotation.judgements.values_list("output__unit_id", "rating"))  # one per unit
    assert sorted(ratings.values()) == sorted([50.0] * (n - 1) + [70.0])
    # The submitted page says how far the annotator is.
    progress = page.text_content("[data-batch-progress]")
    assert " done" in progress and (" left." in progress or "complete" in progress)


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1366x768", "390x844"])
def test_next_step_heading_is_below_the_sticky_box(page, campaign, annotators, screenshots, size):
    """Defect 8: after "Next step →" the focused step heading sat under the sticky complex sentence (y=35 under
    an 89 px box). It is now scrolled to just below the box."""
    page.set_viewport_size(size)
    login(page, annotators[0].username)
    open_next(page)
    for step in ("edits", "rate"):
        page.locator("button[data-step-delta='1']").scroll_into_view_if_needed()
        page.click("button[data-step-delta='1']")
        heading = page.locator(f"[data-step-panel={step}] h2")
        page.wait_for_function("(id) => document.activeElement && document.activeElement.id === id",
                               arg=heading.get_attribute("id"))
        page.wait_for_timeout(100)
        box = page.locator("[data-source-box]").bounding_box()
        top = heading.bounding_box()["y"]
        print(f"{size['width']}x{size['height']} {step}: box {box['y']:.0f}..{box['y'] + box['height']:.0f}, "
              f"heading at y={top:.0f}, scrollY={page.evaluate('scrollY')}")
        assert top >= box["y"] + box["height"], (step, top, box)
        assert top < size["height"] / 2, (step, top)  # in view, near the top
    page.screenshot(path=screenshots / f"issue44-8-step3-heading-{size['width']}.png")


def test_fix_dialog_asks_before_discarding_and_refuses_nonsense(page, campaign, annotators, screenshots):
    """Defect 9: Esc and Cancel threw changes away without asking; a second deletion of a deleted word and a
    split before the first word were accepted."""
    login(page, annotators[0].username)
    open_next(page)
    page.click("[data-goto-step=edits]")
    first = card_ids(page, "[data-edits-list]")[0]
    page.click(f'button[data-fix="{first}"]')
    dialog = page.locator("dialog[data-fix-dialog]")
    message = dialog.locator("[data-fix-message]")
    ask = dialog.locator("[data-fix-discard]")
    # Nothing changed: Esc closes at once.
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    page.click(f'button[data-fix="{first}"]')
    tokens = dialog.locator("[data-tokens=output] .tok")
    source = dialog.locator("[data-tokens=source] .tok")
    # A split before the first word is refused (there is no sentence before it).
    splits = dialog.locator("[data-edit-list] .edit-desc:has-text('Split')").count()
    tokens.nth(0).click()
    dialog.locator("[data-act=add-split]").click()
    assert "Not added: a split goes before a word inside the output" in message.text_content()
    assert dialog.locator("[data-edit-list] .edit-desc:has-text('Split')").count() == splits
    # A word already deleted cannot be deleted again (no second caret).
    last = source.count() - 1
    source.nth(last).click()
    dialog.locator("[data-act=add-del]").click()
    carets = dialog.locator("[data-tokens=output] .mk-del").count()
    source.nth(last).click()
    tokens.nth(1).click()
    dialog.locator("[data-act=add-del]").click()
    assert "is already marked deleted" in message.text_content()
    assert dialog.locator("[data-tokens=output] .mk-del").count() == carets
    # A change for sure: a split before the last word of the output.
    items = dialog.locator("[data-edit-list] .edit-item").count()
    tokens.nth(tokens.count() - 1).click()
    dialog.locator("[data-act=add-split]").click()
    assert message.text_content() == "Split marker added."
    assert dialog.locator("[data-edit-list] .edit-item").count() == items + 1
    # Esc with a change: asks; Esc again keeps editing; Cancel asks too; "Discard changes" closes unsaved.
    page.keyboard.press("Escape")
    assert dialog.is_visible() and ask.is_visible()
    assert page.evaluate("document.activeElement.dataset.act") == "keep"
    # ... where it can be seen and pressed (not scrolled away behind the sticky row of Cancel and Save).
    assert page.evaluate("""() => { const b = document.querySelector('[data-act=keep]').getBoundingClientRect();
        return document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2)?.dataset.act; }""") == "keep"
    page.screenshot(path=screenshots / "issue44-9-discard.png")
    page.keyboard.press("Escape")
    assert dialog.is_visible() and ask.is_hidden()
    dialog.locator("[data-act=cancel]").click()
    assert ask.is_visible()
    dialog.locator("[data-act=discard]").click()
    assert not dialog.is_visible()
    assert page.locator(f'[data-edits-list] .card[data-unit="{first}"].corrected').count() == 0


def test_step_one_counts_only_when_checked(page, campaign, annotators):
    """Defect 13: opening the page counted as reviewing step 1. Now it takes a move or the "looks right" box."""
    login(page, annotators[0].username)
    open_next(page)
    review = "JSON.stringify(window.__rrSteps())"
    page.evaluate("""() => { window.__rrSteps = () => {
        const key = document.querySelector('[data-annotate-root]').dataset.storageKey;
        return JSON.parse(localStorage.getItem(key) || '{}').confirmed || []; }; }""")
    page.click("[data-goto-step=edits]")
    page.click("[data-goto-step=rate]")
    for unit in card_ids(page, "[data-rank-list]"):
        page.fill(f"#rate-{unit}", "40")
    page.click("[data-submit]")
    error = page.locator("[data-error]")
    assert error.is_visible() and "Step 1 (Categorise) is not checked yet" in error.text_content()
    assert "step 2" not in error.text_content()
    assert page.is_visible("[data-review-step=categorise]")
    # Ticking "The groups look right" in step 1 is checking it; taking the tick back undoes that.
    page.click("[data-goto-step=categorise]")
    looks_right = page.locator("[data-step-panel=categorise] [data-confirm-step=categorise]")
    looks_right.check()
    assert error.is_hidden() and page.evaluate(review) == '["categorise"]'
    looks_right.uncheck()
    page.click("[data-goto-step=rate]")
    assert page.is_visible("[data-review-step=categorise]")
    # Moving an output in step 1 is checking it too.
    page.click("[data-goto-step=categorise]")
    check_step_one_by_a_move(page)
    assert page.evaluate(review) == "[]"  # checked by the move, not by a confirmation
    page.click("[data-goto-step=rate]")
    assert page.is_hidden("[data-review]")
    page.click("[data-submit]")
    page.wait_for_selector("[data-finished]:not([hidden])")
    annotation = Annotation.objects.get(pk=int(page.text_content("[data-annotation-id]")))
    assert annotation.draft["steps_reviewed"] == {"categorise": "visited", "edits": "visited"}


def test_step_three_is_compact_on_a_phone(page, campaign, annotators, screenshots):
    """Defect 13: step 3 was 3,400 px tall for 8 outputs at 390x844."""
    page.set_viewport_size(PHONE)
    login(page, annotators[0].username)
    open_next(page)
    check_step_one_by_a_move(page)
    page.click("[data-goto-step=edits]")
    page.click("[data-goto-step=rate]")
    ranking = card_ids(page, "[data-rank-list]")
    for i, unit in enumerate(ranking):
        page.fill(f"#rate-{unit}", str(80 - 5 * i))
    panel = page.locator("[data-step-panel=rate]").bounding_box()["height"]
    cards = page.eval_on_selector_all("[data-rank-list] > .card", "els => els.map((e) => e.offsetHeight)")
    print(f"390x844 step 3: panel {panel:.0f} px for {len(ranking)} outputs, cards {cards}, "
          f"page {page.evaluate('document.documentElement.scrollHeight')} px")
    page.screenshot(path=screenshots / "issue44-13-phone-step3.png", full_page=True)
    assert len(ranking) >= 6
    assert panel < 200 * len(ranking), (panel, cards)
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
