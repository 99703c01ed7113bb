from __future__ import annotations

import pytest

from annotation.models import Assignment
from tests.browser.actions import api_annotation, card_ids, drag, login, open_next, tab_to

pytestmark = pytest.mark.browser



def test_complete_a_source_with_the_mouse(page, campaign, annotators, screenshots):
    login(page, annotators[0].username)
    assignment_id = open_next(page)

    # Step 1: drag the first paraphrase-focused output into the splitting group.
    paraphrase = card_ids(page, "[data-group=paraphrase]")
    moved = paraphrase[0]
    split_cards = page.locator("[data-group=split] > .card")
    drag(page, page.locator(f'[data-group=paraphrase] > .card[data-unit="{moved}"] .handle'), split_cards.first)
    assert moved in card_ids(page, "[data-group=split]")
    assert card_ids(page, "[data-group=split]")[0] == moved
    page.hover(f'[data-group=split] .card[data-unit="{moved}"] .why')
    page.screenshot(path=screenshots / "step1-categorise.png", full_page=True)

    # Step 2: fix the edits of the first output in the pop-up: mark two words as a paraphrase.
    page.click("button[data-step-delta='1']")
    first = card_ids(page, "[data-edits-list]")[0]
    page.click(f'button[data-fix="{first}"]')
    dialog = page.locator("dialog[data-fix-dialog]")
    assert dialog.is_visible()
    tokens = dialog.locator("[data-tokens=output] .tok")
    tokens.nth(0).click()
    tokens.nth(1).click(modifiers=["Shift"])
    dialog.locator("[data-act=add-para]").click()
    page.screenshot(path=screenshots / "step2-fix-dialog.png")
    dialog.locator("[data-act=save]").click()
    assert not dialog.is_visible()
    assert page.locator(f'[data-edits-list] .card[data-unit="{first}"].corrected').count() == 1
    page.screenshot(path=screenshots / "step2-edits.png", full_page=True)

    # Step 3: rate every output, then drag the last one to the top.
    page.click("button[data-step-delta='1']")
    ranking = card_ids(page, "[data-rank-list]")
    for i, unit in enumerate(ranking):
        page.fill(f"#rate-{unit}", str(90 - 10 * i))
    last = ranking[-1]
    slider = page.locator(f'[data-rank-list] .card[data-unit="{last}"] .slider')
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.95, box["y"] + box["height"] / 2)  # about 95
    rating_last = float(page.input_value(f"#rate-{last}"))
    assert rating_last > 80
    top = page.locator("[data-rank-list] > .card").first
    drag(page, page.locator(f'[data-rank-list] .card[data-unit="{last}"] .handle'), top)
    assert card_ids(page, "[data-rank-list]")[0] == last
    page.screenshot(path=screenshots / "step3-rank-rate.png", full_page=True)
    page.click("[data-submit]")
    page.wait_for_selector("[data-finished]:not([hidden])")
    page.screenshot(path=screenshots / "submitted.png")

    annotation_id = int(page.text_content("[data-annotation-id]"))
    data = api_annotation(annotators[0], annotation_id)
    judged = {j["unit"]: j for j in data["judgements"]}
    assert judged[moved]["category"] == "split"
    assert judged[first]["edits"] is not None and judged[first]["edits"] != judged[first]["auto_edits"]
    assert any(e["type"] == "paraphrase" and e["output_span"][0] == 0 for e in judged[first]["edits"])
    assert judged[last]["rank"] == 1 and judged[last]["rating"] == rating_last
    others = [j for u, j in judged.items() if u != first]
    assert all(j["edits"] is None for j in others)
    assert set(data["step_seconds"]) == {"categorise", "edits", "rate"}
    stamps = data["step_timestamps"]
    # The steps were walked in order, each left at the moment the next was entered.
    assert stamps["categorise"]["left"] == stamps["edits"]["entered"] < stamps["edits"]["left"] == \
        stamps["rate"]["entered"]
    assert Assignment.objects.get(pk=assignment_id).status == "submitted"


def focused_unit(page) -> str:
    return str(page.evaluate("document.activeElement.closest('.card[data-unit]').dataset.unit"))


def test_complete_a_source_with_the_keyboard_only(page, campaign, annotators, screenshots):
    # Log in and open the work with the keyboard.
    page.goto("/login/")
    # The username field has autofocus; wait for it before typing (a loaded machine may lag).
    page.wait_for_function("document.activeElement && document.activeElement.id === 'id_username'")
    page.keyboard.type(annotators[1].username)
    page.keyboard.press("Tab")
    page.keyboard.type("pw-for-tests-1")
    page.keyboard.press("Enter")
    page.wait_for_selector("h1:has-text(\"My work\")")
    tab_to(page, "[data-testid=continue-demo]")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-annotate-root][data-ready]")

    # Step 1: move the first output to the splitting group (S), then one place up (Shift+Up).
    tab_to(page, "[data-step-panel=categorise] .card[data-unit]")
    moved = focused_unit(page)
    page.keyboard.press("s")
    assert focused_unit(page) == moved
    assert page.eval_on_selector("[data-group=split]", "(el, id) => el.lastElementChild.dataset.unit == id", moved)
    page.keyboard.press("Shift+ArrowUp")
    split = card_ids(page, "[data-group=split]")
    assert split.index(moved) == len(split) - 2
    page.screenshot(path=screenshots / "keyboard-step1.png")
    page.keyboard.press("Alt+n")

    # Step 2: open Fix with F on the second output, select two words, add a split before them, save.
    tab_to(page, "[data-edits-list] .card[data-unit]")
    page.keyboard.press("ArrowDown")
    fixed = focused_unit(page)
    page.keyboard.press("f")
    page.wait_for_selector("dialog[data-fix-dialog][open]")
    assert page.evaluate("document.activeElement.closest('[data-tokens]').dataset.tokens") == "output"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    tab_to(page, "[data-act=add-split]")
    page.keyboard.press("Enter")
    # Tab stays inside the dialog.
    for _ in range(40):
        page.keyboard.press("Tab")
        assert page.evaluate("!!document.activeElement.closest('dialog')")
    page.screenshot(path=screenshots / "keyboard-step2-fix.png")
    tab_to(page, "[data-act=save]")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.dataset.fix") == str(fixed)
    # Escape closes without saving.
    page.keyboard.press("Enter")
    page.wait_for_selector("dialog[data-fix-dialog][open]")
    page.keyboard.press("Escape")
    assert not page.is_visible("dialog[data-fix-dialog]")
    tab_to(page, "[data-step-delta='1']")
    page.keyboard.press("Enter")

    # Step 3: rate every output in order, then move the last one to the top with Shift+Up.
    ranking = card_ids(page, "[data-rank-list]")
    for i, unit in enumerate(ranking):
        tab_to(page, f"#rate-{unit}")
        page.keyboard.type(str(20 + 10 * i))
    page.keyboard.press("Shift+Tab")  # back onto the last card
    last = ranking[-1]
    assert focused_unit(page) == last
    for _ in range(len(ranking) - 1):
        page.keyboard.press("Shift+ArrowUp")
    assert card_ids(page, "[data-rank-list]")[0] == last
    assert page.is_visible("[data-rank-warning]")  # rank 1 has 90, rank 2 has 20: a gentle warning
    page.screenshot(path=screenshots / "keyboard-step3.png", full_page=True)
    tab_to(page, "[data-submit]")
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-finished]:not([hidden])")

    data = api_annotation(annotators[1], int(page.text_content("[data-annotation-id]")))
    judged = {j["unit"]: j for j in data["judgements"]}
    assert judged[moved]["category"] == "split"
    assert any(e["type"] == "split" for e in judged[fixed]["edits"])
    assert judged[last]["rank"] == 1 and judged[last]["rating"] == 20 + 10 * (len(ranking) - 1)
    assert sorted(j["rank"] for j in judged.values()) == list(range(1, len(ranking) + 1))


def test_reload_mid_annotation_restores_the_draft(page, campaign, annotators, screenshots):
    login(page, annotators[0].username)
    assignment_id = open_next(page)
    tab_to(page, "[data-step-panel=categorise] .card[data-unit]")
    moved = focused_unit(page)
    page.keyboard.press("d")
    page.click("[data-goto-step=rate]")
    ranking = card_ids(page, "[data-rank-list]")
    page.fill(f"#rate-{ranking[0]}", "64")
    page.wait_for_function("document.querySelector('[data-save-status]').textContent === 'All changes saved'")
    page.reload()
    page.wait_for_selector("[data-annotate-root][data-ready]")
    assert page.is_visible("[data-step-panel=rate]")
    assert page.input_value(f"#rate-{ranking[0]}") == "64"
    page.click("[data-goto-step=categorise]")
    assert moved in card_ids(page, "[data-group=deletion]")
    page.click("[data-goto-step=rate]")

    # A dropped connection: saves fail, the banner shows, the local copy survives a reload.
    page.route("**/draft/", lambda route: route.abort())
    page.fill(f"#rate-{ranking[1]}", "33")
    page.wait_for_selector("[data-offline]:not([hidden])")
    page.screenshot(path=screenshots / "offline-banner.png")
    page.reload()
    page.wait_for_selector("[data-annotate-root][data-ready]")
    assert page.input_value(f"#rate-{ranking[1]}") == "33"
    page.unroute("**/draft/")
    page.wait_for_function("document.querySelector('[data-save-status]').textContent === 'All changes saved'")
    from annotation.models import Annotation

    draft = Annotation.objects.get(assignment_id=assignment_id, status="draft")
    assert draft.draft["ratings"][str(ranking[1])] == 33


def test_annotator_cannot_open_another_annotators_assignment(page, campaign, annotators, screenshots):
    theirs = Assignment.objects.filter(annotator=annotators[1]).first()
    login(page, annotators[0].username)
    response = page.goto(f"/annotate/{theirs.pk}/")
    assert response.status == 404
    assert page.is_visible("h1:has-text('Page not found')")  # the site's own page (frontend.errors)
    page.screenshot(path=screenshots / "not-found.png")
    assert page.request.get(f"/api/assignments/{theirs.pk}/").status == 404
    response = page.goto("/research/")
    assert response.status == 403 and page.is_visible("h1:has-text('Not allowed')")
    page.screenshot(path=screenshots / "forbidden.png")
