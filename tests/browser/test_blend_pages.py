"""The blend from the learned-metric pages and the dashboard's allocation card, on a phone (390 px): a bad blend
option comes back next to its own field, a good set trains, the version's page says what the blend read; the
allocation card sets the policy and says so. No page scrolls sideways; axe checks each page as the test leaves
it (the ``page`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from metrics.models import LearnedVersion
from tests.browser.actions import login

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("lens_on_cpu")]
PHONE = {"width": 390, "height": 844}


def fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def test_a_researcher_trains_a_blend_from_the_page_on_a_phone(page, transactional_db, admin_user, annotators,
                                                             screenshots) -> None:
    from tests.factories import rated_campaign

    rated_campaign("rated", annotators, n_sources=6)
    page.set_viewport_size(PHONE)
    login(page, admin_user.username, to="/learned/", ready="h1:has-text('Learned metrics')")
    page.select_option("#id_kind", "blend")
    page.select_option("#id_campaigns", label="rated")
    page.fill("#id_suite", "sari,nope")
    page.click(".learned-train button[type=submit]")
    error = page.locator("tr:has(#id_suite) .errorlist")
    error.wait_for()
    assert "unknown nope" in error.inner_text()
    assert page.locator(".learned-train .errorlist").count() == 1  # only next to the field at fault
    assert page.get_attribute("#id_suite", "aria-invalid") == "true"
    assert fits(page)
    page.screenshot(path=screenshots / "blend-train-error-phone.png", full_page=True)

    page.fill("#id_suite", "sari,fkgl")
    page.fill("#id_folds", "3")
    page.select_option("#id_learner", "ridge")
    page.select_option("#id_crossfit", "off")
    page.select_option("#id_learned", "no")
    page.click(".learned-train button[type=submit]")
    page.wait_for_selector("#messages:has-text('queued for training')")
    version = LearnedVersion.objects.get()
    assert version.kind == "blend" and version.hyperparameters["learner"] == "ridge"
    assert version.status == LearnedVersion.Status.SUCCEEDED, version.error  # eager Celery trained it

    page.goto(f"/learned/{version.pk}/")
    page.wait_for_selector("#components-table")
    assert page.locator("#components-table tbody tr").count() == 6  # 2 suite metrics, 4 text features
    assert "ridge" in page.inner_text("#blend-learner")
    assert page.inner_text("#blend-crossfit").startswith("off")
    assert fits(page)
    page.screenshot(path=screenshots / "blend-version-phone.png", full_page=True)


def test_the_allocation_card_sets_the_policy_on_a_phone(page, campaign, researcher, screenshots) -> None:
    page.set_viewport_size(PHONE)
    login(page, researcher.username, to=f"/research/campaigns/{campaign.slug}/", ready="#dashboard[data-ready]")
    select = page.locator("#allocation-form select[name=allocation]")
    box = select.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    select.select_option("adaptive")
    page.click("#allocation-form button[type=submit]")
    page.wait_for_selector("#messages:has-text('Allocation: Adaptive')")
    page.wait_for_selector("#dashboard[data-ready]")
    assert page.input_value("#allocation-form select[name=allocation]") == "adaptive"
    assert page.url.endswith("#allocation-title")
    assert fits(page)
    campaign.refresh_from_db()
    assert campaign.allocation == "adaptive"
    page.locator("#allocation-card").screenshot(path=screenshots / "allocation-card-phone.png")
