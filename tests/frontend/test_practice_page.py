"""The practice-sentence page (issue 44, defect 6): a researcher marks sources as practice and enters the
expected answer, stored in the format the tutorial check reads; the admin uses the same check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotation.models import Assignment, Slot, Source
from annotation.services.tutorials import tutorial_problems

pytestmark = pytest.mark.django_db
PAGE = "/research/campaigns/demo/practice/"


def _outputs(source: Source) -> list[Any]:
    """The source's outputs, one per distinct text (the demo shows two systems' identical texts as one)."""
    seen: dict[int, Any] = {}
    for output in source.outputs.select_related("system").order_by("system__name"):
        seen.setdefault(output.unit_id, output)
    return list(seen.values())


def test_a_researcher_makes_a_practice_sentence_with_its_expected_answer(demo_campaign: Any, researcher: Any,
                                                                         annotators: list[Any], client: Any) -> None:
    client.force_login(researcher)
    assert PAGE in client.get("/research/campaigns/demo/").content.decode()
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    assert Slot.objects.filter(source=source).exists()
    outputs = _outputs(source)
    best, worst = outputs[0], outputs[1]
    page = client.get(PAGE, {"source": "harbour"})
    assert page.status_code == 200 and f'name="rank-{best.pk}"' in page.content.decode()

    bad = client.post(PAGE, {"action": "save", "source": "harbour", f"rank-{best.pk}": "first"})
    assert bad.status_code == 400
    assert f'id="rank-{best.pk}-error" role="alert">A rank is a whole number' in bad.content.decode()
    bad = client.post(PAGE, {"action": "save", "source": "harbour", f"rank-{best.pk}": "1"})
    assert bad.status_code == 400 and "rank at least two outputs" in bad.content.decode()
    assert 'value="1"' in bad.content.decode()  # what was typed stays
    assert not Source.objects.get(pk=source.pk).is_tutorial

    done = client.post(PAGE, {"action": "save", "source": "harbour", f"rank-{best.pk}": "1",
                              f"rank-{worst.pk}": "2", f"group-{best.pk}": "deletion"})
    assert done.status_code == 302
    source.refresh_from_db()
    assert source.is_tutorial and source.tutorial_key == {
        "ranking": [best.system.name, worst.system.name], "categories": {best.system.name: "deletion"}}
    assert not Slot.objects.filter(source=source).exists()  # never handed out as work
    # The stored answer is the one the tutorial check reads.
    others = source.units.exclude(pk__in=(best.unit_id, worst.unit_id)).values_list("pk", flat=True)
    middle = [{"unit": unit, "rank": k + 2, "rating": 60} for k, unit in enumerate(others)]
    last = len(others) + 2
    right = [{"unit": best.unit_id, "rank": 1, "rating": 90, "category": "deletion"}, *middle,
             {"unit": worst.unit_id, "rank": last, "rating": 20}]
    assert tutorial_problems(source=source, units=right) == []
    assert tutorial_problems(source=source, units=[{"unit": worst.unit_id, "rank": 1, "rating": 90}, *middle,
                                                   {"unit": best.unit_id, "rank": last, "rating": 20,
                                                    "category": "split"}])
    listing = client.get(PAGE).content.decode()
    assert f'id="practice-{source.pk}"' in listing and 'value="2"' in listing

    client.post(PAGE, {"action": "remove", "source": "harbour"})
    source.refresh_from_db()
    assert not source.is_tutorial and Slot.objects.filter(source=source).count() == demo_campaign.ratings_per_output


def test_a_source_given_out_cannot_become_practice_and_annotators_are_kept_out(
        staffed_campaign: Any, researcher: Any, annotators: list[Any], client: Any) -> None:
    source = Assignment.objects.filter(campaign=staffed_campaign).first().source
    a, b = _outputs(source)[:2]
    client.force_login(researcher)
    refused = client.post(PAGE, {"action": "save", "source": source.external_id, f"rank-{a.pk}": "1",
                                 f"rank-{b.pk}": "2"})
    assert refused.status_code == 409 and "has been given to annotators already" in refused.content.decode()
    assert client.get(PAGE, {"source": "nope"}).status_code == 400
    client.force_login(annotators[0])
    assert client.get(PAGE).status_code == 403


def test_the_admin_checks_the_expected_answer_with_the_same_rule(demo_campaign: Any, make_user: Any,
                                                                 client: Any) -> None:
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    client.force_login(make_user("boss", "admin"))
    url = f"/admin/annotation/source/{source.pk}/change/"
    form = {"campaign": demo_campaign.pk, "external_id": "harbour", "text": source.text, "order": source.order,
            "is_tutorial": "on", "tutorial_key": '{"ranking": ["Nobody", "Copy"]}'}
    response = client.post(url, form)
    assert response.status_code == 200 and "which is no output of source" in response.content.decode()
    names = [o.system.name for o in _outputs(source)][:2]
    response = client.post(url, {**form, "tutorial_key": json.dumps({"ranking": names})})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.is_tutorial and not Slot.objects.filter(source=source).exists()


def test_the_api_sets_practice_sentences_with_the_same_check(demo_campaign: Any, researcher: Any,
                                                             client_for: Any) -> None:
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    a, b = (o.system.name for o in _outputs(source)[:2])
    api = client_for(researcher)
    url = "/api/campaigns/demo/sources/harbour/practice/"
    bad = api.put(url, {"ranking": [a, "Nobody"]}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "ranking" and "'Nobody'" in bad.json()["detail"]
    bad = api.put(url, {"ranking": [a, b], "categories": {a: "shorter"}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "categories"
    good = api.put(url, {"ranking": [a, b], "categories": {a: "split"}}, format="json")
    assert good.status_code == 200 and good.json()["tutorial_key"] == {"ranking": [a, b], "categories": {a: "split"}}
    assert api.delete(url).status_code == 204 and not Source.objects.get(pk=source.pk).is_tutorial
    assert api.put("/api/campaigns/demo/sources/nope/practice/", {"ranking": [a, b]}, format="json").status_code == 404


def test_the_page_sets_expected_scores_and_the_check_holds_answers_to_them(demo_campaign: Any, researcher: Any,
                                                                           client: Any) -> None:
    """The judge reads a key's "ratings" (expected scores); the page, the API and the admin can now write them."""
    client.force_login(researcher)
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    outputs = _outputs(source)
    best, worst = outputs[0], outputs[1]
    page = client.get(PAGE, {"source": "harbour"}).content.decode()
    assert f'name="score-{best.pk}"' in page and "Expected score (0–100)" in page
    form = {"action": "save", "source": "harbour", f"rank-{best.pk}": "1", f"rank-{worst.pk}": "2"}

    bad = client.post(PAGE, {**form, f"score-{best.pk}": "high"})
    html = bad.content.decode()
    assert bad.status_code == 400
    assert f'id="score-{best.pk}-error" role="alert">A score is a number from 0 to 100' in html
    assert 'value="high"' in html and 'value="1"' in html  # what was typed stays
    bad = client.post(PAGE, {**form, f"score-{best.pk}": "150", f"score-{worst.pk}": "10"})
    html = bad.content.decode()
    assert bad.status_code == 400
    assert f'id="score-{best.pk}-error" role="alert">An expected score is a number from 0 to 100 (got 150)' in html
    assert 'value="150"' in html and 'value="10"' in html
    bad = client.post(PAGE, {**form, f"score-{best.pk}": "10", f"score-{worst.pk}": "90"})
    assert bad.status_code == 400
    assert f'id="score-{worst.pk}-error" role="alert">More than {best.system.name} (10)' in bad.content.decode()
    assert not Source.objects.get(pk=source.pk).is_tutorial

    done = client.post(PAGE, {**form, f"score-{best.pk}": "90", f"score-{worst.pk}": "12.5"})
    assert done.status_code == 302
    source.refresh_from_db()
    assert source.tutorial_key == {"ranking": [best.system.name, worst.system.name],
                                   "ratings": {best.system.name: 90, worst.system.name: 12.5}}
    others = source.units.exclude(pk__in=(best.unit_id, worst.unit_id)).values_list("pk", flat=True)
    middle = [{"unit": unit, "rank": k + 2, "rating": 50} for k, unit in enumerate(others)]
    last = len(others) + 2

    def answer(best_score: int, worst_score: int) -> list[dict[str, Any]]:
        return [{"unit": best.unit_id, "rank": 1, "rating": best_score}, *middle,
                {"unit": worst.unit_id, "rank": last, "rating": worst_score}]

    assert tutorial_problems(source=source, units=answer(80, 20)) == []
    # Right order and a clear gap, but the best scored 50 points below what it deserves: refused.
    problems = tutorial_problems(source=source, units=answer(40, 10))
    assert len(problems) == 1 and "deserves about 90; you gave 40" in problems[0]
    assert f'id="score-{best.pk}" name="score-{best.pk}" inputmode="decimal" size="5" maxlength="20" value="90"' \
        in client.get(PAGE).content.decode()  # shown again with the sentence

    # Scores alone are an expected answer.
    client.post(PAGE, {"action": "remove", "source": "harbour"})
    done = client.post(PAGE, {"action": "save", "source": "harbour", f"score-{worst.pk}": "0"})
    assert done.status_code == 302
    source.refresh_from_db()
    assert source.is_tutorial and source.tutorial_key == {"ratings": {worst.system.name: 0}}


def test_the_api_takes_expected_scores_through_the_same_check(demo_campaign: Any, researcher: Any,
                                                              client_for: Any) -> None:
    """Before, the API dropped "ratings" unread: a key with a score of 150 was stored without it (200)."""
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    a, b = (o.system.name for o in _outputs(source)[:2])
    api = client_for(researcher)
    url = "/api/campaigns/demo/sources/harbour/practice/"
    for score in (150, "high", True, -1):
        bad = api.put(url, {"ranking": [a, b], "ratings": {a: score}}, format="json")
        assert bad.status_code == 400, score
        assert bad.json()["field"] == "ratings" and a in bad.json()["detail"], bad.json()
    bad = api.put(url, {"ratings": {"Nobody": 50}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "ratings" and "'Nobody'" in bad.json()["detail"]
    bad = api.put(url, {"ranking": [a, b], "ratings": {a: 20, b: 80}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "ratings"  # the key contradicts itself
    assert not Source.objects.get(pk=source.pk).is_tutorial
    good = api.put(url, {"ranking": [a, b], "ratings": {a: 80, b: 20.5}}, format="json")
    assert good.status_code == 200, good.json()
    assert good.json()["tutorial_key"] == {"ranking": [a, b], "ratings": {a: 80, b: 20.5}}
    assert api.delete(url).status_code == 204


def test_the_admin_takes_expected_scores_through_the_same_check(demo_campaign: Any, make_user: Any,
                                                                client: Any) -> None:
    """Before, the admin refused any key with "ratings" (an unknown part), though the tutorial check reads it."""
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    a = _outputs(source)[0].system.name
    client.force_login(make_user("boss", "admin"))
    admin = f"/admin/annotation/source/{source.pk}/change/"
    form = {"campaign": demo_campaign.pk, "external_id": "harbour", "text": source.text, "order": source.order,
            "is_tutorial": "on"}
    for key in (f'{{"ratings": {{"{a}": NaN}}}}', json.dumps({"ratings": {a: True}})):
        response = client.post(admin, {**form, "tutorial_key": key})
        assert response.status_code == 200 and "an expected score is a number from 0 to 100" in \
            response.content.decode(), key
    response = client.post(admin, {**form, "tutorial_key": json.dumps({"ratings": {a: 85}})})
    assert response.status_code == 302
    source.refresh_from_db()
    assert source.is_tutorial and source.tutorial_key == {"ratings": {a: 85}}


def test_a_ranking_may_not_name_two_systems_with_the_same_text(demo_campaign: Any, researcher: Any,
                                                              annotators: list[Any], client_for: Any) -> None:
    """Two systems with the same output text are one output to rank. A key naming both (here as best and
    worst) was accepted, and no answer could pass it: the practice sentence kept every annotator out."""
    source = Source.objects.get(campaign=demo_campaign, external_id="harbour")
    names = dict(source.outputs.values_list("system__name", "unit_id"))
    assert names["Copy"] == names["Copy-2"]
    bad = client_for(researcher).put("/api/campaigns/demo/sources/harbour/practice/",
                                     {"ranking": ["Copy", "Copy-2"]}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "ranking"
    assert "same text" in bad.json()["detail"]
    assert not Source.objects.get(pk=source.pk).is_tutorial


def test_two_names_of_one_output_may_not_expect_different_groups_or_scores(demo_campaign: Any, researcher: Any,
                                                                           client_for: Any) -> None:
    """One output (Copy and Copy-2 share its text) gets one group and one score in an answer; a key giving its
    two names different groups, or scores too far apart for one score to meet both, passed no answer."""
    api = client_for(researcher)
    url = "/api/campaigns/demo/sources/harbour/practice/"
    bad = api.put(url, {"categories": {"Copy": "split", "Copy-2": "deletion"}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "categories" and "same text" in bad.json()["detail"]
    bad = api.put(url, {"ratings": {"Copy": 0, "Copy-2": 100}}, format="json")
    assert bad.status_code == 400 and bad.json()["field"] == "ratings"
    good = api.put(url, {"categories": {"Copy": "split", "Copy-2": "split"}, "ratings": {"Copy": 40, "Copy-2": 60}},
                   format="json")
    assert good.status_code == 200, good.content
