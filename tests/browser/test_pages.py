from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotation.models import Output, RatingUnit, Source, System
from tests.browser import axe
from tests.browser.actions import login
from tests.browser.conftest import SCREENSHOTS
from tests.factories import PASSWORD, tutorial_public_id

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


# --- Every page at a phone's and a laptop's size ------------------------------------------------------------

SIZES: dict[str, dict[str, object]] = {
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
              "device_scale_factor": 1},
    "desktop": {"viewport": {"width": 1366, "height": 768}},
}
AXE_RESULTS = SCREENSHOTS.parent / "axe-results.json"


# The innermost elements that reach past the right edge of the window (what makes a page scroll sideways).
WIDEST = """(width) => [...document.body.querySelectorAll("*")]
  .filter((e) => e.getBoundingClientRect().right > width + 1 && !e.parentElement.closest(".scroll-region")
                 && ![...e.children].some((c) => c.getBoundingClientRect().right > width + 1))
  .slice(0, 5).map((e) => {
    const name = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "");
    const classes = typeof e.className === "string" ? e.className.trim().split(/\\s+/).filter(Boolean) : [];
    return `${[name, ...classes].join(".")} ${Math.round(e.getBoundingClientRect().right)}`;
  })"""


class PageSurvey:
    """Visits pages in one browser context per role and records, per page and size, the document's width and
    what axe-core's load-time run found (serious and critical violations)."""

    def __init__(self, browser, base_url: str) -> None:
        self.browser = browser
        self.base_url = base_url
        self.rows: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def visit(self, role: str, username: str | None, pages: list[tuple[str, str]]) -> None:
        for size, options in SIZES.items():
            self._visit_at(size, options, role, username, pages)

    def _visit_at(self, size: str, options: dict[str, object], role: str, username: str | None,
                  pages: list[tuple[str, str]]) -> None:
        # A phone's browser lays out a page without a viewport meta element 980 px wide: is_mobile emulates that.
        context = self.browser.new_context(base_url=self.base_url, **options)
        context.set_default_timeout(30000)
        log = axe.install(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: {exc}"))
        if username is not None:
            page.goto("/login/")
            page.fill("#id_username", username)
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/login/" not in url)
        viewport = page.viewport_size
        for name, url in pages:
            seen = len(log.runs)
            page.goto(url)
            # Wait for axe's load-time run (it starts once the page's own requests have finished).
            for _ in range(400):
                if any(label == "on load" for label, _, _ in log.runs[seen:]):
                    break
                page.wait_for_timeout(25)
            found = next((f for label, _, f in log.runs[seen:] if label == "on load"), None)
            width = page.evaluate("document.documentElement.scrollWidth")
            wide = page.evaluate(WIDEST, viewport["width"]) if width > viewport["width"] else []
            slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
            page.screenshot(path=SCREENSHOTS / f"layout-{size}-{slug}.png", full_page=True)
            self.rows.append({
                "page": name, "role": role, "url": url, "size": size, "viewport": viewport["width"],
                "scroll_width": width, "fits": width <= viewport["width"],
                "axe": "not run" if found is None else [f"{v['impact']} {v['id']} ({v['count']})" for v in found],
                "violations": found, "too_wide": wide,
            })
        page.goto("about:blank")
        context.close()

    def failures(self) -> list[str]:
        too_wide = [f"{r['page']} at {r['size']}: width {r['scroll_width']} > {r['viewport']} ({r['too_wide']})"
                    for r in self.rows if not r["fits"]]
        return too_wide + [f"{r['page']} at {r['size']}: axe {r['axe']}" for r in self.rows if r["axe"]]

    def table(self) -> str:
        lines = [f"{'page':<28} {'size':<8} {'width':>6}  axe serious/critical"]
        order = {name: i for i, name in reversed(list(enumerate(r["page"] for r in self.rows)))}
        for r in sorted(self.rows, key=lambda r: (order[r["page"]], list(SIZES).index(str(r["size"])))):
            axe_text = r["axe"] if isinstance(r["axe"], str) else ", ".join(r["axe"]) or "none"
            lines.append(f"{r['page']:<28} {r['size']:<8} {r['scroll_width']:>6}  {axe_text}")
        return "\n".join(lines)


def test_every_page_fits_a_phone_and_a_laptop_and_axe_finds_nothing_serious(
    browser, live_server, settings, campaign, researcher, annotators, admin_user, tiny_corpus, tmp_path,
) -> None:
    """Every page of the app at 390×844 and 1366×768, each as the role that uses it: no horizontal page scroll
    (wide tables scroll inside their own focusable region) and no serious or critical axe-core violation.
    The per-page table is printed and written to artifacts/axe-results.json."""
    from annotation.models import Assignment
    from annotation.services.operations import account_password_token, crowd_open, invite_create
    from metrics.services.allocation import campaign_allocation_start
    from metrics.services.testbed import testbed_start
    from tests.factories import LearnedVersionFactory, UserFactory, rated_campaign, submit_assignment

    settings.ROOT_URLCONF = "tests.browser.urls_failing"
    settings.VAR_DIR = tmp_path  # the allocation simulation's files
    study = rated_campaign("study", annotators, n_sources=8)
    study.owners.add(researcher)
    assignment = Assignment.objects.filter(annotator=annotators[0], source__campaign=campaign).order_by("id")
    invite = invite_create(campaign=campaign, by=researcher)
    crowd_open(campaign=campaign)
    version = LearnedVersionFactory.create(note="first try")
    # The submit and the run (eager here) broadcast their progress, which needs a thread without Playwright's
    # event loop.
    with ThreadPoolExecutor(1) as pool:
        submitted = pool.submit(submit_assignment, assignment[0]).result().assignment
        run = pool.submit(testbed_start, dataset=tiny_corpus, metric_names=["fkgl", "sari"],
                          magnitudes=[0, 50, 100], sample=4, seed=1, owner=researcher).result()
        pool.submit(call_command, "meta_evaluate", "--campaign", "study", "--metric", "sari", "--n-boot", "0",
                    stdout=StringIO()).result()  # stored SARI scores: the study's metric card
        simulation = pool.submit(campaign_allocation_start, study, policies="uniform,adaptive", seeds=2,
                                 owner=researcher).result()  # run eagerly on commit: its page has its table and plot

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    survey = PageSurvey(browser, live_server.url)
    newcomer = UserFactory.create(username="newcomer")  # an account made on the dashboard, password not set
    uid, token = account_password_token(newcomer)
    survey.visit("anonymous", None, [
        ("login", "/login/"), ("invite", f"/invite/{invite.token}/"),
        ("set password", f"/account/password/{uid}/{token}/"), ("404", "/no/such/page/"),
        ("500", "/test-server-error/"),
        ("crowd error", f"/crowd/{campaign.slug}/{campaign.crowd_token}/"),
    ])
    survey.visit("annotator", annotators[0].username, [
        ("home", "/"), ("instructions", f"/campaigns/{campaign.slug}/instructions/"),
        ("annotate", f"/annotate/{assignment[1].pk}/"), ("403", "/research/"),
    ])
    survey.visit("researcher", researcher.username, [
        ("research home", "/research/"), ("import", "/research/import/"),
        ("dashboard (demo)", f"/research/campaigns/{campaign.slug}/"),
        ("dashboard (rated)", "/research/campaigns/study/"),
        ("item", f"/research/campaigns/{campaign.slug}/items/{submitted.pk}/"),
        ("practice", f"/research/campaigns/study/practice/?source={study.sources.order_by('id')[0].external_id}"),
        ("testbed", "/research/testbed/"), ("testbed run", f"/research/testbed/{run.pk}/"),
        ("metric card", "/research/campaigns/study/metrics/sari/"),
        ("planner", "/research/planner/?campaign=study"),
        ("allocation simulations", "/research/campaigns/study/allocation/"),
        ("allocation simulation", f"/research/campaigns/study/allocation/{simulation.pk}/"),
    ])
    survey.visit("admin", admin_user.username, [
        ("learned", "/learned/"), ("learned version", f"/learned/{version.pk}/"), ("API docs", "/api/docs/"),
    ])
    survey.visit("crowd worker", None, [
        ("crowd start", f"/crowd/{campaign.slug}/{campaign.crowd_token}/?PROLIFIC_PID=worker1&STUDY_ID=s1"),
        ("crowd done", f"/campaigns/{campaign.slug}/done/"),
    ])

    print("\n" + survey.table())
    AXE_RESULTS.parent.mkdir(parents=True, exist_ok=True)
    AXE_RESULTS.write_text(json.dumps(survey.rows, indent=1), encoding="utf-8")
    assert not survey.errors, f"JavaScript errors: {survey.errors}"
    assert not survey.failures(), "\n".join(survey.failures()) + "\n" + survey.table()


# Pairs of an SVG's text labels whose boxes overlap (by more than a pixel each way).
OVERLAPPING_LABELS = """(selector) => {
  const boxes = [...document.querySelectorAll(`${selector} svg text`)]
    .map((t) => [t.textContent, t.getBoundingClientRect()]).filter(([, b]) => b.width > 0);
  const pairs = [];
  boxes.forEach(([a, p], i) => boxes.slice(i + 1).forEach(([b, q]) => {
    const across = Math.min(p.right, q.right) - Math.max(p.left, q.left);
    const down = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
    if (across > 1 && down > 1) pairs.push([a, b]);
  }));
  return pairs;
}"""


@pytest.mark.parametrize("width", [390, 1366])
def test_the_plots_labels_do_not_overlap_on_a_phone_or_a_laptop(page, transactional_db, researcher, annotators,
                                                                 width) -> None:
    from tests.factories import rated_campaign

    # System names as long as real ones: the label column takes its share of a narrow plot.
    study = rated_campaign("study", annotators, n_sources=6,
                           categories={"copy-ref": "paraphrase", "trim": "deletion", "random": "paraphrase"})
    study.owners.add(researcher)
    study.systems.filter(name="copy-ref").update(name="Copy of the first reference, MUSS-style")
    page.set_viewport_size({"width": width, "height": 844})
    login(page, researcher.username, to="/research/campaigns/study/", ready="#dashboard[data-ready]")
    for plot in ("#distribution-plot", "#leaderboard-plot", "#alpha-plot", "#category-mix-plot"):
        assert page.locator(f"{plot} svg").count() == 1, plot
        assert page.evaluate(OVERLAPPING_LABELS, plot) == [], plot
    ticks = page.locator("#distribution-plot svg text.tick").all_text_contents()
    assert "0" in ticks and "100" in ticks  # thinned, the axis still spans the scale
