"""Issue 44, defect 5: an error on a dashboard form is shown next to the field that caused it, with the
values kept and the field focused (so the browser scrolls to it)."""

from __future__ import annotations

import re

import pytest

from annotation.models import Assignment
from tests.factories import login

pytestmark = pytest.mark.django_db



def _input(body: str, element_id: str) -> str:
    found = re.search(rf'<input[^>]*id="{element_id}"[^>]*>', body)
    assert found, f"no input #{element_id}"
    return found.group(0)


def test_unknown_username_is_shown_next_to_the_field(demo_campaign, researcher, annotators):
    response = login(researcher).post(f"/research/campaigns/{demo_campaign.slug}/people/",
                                      {"action": "add", "usernames": "ann1 alice"})
    assert response.status_code == 400
    body = response.content.decode()
    field = _input(body, "add-usernames")
    assert 'aria-invalid="true"' in field and "add-usernames_error" in field and "autofocus" in field
    assert 'value="ann1 alice"' in field  # what was typed is kept
    error = re.search(r'<small class="field-error" id="add-usernames_error"[^>]*>(.*?)</small>', body, re.S)
    assert error and "alice" in error.group(1) and 'href="#account-form"' in error.group(1)
    assert 'id="account-form"' in body
    assert not Assignment.objects.exists()
    # Only the failed form is in error: the others render as usual.
    assert "aria-invalid" not in _input(body, "attention-rate")


def test_quality_share_error_is_shown_next_to_the_field_and_keeps_the_values(demo_campaign, researcher):
    response = login(researcher).post(f"/research/campaigns/{demo_campaign.slug}/quality/",
                                      {"action": "setup", "attention_rate": "2", "repeat_share": "0.3"})
    assert response.status_code == 400
    body = response.content.decode()
    field = _input(body, "attention-rate")
    assert 'aria-invalid="true"' in field and 'value="2"' in field and "autofocus" in field
    assert 'value="0.3"' in _input(body, "repeat-share")
    assert 'id="attention-rate_error"' in body and 'id="repeat-share_error"' not in body
    demo_campaign.refresh_from_db()
    assert demo_campaign.attention_rate == 0


def test_invite_error_is_shown_next_to_the_field(demo_campaign, researcher):
    response = login(researcher).post(f"/research/campaigns/{demo_campaign.slug}/invites/", {"max_uses": "abc"})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'aria-invalid="true"' in _input(body, "invite-max-uses") and 'id="invite-max-uses_error"' in body


@pytest.mark.parametrize(("action", "field", "element", "value"), [
    ("completion_url", "crowd_completion_url", "crowd-completion-url", "http://example.org/?cc={code}"),
    ("timeout", "idle_release_minutes", "idle-release-minutes", "soon"),
])
def test_a_crowd_setting_error_is_shown_next_to_its_field(demo_campaign, researcher, action, field, element, value):
    response = login(researcher).post(f"/research/campaigns/{demo_campaign.slug}/crowd/",
                                      {"action": action, field: value})
    assert response.status_code == 400
    body = response.content.decode()
    shown = _input(body, element)
    assert 'aria-invalid="true"' in shown and "autofocus" in shown
    assert f'id="{element}_error"' in body
    demo_campaign.refresh_from_db()
    assert demo_campaign.crowd_completion_url == "" and demo_campaign.idle_release_minutes is None


def test_places_out_of_range_are_shown_next_to_the_places_field(demo_campaign, researcher):
    """The service names the field ``crowd_places``; the form's field is ``places``, so a refused number
    (0, or over the maximum) landed in the form's summary with no field marked or focused."""
    response = login(researcher).post(f"/research/campaigns/{demo_campaign.slug}/crowd/",
                                      {"action": "places", "places": "0"})
    assert response.status_code == 400
    body = response.content.decode()
    field = _input(body, "crowd-places")
    assert 'aria-invalid="true"' in field and "autofocus" in field and 'value="0"' in field
    error = re.search(r'<small class="field-error" id="crowd-places_error"[^>]*>(.*?)</small>', body, re.S)
    assert error and "the places must be from 1 to" in error.group(1)


def _section(body: str, title_id: str, element_id: str) -> str:
    """The markup of the dashboard's <section id=element_id> (sections do not nest on the dashboard)."""
    start = body.index(f'<section class="card" aria-labelledby="{title_id}" id="{element_id}"')
    return body[start:body.index("</section>", start)]


def test_the_allocation_setting_has_its_own_card_not_the_crowd_platforms_one(demo_campaign, researcher):
    """It applies to every annotator, so it sits in its own card after the stop rule's panel (which counts the
    ratings it saves), with links to the simulations and the planner; a bad value comes back next to it."""
    client = login(researcher)
    body = client.get(f"/research/campaigns/{demo_campaign.slug}/").content.decode()
    people = _section(body, "people-title", "people")
    assert 'id="allocation-form"' not in people and "Crowd platforms" in people
    card = _section(body, "allocation-title", "allocation-card")
    assert 'id="allocation-form"' in card and "every annotator" in card
    assert f"/research/campaigns/{demo_campaign.slug}/allocation/" in card
    assert f"/research/planner/?campaign={demo_campaign.slug}" in card
    assert body.index('id="settled-panel"') < body.index('id="allocation-card"') < body.index('id="people"')
    # no formula of the code in the help a researcher reads
    assert "priority /" not in card and "(1 + screens)" not in card
    done = client.post(f"/research/campaigns/{demo_campaign.slug}/allocation-setting/", {"allocation": "adaptive"})
    assert done.status_code == 302 and done["Location"].endswith("#allocation-title")
    bad = client.post(f"/research/campaigns/{demo_campaign.slug}/allocation-setting/", {"allocation": "greedy"})
    assert bad.status_code == 400
    card = _section(bad.content.decode(), "allocation-title", "allocation-card")
    assert 'id="allocation_error"' in card and "uniform or adaptive" in card
    field = re.search(r"<select[^>]*>", card)
    assert field and 'aria-invalid="true"' in field.group(0) and "autofocus" in field.group(0)


def test_the_allocation_form_posts_to_its_own_address_like_the_other_settings(demo_campaign, researcher):
    """Its own card, its own endpoint (no ``action`` field riding on the crowd view's); the crowd view no longer
    takes ``action=allocation``; a GET is refused; someone who does not manage the campaign cannot set it."""
    client = login(researcher)
    url = f"/research/campaigns/{demo_campaign.slug}/allocation-setting/"
    body = client.get(f"/research/campaigns/{demo_campaign.slug}/").content.decode()
    form = re.search(r'<form [^>]*id="allocation-form"[^>]*>(.*?)</form>', body, re.S)
    assert form and f'action="{url}"' in form.group(0) and 'name="action"' not in form.group(1)
    assert client.get(url).status_code == 405
    old = client.post(f"/research/campaigns/{demo_campaign.slug}/crowd/",
                      {"action": "allocation", "allocation": "adaptive"})
    assert old.status_code == 400
    demo_campaign.refresh_from_db()
    assert demo_campaign.allocation == "uniform"
    missing = client.post(url, {})
    assert missing.status_code == 400 and 'id="allocation_error"' in missing.content.decode()
    for hostile in ("x" * 5000, "adaptive\x00", " "):
        assert client.post(url, {"allocation": hostile}).status_code == 400, hostile
    assert client.post(url, {"allocation": "adaptive"}).status_code == 302
    demo_campaign.refresh_from_db()
    assert demo_campaign.allocation == "adaptive"


def test_the_allocation_help_points_to_the_measurements_instead_of_quoting_them() -> None:
    """A measured figure in a help text goes stale with the next measurement: it points to where they live."""
    import re

    from frontend.forms_dashboard import AllocationForm

    text = str(AllocationForm.base_fields["allocation"].help_text)
    assert not re.search(r"\d+ ?%|tau \d", text), text
    assert "experiments/README.md" in text and "Allocation simulations" in text
