"""The researcher dashboard in Chromium: the report's plots and tables render from the API, and LENS sits
beside the human leaderboard. pytest-django's live server speaks HTTP only, so the live websocket stays
offline here (its pill says so); the websocket itself is tested in tests/evaluation/test_consumers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.stats.slopes import SlopeRow
from metrics.perturb import REGISTRY
from metrics.selectors import campaign_lens_leaderboard
from metrics.services.metric_registry import metric_get
from metrics.services.metric_scores import campaign_metric_scores_compute
from metrics.services.training import learned_version_promote
from tests.browser.actions import login
from tests.factories import rated_campaign as make_rated_campaign
from tests.factories import succeeded_version

pytestmark = pytest.mark.browser


def test_dashboard_draws_the_report_and_lens_beside_it(
    page, transactional_db, researcher, annotators, tiny_checkpoint: Path, screenshots,
) -> None:
    campaign = make_rated_campaign("study", annotators, n_sources=8)
    campaign.owners.add(researcher)
    version = learned_version_promote(version=succeeded_version(tiny_checkpoint))
    campaign_metric_scores_compute(campaign=campaign, metrics=[metric_get(version.metric_name)])

    login(page, researcher.username, to="/research/campaigns/study/", ready="#dashboard[data-ready]")
    # Leaderboard: one row per system, best human system first, and a plot with an error bar per system.
    rows = page.locator("#leaderboard-table tbody tr")
    assert rows.count() == 3
    assert "copy-ref" in rows.nth(0).text_content() and "random" in rows.nth(2).text_content()
    assert page.locator("#leaderboard-plot svg").count() == 1
    assert page.locator("#distribution-plot svg").count() >= 1
    assert page.locator("#annotator-table tbody tr").count() == len(annotators)
    # LENS beside it, server-rendered from the stored scores.
    lens_rows = page.locator("#lens-table tbody tr")
    board = campaign_lens_leaderboard(campaign)
    assert lens_rows.count() == len(board) == 3
    for i, row in enumerate(board):
        assert row["system"] in lens_rows.nth(i).text_content()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=screenshots / "research-dashboard.png", full_page=True)
    # The z / raw toggle redraws the plot without errors.
    page.click(".toggle [data-scale=raw]")
    assert page.get_attribute(".toggle [data-scale=raw]", "aria-pressed") == "true"
    assert page.locator("#leaderboard-plot svg").count() == 1


def test_dashboard_of_a_multi_aspect_campaign_shows_its_aspects(
    page, transactional_db, researcher, screenshots,
) -> None:
    import io

    from annotation.services.imports import campaign_import

    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    rows = "".join(
        f"{s},{system},Source sentence number {s} is long.,Output {s} {system}.,T,{f},{z},{m},{z},{p},{z}\n"
        for s in range(6) for system, f, m, p, z in (("ACCESS", 80 + s, 70, 60, 0.5), ("Hybrid", 40, 35 + s, 30, -0.5))
    )
    header = ("sent_id,sys_name,orig_sent,simp_sent,sys_type,fluency,fluency_zscore,meaning,meaning_zscore,"
              "simplicity,simplicity_zscore\n")
    result = campaign_import(kind="da", file=io.BytesIO((header + rows).encode()), filename="wiki.csv",
                             campaign_slug="wiki", analyse=False)
    result.campaign.owners.add(researcher)

    login(page, researcher.username, to="/research/campaigns/wiki/", ready="#dashboard[data-ready]")
    table = page.locator("#aspects-table tbody tr")
    assert table.count() == 2
    assert "ACCESS" in table.nth(0).text_content() and "82.50" in table.nth(0).text_content()
    assert page.locator("#aspects-table thead th[scope=colgroup]").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert errors == []
    page.locator("#aspects-panel").screenshot(path=screenshots / "research-dashboard-aspects.png")
    page.screenshot(path=screenshots / "research-dashboard-da.png", full_page=True)


def test_metrics_vs_humans_panel_draws_the_table_and_the_scatter(
    page, transactional_db, researcher, annotators, screenshots,
) -> None:
    from metrics.services.metric_registry import metrics_get
    from metrics.services.metric_scores import campaign_metric_scores_compute
    from metrics.services.sensitivity import metric_sensitivity_record

    campaign = make_rated_campaign("metrics-study", annotators, n_sources=10,
                                   categories={"copy-ref": "paraphrase", "trim": "deletion", "random": "paraphrase"})
    campaign.owners.add(researcher)
    campaign_metric_scores_compute(campaign=campaign, metrics=metrics_get("fkgl,gleu,sari,sari:lens"))
    # A testbed run of sari in which only deletion moved it the expected way; none of the others.
    metric_sensitivity_record(slopes=[
        SlopeRow(metric="sari", perturbation=name, criterion=p.criterion, slope=-1.0, intercept=0.0, p=0.001,
                 p_holm=0.01, n=22, expected_direction=p.expected, as_expected=name == "delete")
        for name, p in REGISTRY.items()], signatures={}, run={"dataset": "asset-valid", "sample": 100, "seed": 13},
        sanity={"sari": {"unrelated": {"want": "worst", "label": "an unrelated sentence gets the worst score",
                                       "passed": 3, "total": 4, "passes": False, "failed_sources": [2]}}})

    login(page, researcher.username, to="/research/campaigns/metrics-study/", ready="#metrics-panel[data-ready]")
    page.wait_for_selector("#metrics-scatter svg circle")
    rows = page.locator("#metrics-table tbody tr")
    assert rows.count() == 4
    assert [rows.nth(i).locator("td.metric-name").text_content() for i in range(4)] == [
        "fkgl", "gleu", "sari", "sari:lens"]
    headers = page.locator("#metrics-table thead th").all_text_contents()
    assert headers[0] == "Metric" and "All" in headers and "Paraphrase" in headers
    assert "Kendall τ-like per category · 30 outputs" in page.locator("#metrics-table caption").text_content()
    assert "[" in rows.nth(2).text_content()  # every cell has its interval
    sensitivity = [rows.nth(i).locator("td.sensitivity").text_content() for i in range(4)]
    assert sensitivity == ["no testbed run", "no testbed run",
                           "informativeness 1/3, coherence 0/1, faithfulness 0/5, simplification 0/1, lens 0/2"
                           "sanity: unrelated 3/4 FAIL",  # the run's sanity checks, on a line of their own
                           "no testbed run"]
    assert rows.nth(2).locator("td.sensitivity .sanity").text_content() == "sanity: unrelated 3/4 FAIL"
    # each metric's name opens its card (and the column says it holds the sanity checks too)
    assert headers[-1] == "Responds as expected to (perturbation testbed); sanity checks"
    assert rows.nth(3).locator("td.metric-name a").get_attribute("href") == (
        "/research/campaigns/metrics-study/metrics/sari%3Alens/")
    rows.nth(2).locator("td.metric-name a").click()
    page.wait_for_selector("h1:has-text('Metric card: sari')")
    # the sanity row's metric is written as its name is (not upper-cased like a column heading)
    name = page.locator('tr[data-sanity="sari"] th[scope=row]')
    assert name.text_content() == "sari" and name.evaluate("(e) => getComputedStyle(e).textTransform") == "none"
    page.go_back()
    page.wait_for_selector("#metrics-panel[data-ready]")


    # The system level of the same API answer, the figures `meta_evaluate --level system` prints.
    from metrics.services.meta_evaluation import campaign_meta_evaluate_stored

    system = campaign_meta_evaluate_stored(campaign=campaign, n_boot=1000)["system"]
    assert "System level · 3 systems" in page.locator("#metrics-system-table caption").text_content()
    system_rows = page.locator("#metrics-system-table tbody tr")
    assert system_rows.count() == 4
    first = system["clusters"]["z"]["accuracy"]["order"][0]
    accuracy = system["metrics"][first]["z"]["accuracy"]["value"]
    assert system_rows.nth(0).locator("td.metric-name").text_content() == first
    assert system_rows.nth(0).locator("td").nth(4).text_content().startswith(f"{accuracy:.3f}")
    assert page.locator("#metrics-scatter circle").count() == 30
    assert page.input_value("#metrics-scatter-metric") == "sari"
    page.select_option("#metrics-scatter-metric", "fkgl")
    page.wait_for_function(
        "document.querySelector('#metrics-scatter svg').getAttribute('aria-label').startsWith('fkgl')"
    )
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.locator("#metrics-panel").screenshot(path=screenshots / "metrics-vs-humans.png")
