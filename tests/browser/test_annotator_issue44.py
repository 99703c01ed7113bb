"""The annotator-page defects of issue 44, each met the way a new annotator meets it in Chromium."""

from __future__ import annotations

import pytest

from tests.browser.actions import login

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


def open_next(page) -> int:
    page.click("[data-testid=continue-demo]")
    page.wait_for_selector("[data-annotate-root][data-ready]")
    return int(page.url.rstrip("/").rsplit("/", 1)[1])


def card_ids(page, selector: str) -> list[str]:
    return [str(x) for x in page.eval_on_selector_all(f"{selector} > .card[data-unit]",
                                                       "els => els.map(e => e.dataset.unit)")]


def check_step_one_by_a_move(page) -> None:
    """Move the first output of step 1 to another group with the keyboard (which checks step 1)."""
    page.locator("[data-step-panel=categorise] .card[data-unit]").first.focus()
    group = page.evaluate("document.activeElement.closest('[data-group]').dataset.group")
    page.keyboard.press("s" if group != "split" else "d")


def saved(page) -> None:
    page.wait_for_function("document.querySelector('[data-save-status]').textContent === 'All changes saved'")


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
