"""The stop rule on the dashboard and the API (one function computes both), cached until the ratings change;
the study planner's page and API, with bad input refused naming the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.cache import cache

from annotation.models import Campaign, OutputJudgement
from evaluation.allocation import stoprule
from evaluation.services.stoprule import campaign_settledness

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(rated_campaign, researcher, annotators):
    campaign = rated_campaign("settle", annotators[:3], n_sources=8)
    campaign.allocation = Campaign.Allocation.ADAPTIVE  # a uniform campaign saves 0 by definition
    campaign.save(update_fields=["allocation"])
    campaign.owners.add(researcher)
    cache.clear()
    return campaign


def test_dashboard_panel_shows_the_figures_the_api_returns(rated, researcher, client):
    client.force_login(researcher)
    api = client.get("/api/campaigns/settle/settledness/")
    assert api.status_code == 200
    figures = api.json()
    assert figures["ratings"] == 8 * 3 * 3 and figures["adjacent_pairs"] == 2
    assert figures["order"] == ["copy-ref", "trim", "random"]  # the systems' known quality order
    assert figures["settled_pairs"] == 2
    assert figures["ratings_needed_top1"] == 0 and figures["ratings_needed_tau"] == 0
    assert figures["ratings_saved"] is None  # every pair far beyond doubt: no saving to measure
    assert figures["uniform"] is False
    page = client.get("/research/campaigns/settle/").content.decode()
    panel = page[page.index('data-live-region="settled"'):]
    panel = panel[: panel.index("</section>")]
    assert "How settled is the ranking" in panel
    assert re.search(r'id="settled-pairs">2</b> of 2', panel)
    assert 'id="settled-needed-top1">0</b>' in panel and 'id="settled-needed-tau">0</b>' in panel
    assert 'id="settled-saved">–</b>' in panel
    rows = re.findall(r'<tr data-pair="(\d)" data-settled="(\w+)">', panel)
    assert rows == [("1", "true"), ("2", "true")]
    for pair in figures["pairs"]:
        assert f"<td>{pair['above']}</td><td>{pair['below']}</td>" in panel
    assert "/api/campaigns/settle/settledness/" in panel


def test_a_uniform_campaign_saves_nothing_by_definition(rated, researcher, client):
    Campaign.objects.filter(pk=rated.pk).update(allocation=Campaign.Allocation.UNIFORM)
    cache.clear()
    client.force_login(researcher)
    figures = client.get("/api/campaigns/settle/settledness/").json()
    assert figures["uniform"] is True and figures["ratings_saved"] == 0


def test_figures_are_cached_until_the_ratings_change(rated, monkeypatch):
    calls = []
    real = stoprule.settledness

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(stoprule, "settledness", counted)
    first = campaign_settledness(campaign=rated)
    assert campaign_settledness(campaign=rated) == first and len(calls) == 1
    # a rating changes (trim now rated like copy-ref on one source): a new key, rebuilt
    judgement = OutputJudgement.objects.filter(annotation__source__campaign=rated, output__system__name="trim").first()
    OutputJudgement.objects.filter(pk=judgement.pk).delete()
    second = campaign_settledness(campaign=rated)
    assert len(calls) == 2 and second["ratings"] == first["ratings"] - 1


def test_a_reload_within_seconds_of_new_ratings_says_its_figures_are_older(rated, researcher, client):
    """The dashboard reuses figures built a moment ago while ratings arrive; it must not pass them off as
    today's (a reload showed "needs ratings of at least two systems" with 246 ratings in)."""
    client.force_login(researcher)
    page = client.get("/research/campaigns/settle/").content.decode()
    assert 'id="settled-stale"' not in page  # freshly built
    judgement = OutputJudgement.objects.filter(annotation__source__campaign=rated).first()
    OutputJudgement.objects.filter(pk=judgement.pk).delete()
    page = client.get("/research/campaigns/settle/").content.decode()
    built = 8 * 3 * 3
    assert re.search(rf'id="settled-stale" data-fresh-in="\d+">These figures are from {built} ratings;', page)
    # the API (asked for current figures) rebuilds, and the page then shows them as they are
    assert client.get("/api/campaigns/settle/settledness/").json()["ratings"] == built - 1
    assert 'id="settled-stale"' not in client.get("/research/campaigns/settle/").content.decode()


def test_the_live_panel_follows_an_allocation_switch_at_once(rated, researcher, client):
    """The dashboard reads the figures live (those of the last seconds may be reused while ratings pour in); a
    switch of the allocation is not a new rating: the page the researcher is sent back to says adaptive."""
    from annotation.services.assignments import campaign_allocation_set

    cache.clear()
    campaign_allocation_set(campaign=rated, allocation="uniform")
    assert campaign_settledness(campaign=rated, live=True)["uniform"] is True
    campaign_allocation_set(campaign=rated, allocation="adaptive")
    figures = campaign_settledness(campaign=rated, live=True)
    assert figures["uniform"] is False and figures["ratings_saved"] != 0
    client.force_login(researcher)
    page = client.get("/research/campaigns/settle/").content.decode()
    assert "0 by definition" not in page


def test_a_campaign_without_ratings_gets_an_empty_panel(campaign_with_outputs, researcher, client):
    client.force_login(researcher)
    figures = client.get(f"/api/campaigns/{campaign_with_outputs.slug}/settledness/").json()
    assert figures["ratings"] == 0 and figures["pairs"] == []
    page = client.get(f"/research/campaigns/{campaign_with_outputs.slug}/").content.decode()
    assert "needs ratings of at least two systems" in page


def test_planner_api_from_a_campaign(rated, researcher, client):
    client.force_login(researcher)
    response = client.post("/api/planner/", {"campaign": "settle", "target": "top_k", "k": 1, "p": 0.9,
                                             "sources": [2, 8], "raters": [1, 3], "sims": 50},
                           content_type="application/json")
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["truth_top"] == ["copy-ref"] and len(plan["rows"]) == 4
    assert plan["recommended"] is not None and plan["recommended"]["probability"] >= 0.9


@pytest.mark.parametrize(("body", "field"), [
    ({"campaign": "settle", "target": "best"}, "target"),
    ({"campaign": "settle", "k": "two"}, "k"),
    ({"campaign": "settle", "k": 3}, "k"),  # three systems: top-3 is every system
    ({"campaign": "settle", "p": 1.5}, "p"),
    ({"campaign": "settle", "target": "alpha", "w": -1}, "w"),
    ({"campaign": "settle", "sources": "10,x"}, "sources"),
    ({"campaign": "settle", "raters": [0]}, "raters"),
    ({"campaign": "settle", "sims": 10**7}, "sims"),
    ({"campaign": "settle", "seed": -1}, "seed"),
    ({}, "pilot"),
    ({"campaign": "settle", "dataset": "past"}, "pilot"),
    ({"dataset": "nope"}, "pilot"),
])
def test_planner_api_refuses_bad_input_naming_the_field(rated, researcher, client, body, field):
    client.force_login(researcher)
    response = client.post("/api/planner/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field


def test_planner_api_refuses_someone_elses_campaign(rated, make_user, client):
    client.force_login(make_user("res2", "researcher"))
    response = client.post("/api/planner/", {"campaign": "settle"}, content_type="application/json")
    assert response.status_code == 404


def test_planner_page_shows_the_plan_and_field_errors(rated, researcher, client):
    client.force_login(researcher)
    page = client.get("/research/planner/?campaign=settle").content.decode()
    assert '<option value="settle" selected>' in page
    form = {"campaign": "settle", "dataset": "", "target": "top_k", "k": "1", "p": "0.9", "w": "0.1",
            "sources": "2, 8", "raters": "1, 3", "sims": "50", "seed": "0"}
    response = client.post("/research/planner/", form)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="planner-recommended"' in page and "sources ×" in page
    assert page.count("<tr data-met=") == 4
    bad = client.post("/research/planner/", {**form, "raters": "1, 99"})
    assert bad.status_code == 400
    text = bad.content.decode()
    assert 'id="id_raters_error"' in text and "from 1 to 20" in text


@pytest.mark.data
def test_planner_api_from_a_released_study(researcher, client, settings, simpeval_data_dir: Path):
    settings.SIMPEVAL_DATA_DIR = str(simpeval_data_dir)
    client.force_login(researcher)
    response = client.post("/api/planner/", {"dataset": "2022", "target": "alpha", "w": 0.2, "sources": [20, 60],
                                             "raters": [2, 3], "sims": 40}, content_type="application/json")
    assert response.status_code == 200, response.content
    plan = response.json()
    assert plan["pilot"] == "SimpEval_2022" and plan["pilot_sources"] == 60 and plan["pilot_systems"] == 6
    widths = {(row["sources"], row["raters"]): row["width"] for row in plan["rows"]}
    assert widths[(20, 2)] > widths[(60, 3)]


@pytest.mark.data
def test_an_imported_simpeval_2022_campaign_gets_the_released_studys_figures(researcher, client, simpeval_data_dir):
    from annotation.services.imports import campaign_import
    from evaluation.allocation.released import released_study
    from evaluation.allocation.stoprule import settledness

    with (simpeval_data_dir / "simpeval" / "simpeval_2022.csv").open("rb") as handle:
        campaign_import(kind="simpeval", file=handle, filename="simpeval_2022.csv", campaign_slug="s22",
                        analyse=False)
    from annotation.models import Campaign

    Campaign.objects.get(slug="s22").owners.add(researcher)
    client.force_login(researcher)
    figures = client.get("/api/campaigns/s22/settledness/").json()
    released = settledness(released_study("2022", simpeval_data_dir))
    assert figures["ratings"] == released.ratings == 1080
    assert figures["order"] == released.order
    assert [p["gap"] for p in figures["pairs"]] == [round(p.gap, 5) for p in released.pairs]
    assert figures["adjacent_pairs"] == 5 and 0 <= figures["settled_pairs"] <= 5
    page = client.get("/research/campaigns/s22/").content.decode()
    assert page.count("<tr data-pair=") == 5


def test_planner_page_reads_in_words_and_takes_the_focus_to_its_plan(rated, researcher, client):
    """Empty choices say 'none' (not a bare '–'), the seed says what it is, the plan's probability is a
    percentage of the simulated studies (not '1.00 of 50'), and the plan's heading takes the focus so a
    keyboard or screen-reader user lands on it below the long form."""
    client.force_login(researcher)
    page = client.get("/research/planner/").content.decode()
    assert '<option value="" selected>none</option>' in page and ">–</option>" not in page
    assert "the same seed and fields give the same plan" in page
    form = {"campaign": "settle", "dataset": "", "target": "top_k", "k": "1", "p": "0.9", "w": "0.1",
            "sources": "2, 8", "raters": "1, 3", "sims": "50", "seed": "0"}
    text = client.post("/research/planner/", form).content.decode()
    assert re.search(r"right in \d{1,3}% of 50 simulated studies \(wanted: 90%\)", text)
    assert '<h2 id="planner-result-title" tabindex="-1" autofocus>' in text
    assert "3.0 outputs per source" not in text and "3 outputs per source" in text


def test_the_panel_says_what_gap_and_se_are(rated, researcher, client):
    client.force_login(researcher)
    page = client.get("/research/campaigns/settle/").content.decode()
    panel = page[page.index('data-live-region="settled"'):page.index('id="settled-announce"')]
    assert "SE: its standard error from the bootstrap" in panel
    assert '<abbr title="standard error of the gap, from the bootstrap over sources">SE</abbr>' in panel


def test_planner_opened_from_a_dashboard_links_back_to_it(rated, researcher, client):
    client.force_login(researcher)
    page = client.get("/research/planner/?campaign=settle").content.decode()
    assert '<a href="/research/campaigns/settle/">Back to settle\'s dashboard</a>' in page
    assert "Back to" not in client.get("/research/planner/?campaign=someone-elses").content.decode()
