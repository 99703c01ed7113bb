"""A metric's card: the page, the API and `meta_evaluate --metric NAME` show the same figures from one function."""

from __future__ import annotations

import html
import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from metrics.perturb.sanity import sanity_evaluate
from metrics.services.metric_card import metric_card_from_result, metric_card_text
from metrics.services.sensitivity import metric_sensitivity_record
from tests.metrics.test_sensitivity import RUN, _rows

pytestmark = pytest.mark.django_db

SANITY = sanity_evaluate(  # identical copies best on both sources, the unrelated sentence worst on one of two
    [{"candidates": {"identical_to_source": 1.0, "identical_to_reference": 1.0, "unrelated": 0.0},
      "texts": {}, "others": {"a": 0.5}},
     {"candidates": {"identical_to_source": 1.0, "identical_to_reference": 1.0, "unrelated": 0.9},
      "texts": {}, "others": {"a": 0.5}}],
    higher_is_better=True,
)


@pytest.fixture
def carded(rated_campaign: Any, annotators: Any, researcher: Any) -> Any:
    """A rated campaign its researcher owns, scored with SARI, and SARI's testbed report with sanity checks."""
    campaign = rated_campaign("card", annotators, n_sources=4)
    campaign.owners.add(researcher)
    call_command("meta_evaluate", "--campaign", "card", "--metric", "sari,fkgl", "--n-boot", "0", stdout=StringIO())
    metric_sensitivity_record(slopes=_rows("sari", {"delete", "negate"}), signatures={}, run=RUN,
                              sanity={"sari": SANITY})
    return campaign


def test_the_api_card_carries_the_panels_figures_sensitivity_sanity_and_signature(
    carded: Any, client_for: Any, researcher: Any
) -> None:
    client = client_for(researcher)
    panel = client.get("/api/campaigns/card/metrics/?n_boot=50").json()["metrics"]["sari"]
    card = client.get("/api/campaigns/card/metrics/sari/card/?n_boot=50").json()
    assert card["metric"] == "sari" and card["signature"] == panel["signature"] and "sari" in card["signature"]
    assert card["output"]["kendall"] == panel["kendall"] and card["output"]["kendall"]["all"] is not None
    assert card["output"]["kendall_ci"] == panel["kendall_ci"] and card["output"]["pearson"] == panel["pearson"]
    assert card["output"]["acc_eq"] == panel["acc_eq"] and card["output"]["acc_eq"]["z"]["value"] is not None
    everything = client.get("/api/campaigns/card/metrics/?n_boot=50").json()
    system = everything["system"]
    assert card["system"]["figures"]["z"]["accuracy"] == system["metrics"]["sari"]["z"]["accuracy"]
    assert card["system"]["means"] == system["metrics"]["sari"]["means"] and len(card["system"]["systems"]) >= 2
    for figure in ("accuracy", "pearson", "acc_eq"):
        place = card["system"]["clusters"]["z"][figure]
        assert place["cluster"] == system["clusters"]["z"][figure]["rank"]["sari"] and place["metrics"] == 2
        assert place["test"] == system["clusters"]["z"][figure]["test"]
    assert card["output"]["clusters"]["z"]["cluster"] == everything["output_clusters"]["z"]["rank"]["sari"]
    assert card["sensitivity"]["responds_as_expected"].startswith("informativeness 1/3")
    assert card["sanity"]["unrelated"] | {} == {**SANITY["unrelated"]} and card["sanity"]["unrelated"]["passed"] == 1
    assert card["sanity_text"] == ("identical to source 2/2 pass, identical to reference 2/2 pass, "
                                   "unrelated 1/2 FAIL")
    fkgl = client.get("/api/campaigns/card/metrics/fkgl/card/?n_boot=50").json()
    assert fkgl["sensitivity"] is None and fkgl["sanity"] is None and fkgl["output"]["kendall"] == (
        client.get("/api/campaigns/card/metrics/?n_boot=50").json()["metrics"]["fkgl"]["kendall"])


def test_an_unknown_or_unscored_metric_is_a_404_that_names_it(carded: Any, client_for: Any, researcher: Any,
                                                             web_client_for: Any) -> None:
    client = client_for(researcher)
    response = client.get("/api/campaigns/card/metrics/nosuch/card/?n_boot=0")
    assert response.status_code == 404 and "'nosuch'" in response.json()["detail"]
    response = client.get("/api/campaigns/card/metrics/bleu/card/?n_boot=0")  # a metric, but never scored here
    assert response.status_code == 404
    assert "'bleu' has no stored scores for campaign 'card'" in response.json()["detail"]
    assert "sari" in response.json()["detail"]  # and which metrics it has
    page = web_client_for(researcher).get("/research/campaigns/card/metrics/nosuch/")
    assert page.status_code == 404 and "nosuch" in page.content.decode()
    assert client.get("/api/campaigns/card/metrics/sari/card/?n_boot=-1").status_code == 400


def test_the_page_shows_the_same_figures_as_the_api(carded: Any, client_for: Any, researcher: Any,
                                                    web_client_for: Any) -> None:
    card = client_for(researcher).get("/api/campaigns/card/metrics/sari/card/?n_boot=1000").json()
    page = web_client_for(researcher).get("/research/campaigns/card/metrics/sari/")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    assert card["signature"] in text
    row = text.split('data-figure="kendall-all"')[1].split("</tr>")[0]
    assert f"{card['output']['kendall']['all']:.3f}" in row
    low, high = card["output"]["kendall_ci"]["all"]
    assert f"[{low:.3f}, {high:.3f}]" in row
    assert "informativeness 1/3" in text and "System level" in text
    accuracy = text.split('data-figure="system-accuracy"')[1].split("</tr>")[0]
    assert f"{card['system']['figures']['z']['accuracy']['value']:.3f}" in accuracy
    place = card["system"]["clusters"]["z"]["accuracy"]
    assert f"{place['cluster']} of {place['clusters']}" in accuracy
    first = card["system"]["mean_rows"]["z"][0]
    means = text.split(f'data-system="{first["system"]}"')[1].split("</tr>")[0]
    assert f"{first['metric']:.3f}" in means and f"{first['human']:.3f}" in means
    sanity = text.split('data-sanity="sari"')[1].split("</tr>")[0]
    assert sanity.count('data-passes="yes"') == 2 and sanity.count('data-passes="no"') == 1 and "1/2" in sanity
    dashboard = web_client_for(researcher).get("/research/campaigns/card/").content.decode()
    assert "/research/campaigns/card/metrics/sari/" in dashboard  # the metrics panel links each card


def test_meta_evaluate_prints_one_metrics_card(carded: Any, client_for: Any, researcher: Any) -> None:
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "card", "--metric", "sari", "--n-boot", "50", "--format", "table",
                 stdout=out)
    text = out.getvalue()
    card = client_for(researcher).get("/api/campaigns/card/metrics/sari/card/?n_boot=50").json()
    assert text.startswith("metric card: sari on card\n") and f"signature: {card['signature']}" in text
    assert f"Kendall tau-like (all): {card['output']['kendall']['all']:.3f}" in text
    assert "sanity checks: identical to source 2/2 pass, identical to reference 2/2 pass, unrelated 1/2 FAIL" in text
    assert "perturbation sensitivity: responds as expected to informativeness 1/3" in text
    assert "system level:" in text and "accuracy (z): " in text and "cluster 1 of" in text
    assert text == metric_card_text(card)  # the command prints the card the API gives
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "card", "--metric", "sari", "--n-boot", "0", "--threshold", "0",
                 stdout=out)  # another tie threshold than the stored figures': the card of this run
    assert out.getvalue().startswith("metric card: sari on card\n") and "Kendall tau-like (all): " in out.getvalue()


def test_system_level_figures_and_clusters_enter_the_card_where_the_result_has_them() -> None:
    clusters = {"figure": "accuracy", "test": "paired permutation test over sources", "correction": "holm",
                "alpha": 0.05, "order": ["a", "b", "c"], "rank": {"a": 1, "b": 1, "c": 2},
                "value": {"a": 0.9, "b": 0.8, "c": 0.5}, "pairs": []}
    result = {
        "campaign": "x", "kind": "kendall", "outputs": 6, "threshold": 5.0, "n_boot": 0,
        "metrics": {"b": {"signature": "b|v1", "kendall": {"all": 0.2}, "pairs": {}, "kendall_ci": {}}},
        "system": {"systems": ["s1", "s2"], "humans": ["z"], "human_means": {"z": {"s1": 0.1, "s2": -0.1}},
                   "metrics": {"b": {"means": {"z": {"s1": 2.0, "s2": 1.0}},
                                     "z": {"accuracy": {"value": 1.0, "agree": 1, "pairs": 1,
                                                        "ci_sources": [1.0, 1.0], "ci_systems": [None, None]}}}},
                   "clusters": {"z": {"accuracy": clusters}}, "williams": {"z": []}},
    }
    card = metric_card_from_result(result, "b")
    assert card["system"]["figures"]["z"]["accuracy"]["value"] == 1.0
    assert card["system"]["clusters"]["z"]["accuracy"] | {} == {
        "cluster": 1, "clusters": 2, "metrics": 3, "with": ["a"], "figure": "accuracy",
        "test": "paired permutation test over sources", "correction": "holm", "alpha": 0.05}
    text = metric_card_text(card)
    assert "accuracy (z): 1.000 [1.000, 1.000] (sources) (systems), 1/1 pairs; cluster 1 of 2 among 3" in text
    assert "system means against z (metric / humans): s1 2.000 / 0.100, s2 1.000 / -0.100" in text
    assert "clusters (1 = the best group; its members are not significantly different): paired permutation" in text
    assert metric_card_from_result({**result, "system": None}, "b")["system"] is None


def test_the_page_names_each_figure_in_words_and_says_what_it_is_measured_against(
    carded: Any, web_client_for: Any, researcher: Any,
) -> None:
    """No bare code names (`acc_eq`, `accuracy`, `z`) as a figure's only label: each row says what it is."""
    text = html.unescape(web_client_for(researcher).get("/research/campaigns/card/metrics/sari/").content.decode())
    label = text.split('data-figure="system-accuracy"')[1].split("</td>")[0]
    assert "Pairwise accuracy: system pairs ordered as the humans order them" in label and " of 3 pairs" in label
    assert "Pearson r of the system means" in text.split('data-figure="system-pearson"')[1].split("</td>")[0]
    assert "Kendall τ-b" in text.split('data-figure="system-kendall"')[1].split("</td>")[0]
    assert "(acc_eq)" in text.split('data-figure="system-acc_eq"')[1].split("</td>")[0]
    assert "<caption>Against the humans' mean z-score</caption>" in text
    assert "against the humans' mean z-score" in text.split('data-figure="acc_eq-z"')[1].split("</td>")[0]
    terms = text.split('id="card-output-terms"')[1].split("</p>")[0]
    assert "tie threshold" in terms and "sari's own units" in terms and "n/a: no pairs" in terms


def test_the_metrics_api_takes_the_commands_level(carded: Any, client_for: Any, researcher: Any) -> None:
    """`?level=` gives what `meta_evaluate --level` gives (one function); a bad level is a 400 naming it."""
    client = client_for(researcher)
    system = client.get("/api/campaigns/card/metrics/?n_boot=20&level=system").json()
    assert system["level"] == "system" and "output_clusters" not in system and "acc_eq" not in system["metrics"]["sari"]
    out = StringIO()
    call_command("meta_evaluate", "--campaign", "card", "--metric", "all", "--n-boot", "20", "--level", "system",
                 "--json", stdout=out)
    assert system["system"]["metrics"]["sari"] == json.loads(out.getvalue())["system"]["metrics"]["sari"]
    output = client.get("/api/campaigns/card/metrics/?n_boot=20&level=output").json()
    assert output["level"] == "output" and "system" not in output and "acc_eq" in output["metrics"]["sari"]
    assert client.get("/api/campaigns/card/metrics/?n_boot=20").json()["level"] == "both"
    bad = client.get("/api/campaigns/card/metrics/?level=systems")
    assert bad.status_code == 400 and "level" in str(bad.json())
