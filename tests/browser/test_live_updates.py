"""The dashboard is live under the embedded default of `make run` (issue 44, defect 3): no Redis, so each process
has its own in-memory channel layer, and the Celery worker is another process than the web server.

Here the web server is Daphne in a process of its own (as `make run` serves it), and "the worker" is this test's
thread calling the services that the Celery tasks call: an annotator's submit (whose broadcast task runs eagerly
here) and a "Score with metrics" job. The only thing the two processes share is the database, so the progress
bars and the job's line can change without a reload only through the event feed (core.events). The pill says
"live" only while the server answers, and a page that was offline rereads its state when it is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from core.services import background_job_create
from metrics.selectors import SCORE_JOB_KIND
from metrics.services.metric_registry import metrics_get
from metrics.services.metric_scores import campaign_metric_scores_compute
from tests.browser.conftest import Server
from tests.evaluation.test_consumers import submit_first
from tests.factories import PASSWORD

pytestmark = pytest.mark.browser


@contextmanager
def signed_in(browser: Any, server: Server, user: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=server.url)
    context.set_default_timeout(20000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto("/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
    yield page
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def dashboard(browser: Any, campaign: Any, server: Server, researcher: Any) -> Iterator[Any]:
    with signed_in(browser, server, researcher) as page:
        yield page


def annotator_count(page: Any, annotator: Any) -> str:
    return page.locator(f'#annotator-progress li[data-annotator="{annotator.pseudonym}"] .count').text_content()


def test_dashboard_progress_and_a_job_update_without_reload_when_the_worker_ends(
    dashboard: Any, server: Server, campaign: Any, annotators: list[Any], researcher: Any,
) -> None:
    page = dashboard
    job = background_job_create(kind=SCORE_JOB_KIND, subject=campaign, total=0, owner=researcher)
    page.goto(f"/research/campaigns/{campaign.slug}/")
    page.wait_for_selector('#live-status[data-state="live"]')
    assert page.locator("#live-status").text_content() == "live"
    line = page.locator(".metrics-job", has_text=f"Scoring job #{job.pk}:")
    assert "queued, 0 / 0 scores" in line.text_content()
    total = annotator_count(page, annotators[0]).split("/")[1].strip()
    page.evaluate("window.__notReloaded = true")

    # The worker: the broadcast task of an annotator's submit (run eagerly, in this process, after the commit).
    submit_first(annotators[0])
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel)?.textContent.replace(/\\s+/g, ' ').trim() === want",
        arg=[f'#annotator-progress li[data-annotator="{annotators[0].pseudonym}"] .count', f"1 / {total}"])

    # The worker: "Score with metrics" (metrics.tasks.metric_scores_run calls this service).
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl"), job=job)
    page.wait_for_function(
        "(name) => [...document.querySelectorAll('.metrics-job')].some((p) => p.textContent.includes(name) &&"
        " /done, (\\d+) \\/ \\1 scores/.test(p.textContent))", arg=f"Scoring job #{job.pk}:")
    # Its end rereads the panel, which now lists the stored metric.
    page.wait_for_selector('#metrics-panel[data-stored="fkgl"]')
    assert page.evaluate("window.__notReloaded") is True

    # The server goes away: the pill stops saying "live".
    server.stop()
    page.wait_for_function(
        "() => ['reconnecting', 'offline'].includes(document.querySelector('#live-status').dataset.state)")
    assert page.locator("#live-status").text_content() != "live"

    # What happens meanwhile is missed by the page; once the server is back, the page rereads its state.
    submit_first(annotators[1])
    server.start()
    page.wait_for_selector('#live-status[data-state="live"]', timeout=30000)
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel)?.textContent.replace(/\\s+/g, ' ').trim() === want",
        arg=[f'#annotator-progress li[data-annotator="{annotators[1].pseudonym}"] .count', f"1 / {total}"])
    assert page.evaluate("window.__notReloaded") is True


def test_the_dashboard_stays_live_after_a_form_error(
    dashboard: Any, server: Server, campaign: Any, researcher: Any,
) -> None:
    """A form that fails renders the dashboard at the address it posted to (here .../people/, which answers no
    GET); the panels a finished job changed must still be read again, from the dashboard's own address."""
    page = dashboard
    page.goto(f"/research/campaigns/{campaign.slug}/")
    page.wait_for_selector('#live-status[data-state="live"]')
    page.fill("#add-usernames", "nobody-by-this-name")
    # Enter submits the form where it is: the panels and charts drawn above it on connecting may still move the
    # button, and a click aimed at where it was then lands elsewhere (seen once on a loaded CI machine).
    page.press("#add-usernames", "Enter")
    page.wait_for_selector("#add-usernames_error")
    assert page.url.rstrip("/").endswith("/people")
    page.wait_for_selector('#live-status[data-state="live"]')
    page.evaluate("window.__notReloaded = true")

    job = background_job_create(kind=SCORE_JOB_KIND, subject=campaign, total=0, owner=researcher)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl"), job=job)
    page.wait_for_selector('#metrics-panel[data-stored="fkgl"]')
    assert page.evaluate("window.__notReloaded") is True
    assert page.locator("#add-usernames_error").is_visible()  # the error outside the panel stays


def test_a_finished_training_run_shows_promote_on_the_versions_page_without_reload(
    browser: Any, lens_on_cpu: None, server: Server, admin_user: Any, annotators: list[Any], tiny_encoder_dir: Any,
) -> None:
    from metrics.lens import TrainConfig
    from metrics.services.training import learned_version_train, lens_version_create
    from tests.factories import rated_campaign
    from tests.tiny import TINY_OPTIONS

    rated = rated_campaign("rated", annotators)
    version = lens_version_create(campaigns=[rated], started_by=admin_user, enqueue=False,
                                  config=TrainConfig.from_options({"encoder": str(tiny_encoder_dir), "epochs": 1,
                                                                   **TINY_OPTIONS}))
    with signed_in(browser, server, admin_user) as page:
        page.goto("/learned/")
        row = page.locator("table.learned-versions tr", has=page.locator(f'a[href="/learned/{version.pk}/"]'))
        assert "Queued" in row.text_content() and row.locator("button", has_text="Cancel").count() == 1
        page.wait_for_selector(f'[data-learned-chart][data-version="{version.pk}"][data-events]')
        page.evaluate("window.__notReloaded = true")

        learned_version_train(version=version)  # what the worker's task (metrics.tasks) calls

        page.wait_for_function(
            "(href) => { const row = document.querySelector(`table.learned-versions a[href='${href}']`)?.closest('tr');"
            " return row && row.textContent.includes('Succeeded') && [...row.querySelectorAll('button')]"
            ".some((b) => b.textContent.includes('Promote')); }", arg=f"/learned/{version.pk}/")
        assert row.locator("button", has_text="Cancel").count() == 0
        chart = page.locator(f'[data-learned-chart][data-version="{version.pk}"]')
        assert int(chart.get_attribute("data-events") or 0) >= 2  # the curve came live too
        assert page.evaluate("window.__notReloaded") is True


def test_the_testbed_run_page_follows_the_worker_and_shows_a_failure(
    browser: Any, server: Server, researcher: Any,
) -> None:
    from core.services import background_job_fail, background_job_progress, background_job_start

    job = background_job_create(kind="testbed", total=0, owner=researcher)
    with signed_in(browser, server, researcher) as page:
        page.goto(f"/research/testbed/{job.pk}/")
        page.wait_for_selector('[data-testbed-progress][data-socket="live"]')
        page.evaluate("window.__notReloaded = true")

        background_job_start(job_id=job.pk, total=40)  # the worker (metrics.services.testbed.testbed_execute)
        background_job_progress(job_id=job.pk, done=12)
        page.wait_for_function("() => document.querySelector('[data-testbed-count]').textContent === '12 / 40'")
        assert page.locator("[data-testbed-status]").text_content() == "running"
        assert page.evaluate("window.__notReloaded") is True

        background_job_fail(job.pk, "ValueError: the corpus is empty")  # the task's failure path
        page.wait_for_function("() => window.__notReloaded === undefined")  # the page reloaded itself
        page.wait_for_selector("text=ValueError: the corpus is empty")
        assert page.locator("[data-testbed-status]").text_content() == "failed"


def test_a_finished_job_keeps_the_error_of_a_form_in_the_panel_it_rereads(
    dashboard: Any, server: Server, campaign: Any, researcher: Any,
) -> None:
    """"Score with metrics" refused (the researcher has as many jobs queued as allowed, 429): the error sits in
    the metrics panel, which a finished job rereads; the error and the focus must survive that."""
    from core.services import job_budget_limits

    page = dashboard
    per_user, _ = job_budget_limits()
    jobs = [background_job_create(kind=SCORE_JOB_KIND, subject=campaign, total=0, owner=researcher)
            for _ in range(per_user)]
    page.goto(f"/research/campaigns/{campaign.slug}/")
    page.click("#metrics-score-button")
    page.wait_for_selector("#metrics-score-errors")
    assert "jobs queued or running" in page.locator("#metrics-score-errors").text_content()
    page.wait_for_selector('#live-status[data-state="live"]')
    focused = page.evaluate("document.activeElement.id")
    page.evaluate("window.__notReloaded = true")

    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl"), job=jobs[0])
    page.wait_for_selector('#metrics-panel[data-stored="fkgl"]')  # the panel was read again
    assert page.evaluate("window.__notReloaded") is True
    assert "jobs queued or running" in page.locator("#metrics-score-errors").text_content()
    assert page.locator("#metrics-score-errors").is_visible()
    assert page.evaluate("document.activeElement.id") == focused


def test_the_people_table_lists_a_new_annotator_when_their_first_submit_arrives(
    dashboard: Any, server: Server, campaign: Any, annotators: list[Any],
) -> None:
    """Someone who joined after the page was opened (a crowd worker arriving, an account added elsewhere) shows
    in Progress with their first submit; the People table must list them too, without a reload."""
    from annotation.services.assignments import campaign_add_annotators, campaign_remove_annotator

    page = dashboard
    newcomer = annotators[2]
    campaign_remove_annotator(campaign=campaign, annotator=annotators[1])  # frees sources for the newcomer
    page.goto(f"/research/campaigns/{campaign.slug}/")
    page.wait_for_selector('#live-status[data-state="live"]')
    assert page.locator(f'#people-table tr[data-pseudonym="{newcomer.pseudonym}"]').count() == 0
    page.evaluate("window.__notReloaded = true")

    campaign_add_annotators(campaign=campaign, annotators=[newcomer], only_them=True)  # as a crowd worker is
    submit_first(newcomer)
    page.wait_for_selector(f'#annotator-progress li[data-annotator="{newcomer.pseudonym}"]')
    page.wait_for_selector(f'#people-table tr[data-pseudonym="{newcomer.pseudonym}"]')
    assert page.evaluate("window.__notReloaded") is True
