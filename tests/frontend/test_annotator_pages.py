from __future__ import annotations

import json
import re

import pytest

from annotation.models import Assignment, Output, RatingUnit, Source, System
from annotation.rules import ORDER_CONTRADICTION_POINTS
from frontend.views_annotator import render_instructions
from tests.factories import login, public_id, submit_assignment, tutorial_public_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def staffed(staffed_campaign):
    staffed_campaign.instructions = "Read **carefully**.\n\n<script>alert(1)</script> and *slowly*."
    staffed_campaign.save()
    return staffed_campaign



def submit_all(assignment: Assignment) -> None:
    submit_assignment(assignment)


def test_home_lists_campaigns_with_progress(staffed, annotators):
    mine = list(Assignment.objects.filter(annotator=annotators[0]))
    submit_all(mine[0])
    response = login(annotators[0]).get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert staffed.name in body
    assert f"1 / {len(mine)}" in body
    assert 'data-testid="continue-demo"' in body


def test_home_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_researcher_home_goes_to_research_pages(staffed, researcher):
    response = login(researcher).get("/")
    assert response.status_code == 302 and response["Location"] == "/research/"


def test_continue_opens_next_unfinished_source(staffed, annotators):
    response = login(annotators[0]).post("/campaigns/demo/continue/")
    first = Assignment.objects.filter(annotator=annotators[0]).order_by("source__order", "id").first()
    assert response.status_code == 302
    assert response["Location"] == f"/annotate/{first.pk}/"


def test_continue_is_refused_to_non_members(staffed, make_user):
    outsider = make_user("outsider")
    assert login(outsider).post("/campaigns/demo/continue/").status_code == 404
    assert login(outsider).get("/campaigns/demo/instructions/").status_code == 404


def test_instructions_render_safely(staffed, annotators):
    response = login(annotators[0]).get("/campaigns/demo/instructions/")
    body = response.content.decode()
    assert response.status_code == 200
    assert "<strong>carefully</strong>" in body and "<em>slowly</em>" in body
    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
    for score in ("100", "75", "50", "25"):
        assert f'<th scope="row">{score}</th>' in body
    assert "Start annotating" in body  # no tutorial in the demo campaign


def test_render_instructions_paragraphs():
    html = render_instructions("a *b* c\nd\n\n**e** & f")
    assert html == "<p>a <em>b</em> c<br>d</p>\n<p><strong>e</strong> &amp; f</p>"


def test_annotation_page_context(staffed, annotators, django_assert_max_num_queries):
    assignment = Assignment.objects.filter(annotator=annotators[0]).first()
    assert assignment is not None
    client = login(annotators[0])
    with django_assert_max_num_queries(15):
        response = client.get(f"/annotate/{assignment.pk}/")
    assert response.status_code == 200
    detail = response.context["detail"]
    assert detail["id"] == assignment.pk
    units = RatingUnit.objects.filter(source=assignment.source)
    # Opaque per-assignment ids (annotation.blinding), never the database ids.
    expected = {public_id(assignment, pk) for pk in units.values_list("id", flat=True)}
    assert {u["id"] for u in detail["units"]} == expected
    body = response.content.decode()
    assert 'data-annotate-root' in body and f'data-draft-url="/api/assignments/{assignment.pk}/draft/"' in body
    # The page's contradiction warning uses the server's rule (the practice check applies the same points).
    assert f'data-order-points="{ORDER_CONTRADICTION_POINTS}"' in body
    scripts = body.count("<script")
    assert scripts == body.count('<script type="module"') + body.count('<script id="rr-detail" type="application/json"')
    for name in System.objects.filter(campaign=staffed).values_list("name", flat=True):
        assert f'"{name}"' not in body
    embedded = json.loads(body.split('<script id="rr-detail" type="application/json">')[1].split("</script>")[0])
    assert [u["id"] for u in embedded["units"]] == [u["id"] for u in detail["units"]]


def test_annotator_cannot_open_another_annotators_page(staffed, annotators):
    theirs = Assignment.objects.filter(annotator=annotators[1]).first()
    assert login(annotators[0]).get(f"/annotate/{theirs.pk}/").status_code == 404
    assert login(annotators[2]).get(f"/annotate/{theirs.pk}/").status_code == 404


@pytest.fixture
def with_tutorial(staffed):
    source = Source.objects.create(campaign=staffed, external_id="tut-1", text="The big dog barked loudly.",
                                   is_tutorial=True, order=0)
    good = System.objects.create(campaign=staffed, name="TutGood")
    bad = System.objects.create(campaign=staffed, name="TutBad")
    units = {}
    for system, text in ((good, "The dog barked."), (bad, "Dog dog loudly the.")):
        unit = RatingUnit.objects.create(source=source, text=text, text_key=system.name, auto_category="deletion")
        Output.objects.create(source=source, system=system, unit=unit, text=text)
        units[system.name] = unit
    source.tutorial_key = {"ranking": ["TutGood", "TutBad"]}
    source.save()
    return units


def test_tutorial_blocks_work_until_passed(with_tutorial, annotators):
    client = login(annotators[0])
    response = client.post("/campaigns/demo/continue/")
    assert response["Location"] == "/campaigns/demo/instructions/"
    assignment = Assignment.objects.filter(annotator=annotators[0]).first()
    assert client.get(f"/annotate/{assignment.pk}/")["Location"] == "/campaigns/demo/instructions/"
    page = client.get("/campaigns/demo/tutorial/1/")
    assert page.status_code == 200 and page.context["mode"] == "tutorial"
    source = Source.objects.get(external_id="tut-1")
    good, bad = (tutorial_public_id(annotators[0], source, with_tutorial[name].pk) for name in ("TutGood", "TutBad"))
    assert {u["id"] for u in page.context["detail"]["units"]} == {good, bad}
    wrong = {"units": [{"unit": bad, "rank": 1, "category": "deletion", "rating": 70},
                       {"unit": good, "rank": 2, "category": "deletion", "rating": 30}]}
    answer = client.post("/campaigns/demo/tutorial/1/check/", wrong, content_type="application/json").json()
    assert answer["passed"] is False and answer["problems"]
    right = {"units": [{"unit": good, "rank": 1, "category": "deletion", "rating": 90},
                       {"unit": bad, "rank": 2, "category": "deletion", "rating": 5}]}
    answer = client.post("/campaigns/demo/tutorial/1/check/", right, content_type="application/json").json()
    assert answer == {"passed": True, "problems": [], "tutorials_left": 0}
    assert client.post("/campaigns/demo/continue/")["Location"] == f"/annotate/{assignment.pk}/"


def test_tutorial_checks_categories(with_tutorial, annotators):
    source = Source.objects.get(external_id="tut-1")
    source.tutorial_key = {"categories": {"TutGood": "deletion"}}
    source.save()
    client = login(annotators[0])
    good, bad = (tutorial_public_id(annotators[0], source, with_tutorial[name].pk) for name in ("TutGood", "TutBad"))
    body = {"units": [{"unit": good, "rank": 1, "category": "split", "rating": 90},
                      {"unit": bad, "rank": 2, "category": "deletion", "rating": 5}]}
    answer = client.post("/campaigns/demo/tutorial/1/check/", body, content_type="application/json").json()
    assert not answer["passed"] and "Deletion-focused" in answer["problems"][0]


def test_instructions_say_one_thing_about_groups_and_scores(staffed, annotators):
    """Issue 14, defect 9: the demo text, the instructions page and step 3 agree on what the groups and the
    scores mean; the anchors come from one list (SCALE_ANCHORS)."""
    from pathlib import Path

    from frontend.views_annotator import SCALE_ANCHORS

    demo = (Path(__file__).resolve().parents[2] / "fixtures" / "demo_instructions.md").read_text()
    client = login(annotators[0])
    instructions = client.get("/campaigns/demo/instructions/").content.decode()
    assignment = Assignment.objects.filter(annotator=annotators[0]).first()
    assert assignment is not None
    annotate = client.get(f"/annotate/{assignment.pk}/").content.decode()
    paraphrase = "it mainly rewords: words replaced, reordered or added, perhaps with a few deleted"
    assert paraphrase in instructions
    for text in (demo, instructions, annotate):
        assert "a mix of deleting and rewording" not in text and "mostly rewords" not in text
    assert "Scale anchors" not in demo  # the anchors are stated once, in the table
    for score, meaning in SCALE_ANCHORS:
        assert f"<dt>{score}</dt><dd>{meaning}</dd>" in annotate
        assert meaning in instructions
    assert "25 meaning lost" not in annotate


def test_error_pages_are_the_sites_own(staffed, annotators, settings):
    """Issue 14, defect 10: styled 403 and 404 pages; another annotator's assignment is the styled 404 even in
    development (DEBUG), where a raised Http404 would show Django's debug page; the API keeps JSON."""
    theirs = Assignment.objects.filter(annotator=annotators[1]).first()
    assert theirs is not None
    client = login(annotators[0])
    settings.DEBUG = True
    foreign = client.get(f"/annotate/{theirs.pk}/")
    assert foreign.status_code == 404
    assert "frontend/errors/404.html" in [t.name for t in foreign.templates]
    assert "no such sentence among your work" in foreign.content.decode()
    missing = client.get("/annotate/999999/")
    assert missing.status_code == 404 and "frontend/errors/404.html" in [t.name for t in missing.templates]
    settings.DEBUG = False
    nowhere = client.get("/no/such/page/")
    assert nowhere.status_code == 404 and "Page not found" in nowhere.content.decode()
    assert 'href="/static/frontend/base.css"' in nowhere.content.decode() or "base.css" in nowhere.content.decode()
    denied = client.get("/research/")
    assert denied.status_code == 403
    assert "Not allowed" in denied.content.decode() and "base.css" in denied.content.decode()
    assert client.get("/api/no-such-endpoint/").json() == {"detail": "Not found."}


def test_instructions_explain_the_steps_once(staffed, annotators):
    """Issue 44, defect 13: with the demo's text the instructions page explained the three steps twice (the
    campaign's text, then the page's own list), and its example read "Here's an new sentence"."""
    from pathlib import Path

    staffed.instructions = (Path(__file__).resolve().parents[2] / "fixtures" / "demo_instructions.md").read_text()
    staffed.save()
    page = login(annotators[0]).get("/campaigns/demo/instructions/").content.decode()
    for explanation in ("Each simplification is pre-sorted into a group", "press <em>Fix</em>",
                        "Fix</em> and correct it", "give each a score from 0 to 100"):
        assert page.count(explanation) <= 1, explanation
    for step in ("Categorise", "Check the edits", "Rank and rate"):
        assert len(re.findall(rf"<strong>{step}\.</strong>|Step \d — {step}", page)) == 1, step
    assert "an new" not in page and "Here's <strong class=\"mk-para\">a new</strong> sentence" in page


def test_the_submitted_page_says_how_many_are_left(staffed, annotators):
    """Issue 44, defect 13: the submitted page named the annotation's number but not how far the annotator is.
    The page carries, for after the submit, "k of n done, m left", or that the batch is complete."""
    mine = list(Assignment.objects.filter(annotator=annotators[0]).order_by("id"))
    assert len(mine) >= 2
    client = login(annotators[0])
    page = client.get(f"/annotate/{mine[0].pk}/").content.decode()
    assert f"<strong>1 of {len(mine)} done</strong>, {len(mine) - 1} left." in page
    submit_assignment(mine[0])
    assert f"<strong>1 of {len(mine)} done</strong>" in client.get(f"/annotate/{mine[0].pk}/").content.decode()
    for assignment in mine[1:-1]:
        submit_assignment(assignment)
    page = client.get(f"/annotate/{mine[-1].pk}/").content.decode()
    assert f"<strong>All {len(mine)} done</strong>: your batch is complete." in page
    # A batch per annotator larger than the work there is promises nothing more (annotator_share counts
    # only what they hold and the free slots they could still claim): every slot here is taken.
    staffed.batch_size = len(mine) + 3
    staffed.save()
    page = client.get(f"/annotate/{mine[-1].pk}/").content.decode()
    assert f"<strong>All {len(mine)} done</strong>: your batch is complete." in page
