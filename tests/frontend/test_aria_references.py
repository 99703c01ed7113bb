"""Every id a page names in aria-describedby / aria-labelledby is on that page: a dangling reference gives a
screen reader nothing to read (Django names "<id>_helptext" and "<id>_error" on each field with help or errors,
so a template that renders the field by hand must give those ids to what it shows)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from annotation.services.operations import account_password_token
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.references: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name in ("aria-describedby", "aria-labelledby") and value:
                self.references += [(name, ref) for ref in value.split()]


def dangling(body: str) -> list[str]:
    page = _Ids()
    page.feed(body)
    return [f"{name}={ref}" for name, ref in page.references if ref not in page.ids]


def test_set_password_page_shows_the_password_rules_and_names_only_ids_it_has() -> None:
    person = UserFactory.create(username="dora")
    person.set_unusable_password()
    person.save()
    uid, token = account_password_token(person)
    url = f"/account/password/{uid}/{token}/"

    body = Client().get(url).content.decode()
    assert dangling(body) == []
    rules = re.search(r'id="id_new_password1_helptext"[^>]*>(.*?)</div>', body, re.S)
    assert rules and "characters" in rules.group(1)  # the validators' rules, before the first try

    response = Client().post(url, {"new_password1": "Long-enough-pw-17", "new_password2": "another-one-18"})
    assert response.status_code == 400
    body = response.content.decode()
    assert dangling(body) == []
    error = re.search(r'id="id_new_password2_error"[^>]*>(.*?)</', body, re.S)
    assert error and "match" in error.group(1)


def test_dashboard_with_a_failed_form_names_only_ids_it_has(demo_campaign, researcher) -> None:
    client = Client()
    client.force_login(researcher)
    assert dangling(client.get(f"/research/campaigns/{demo_campaign.slug}/").content.decode()) == []
    response = client.post(f"/research/campaigns/{demo_campaign.slug}/people/",
                           {"action": "add", "usernames": "nobody-by-this-name"})
    assert response.status_code == 400
    assert dangling(response.content.decode()) == []


def test_set_password_with_an_empty_post_is_a_400_with_the_form_in_error() -> None:
    """``request.POST or None`` left an empty POST's form unbound: a 200 with no error shown."""
    person = UserFactory.create(username="emil")
    person.set_unusable_password()
    person.save()
    uid, token = account_password_token(person)
    response = Client().post(f"/account/password/{uid}/{token}/", {})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="id_new_password1_error"' in body and dangling(body) == []
    person.refresh_from_db()
    assert not person.has_usable_password()
