"""Campaign operations from the research pages: people, invite links, crowd links, batches, one item."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from annotation.models import Assignment, CampaignInvite, CrowdWorker, User
from annotation.services.operations import (
    assignment_reassign,
    crowd_enter,
    crowd_open,
    crowd_visit_from_query,
    invite_accept,
    invite_create,
)
from core.errors import Conflict, NotFound, ServiceError
from tests.factories import login, submit_assignment

pytestmark = pytest.mark.django_db



def test_add_and_remove_annotators_from_the_dashboard(demo_campaign, researcher, annotators):
    client = login(researcher)
    url = f"/research/campaigns/{demo_campaign.slug}/people/"
    response = client.post(url, {"action": "add", "usernames": "ann1, ann2"}, follow=True)
    assert response.status_code == 200
    assert Assignment.objects.filter(annotator=annotators[0]).exists()
    body = response.content.decode()
    # The owner sees who is behind the pseudonym.
    assert annotators[0].pseudonym in body and "ann1" in body
    response = client.post(url, {"action": "add", "usernames": "ann1 nobody"}, follow=True)
    assert "no annotator with the username(s) nobody can be added" in response.content.decode()
    client.post(url, {"action": "remove", "username": "ann2", "confirm": "1"})
    assert not demo_campaign.memberships.get(annotator=annotators[1]).active
    assert not Assignment.objects.filter(annotator=annotators[1]).exclude(status="released").exists()


def test_people_pages_are_for_owners(demo_campaign, annotators, make_user):
    other = make_user("res2", "researcher")
    response = login(other).post(f"/research/campaigns/{demo_campaign.slug}/people/",
                                 {"action": "add", "usernames": "ann1"})
    assert response.status_code == 404
    assert not Assignment.objects.exists()


def test_invite_link_makes_an_annotator_account_on_the_campaign(demo_campaign, researcher):
    client = login(researcher)
    client.post(f"/research/campaigns/{demo_campaign.slug}/invites/", {"max_uses": "1"})
    invite = CampaignInvite.objects.get(campaign=demo_campaign)
    guest = Client()
    assert guest.get(f"/invite/{invite.token}/").status_code == 200
    response = guest.post(f"/invite/{invite.token}/", {"username": "newbie", "password": "Long-enough-pw-17"})
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    assert user.role == User.Role.ANNOTATOR and user.email == ""
    assert demo_campaign.memberships.filter(annotator=user, active=True).exists()
    assert Assignment.objects.filter(annotator=user).exists()
    # Used up: the link no longer admits anyone.
    assert Client().get(f"/invite/{invite.token}/").status_code == 404
    with pytest.raises(NotFound):
        invite_accept(token=invite.token, username="second", password="Long-enough-pw-17")


def test_invite_refuses_taken_usernames_and_bad_email(demo_campaign, researcher, annotators):
    invite = invite_create(campaign=demo_campaign, by=researcher)
    with pytest.raises(Conflict):
        invite_accept(token=invite.token, username="ANN1", password="Long-enough-pw-17")
    with pytest.raises(ServiceError, match="e-mail"):
        invite_accept(token=invite.token, username="x1", password="Long-enough-pw-17", email="not-mail")
    response = Client().post(f"/invite/{invite.token}/", {"username": "x1", "password": "Long-enough-pw-17",
                                                          "email": "not-mail"})
    assert response.status_code == 400 and not User.objects.filter(username="x1").exists()


def test_prolific_link_creates_then_resumes_a_passwordless_account(demo_campaign):
    crowd_open(campaign=demo_campaign)
    url = f"/crowd/{demo_campaign.slug}/{demo_campaign.crowd_token}/"
    worker = Client()
    response = worker.get(url, {"PROLIFIC_PID": "5f1a2b", "STUDY_ID": "st1", "SESSION_ID": "se1"})
    assert response.status_code == 302
    record = CrowdWorker.objects.get(worker_id="5f1a2b")
    assert record.platform == "prolific" and not record.user.has_usable_password()
    del worker.cookies[settings.SESSION_COOKIE_NAME]  # signed out; the crowd cookie still binds the browser
    again = worker.get(url, {"PROLIFIC_PID": "5f1a2b", "STUDY_ID": "st1", "SESSION_ID": "se2"})
    assert again.status_code == 302
    assert worker.get(f"/campaigns/{demo_campaign.slug}/instructions/").status_code == 200
    assert CrowdWorker.objects.count() == 1
    assert CrowdWorker.objects.get().session_id == "se2"
    assert Client().get(url).status_code == 400  # no worker id
    assert Client().get(url, {"workerId": "../x"}).status_code == 400
    assert Client().get(f"/crowd/{demo_campaign.slug}/wrong/", {"workerId": "W1"}).status_code == 404


def test_mturk_visit_and_bad_ids():
    visit = crowd_visit_from_query({"workerId": "A1B2", "assignmentId": "X9"})
    assert (visit.platform, visit.worker_id, visit.session_id) == ("mturk", "A1B2", "X9")
    with pytest.raises(ServiceError):
        crowd_visit_from_query({"PROLIFIC_PID": "a" * 65})


def test_fixed_batch_then_completion_code(demo_campaign):
    demo_campaign.batch_size = 1
    demo_campaign.ratings_per_output = 1
    demo_campaign.save()
    crowd_open(campaign=demo_campaign)
    visit = crowd_visit_from_query({"PROLIFIC_PID": "p1"})
    user = crowd_enter(slug=demo_campaign.slug, token=demo_campaign.crowd_token, visit=visit).user
    mine = list(Assignment.objects.filter(annotator=user))
    assert len(mine) == 1  # the batch, not every source
    client = login(user)
    assert "Not finished yet" in client.get(f"/campaigns/{demo_campaign.slug}/done/").content.decode()
    submit_assignment(mine[0])
    response = client.post(f"/campaigns/{demo_campaign.slug}/continue/")
    assert response.status_code == 302 and response["Location"].endswith("/done/")
    done = client.get(response["Location"])
    assert demo_campaign.completion_code in done.content.decode()
    assert Assignment.objects.filter(annotator=user).count() == 1


def test_item_view_shows_the_annotation_and_reopens_it(staffed_campaign, researcher, annotators):
    assignment = Assignment.objects.filter(annotator=annotators[0]).order_by("id").first()
    assert assignment is not None
    submit_assignment(assignment)
    client = login(researcher)
    url = f"/research/campaigns/{staffed_campaign.slug}/items/{assignment.pk}/"
    body = client.get(url).content.decode()
    assert assignment.source.text in body and "Version 1" in body and "50" in body
    client.post(url, {"action": "reopen"})
    assert assignment.annotations.filter(version=2, status="draft").exists()
    assert "Version 2" in client.get(url).content.decode()


def test_reassign_moves_an_unfinished_source(staffed_campaign, researcher, annotators):
    from annotation.services.assignments import campaign_add_annotators

    campaign_add_annotators(campaign=staffed_campaign, annotators=[annotators[2]])
    theirs = set(Assignment.objects.filter(annotator=annotators[2]).values_list("source_id", flat=True))
    assignment = Assignment.objects.filter(annotator=annotators[0]).exclude(source_id__in=theirs).first()
    assert assignment is not None
    response = login(researcher).post(f"/research/campaigns/{staffed_campaign.slug}/items/{assignment.pk}/",
                                      {"action": "reassign", "username": annotators[2].username})
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == "released"
    new = Assignment.objects.get(source=assignment.source, annotator=annotators[2])
    assert new.slot.source_id == assignment.source_id
    with pytest.raises(ServiceError):
        assignment_reassign(assignment=new, to=annotators[2])


def test_invite_and_crowd_through_the_api(demo_campaign, researcher, client_for):
    api = client_for(researcher)
    response = api.post(f"/api/campaigns/{demo_campaign.slug}/invites/", {"max_uses": 2}, format="json")
    assert response.status_code == 201 and response.json()["url"].endswith(f"/invite/{response.json()['token']}/")
    assert api.post(f"/api/campaigns/{demo_campaign.slug}/invites/", {"max_uses": 0}, format="json").status_code == 400
    crowd = api.post(f"/api/campaigns/{demo_campaign.slug}/crowd/").json()
    demo_campaign.refresh_from_db()
    assert crowd["completion_code"] == demo_campaign.completion_code
    assert f"/crowd/{demo_campaign.slug}/{demo_campaign.crowd_token}/" in crowd["url"]


def test_a_researcher_makes_an_annotator_account_whose_owner_sets_a_password_once(demo_campaign, researcher,
                                                                                 annotators, client, settings):
    """Issue 44 (6): accounts came only from invite links (or the admin)."""
    import re

    from annotation.models import CampaignAnnotator

    client.force_login(researcher)
    page = client.get("/research/campaigns/demo/").content.decode()
    assert 'action="/research/campaigns/demo/accounts/"' in page
    response = client.post("/research/campaigns/demo/accounts/", {"username": "dora", "email": "dora@example.org"},
                           follow=True)
    text = response.content.decode()
    link = re.search(r"http://testserver(/account/password/[^/]+/[^/\s<]+/)", text)
    assert link and "Account dora made" in text
    dora = User.objects.get(username="dora")
    assert dora.role == "annotator" and not dora.has_usable_password() and dora.email == "dora@example.org"
    assert CampaignAnnotator.objects.filter(campaign=demo_campaign, annotator=dora, active=True).exists()
    assert link.group(1) not in client.get("/research/campaigns/demo/").content.decode()  # shown once
    taken = client.post("/research/campaigns/demo/accounts/", {"username": "DORA"})
    assert taken.status_code == 409
    error = re.search(r'<small class="field-error" id="account-username_error"[^>]*>(.*?)</small>',
                      taken.content.decode(), re.S)
    assert error and "the username &#x27;DORA&#x27; is taken" in error.group(1)
    bad = client.post("/research/campaigns/demo/accounts/", {"username": "eve", "email": "nope"})
    assert bad.status_code == 400
    assert re.search(r'id="account-email_error"[^>]*>[^<]*this is not an e-mail address', bad.content.decode())
    assert 'value="eve"' in bad.content.decode()  # what was typed is kept
    assert not User.objects.filter(username="eve").exists()

    person = Client()
    assert person.get(link.group(1)).status_code == 200
    short = person.post(link.group(1), {"new_password1": "x", "new_password2": "y"})
    assert short.status_code == 400 and 'class="field-error"' in short.content.decode()
    done = person.post(link.group(1), {"new_password1": "long-enough-pass-42", "new_password2": "long-enough-pass-42"})
    assert done.status_code == 302
    assert User.objects.get(username="dora").check_password("long-enough-pass-42")
    assert person.get(link.group(1)).status_code == 404  # it works once

    client.force_login(annotators[0])
    assert client.post("/research/campaigns/demo/accounts/", {"username": "mallory"}).status_code == 403


def test_making_accounts_is_throttled_per_researcher(demo_campaign, researcher, client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "accounts": "2/hour"}}
    client.force_login(researcher)
    for name in ("a1", "a2", "a3"):
        page = client.post("/research/campaigns/demo/accounts/", {"username": name}, follow=True).content.decode()
    assert "too many annotator accounts made (2 per 60 minutes)" in page
    assert not User.objects.filter(username="a3").exists()


def test_a_wrong_crowd_link_and_a_server_error_are_the_sites_own_pages(demo_campaign, settings):
    """Issue 44, defect 7: a crowd link with a wrong token is the styled 404 also in development (DEBUG), where
    a raised Http404 is Django's debug page, which has no viewport (980 px wide on a phone); a server error is
    the site's own page with the viewport, and JSON under /api/."""
    from django.test import RequestFactory

    from frontend.errors import handler500

    crowd_open(campaign=demo_campaign)
    settings.DEBUG = True
    wrong = Client().get(f"/crowd/{demo_campaign.slug}/wrong/", {"PROLIFIC_PID": "W1"})
    assert wrong.status_code == 404 and "frontend/errors/404.html" in [t.name for t in wrong.templates]
    assert 'name="viewport"' in wrong.content.decode()
    page = handler500(RequestFactory().get("/research/"))
    assert page.status_code == 500
    assert 'name="viewport"' in page.content.decode() and "Something went wrong" in page.content.decode()
    api = handler500(RequestFactory().get("/api/campaigns/"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"


def test_the_people_table_counts_each_annotators_sources_behind_a_disclosure(
    staffed_campaign, researcher, annotators, web_client_for
):
    """Issue 44, defect 7: one line per annotator on a phone, not a link per source (60 in a real campaign)."""
    import re

    page = web_client_for(researcher).get(f"/research/campaigns/{staffed_campaign.slug}/").content.decode()
    mine = Assignment.objects.filter(annotator=annotators[0]).count()
    row = page[page.index(f'data-pseudonym="{annotators[0].pseudonym}"'):]
    row = row[:row.index("</tr>")]
    assert re.search(r'<details class="source-links"><summary>(\d+) sources?</summary>', row).group(1) == str(mine)
    assert row.count('href="/research/campaigns/') == mine  # every source still one click away
    assert 'role="region"' in page and 'aria-label="People table"' in page


def test_an_e_mail_address_too_long_for_its_column_is_refused_on_its_field(demo_campaign, researcher, client):
    """An address that Django's validator accepts (up to 320 characters) but the account's column (254) cannot
    hold was a 500 (PostgreSQL: value too long) on the accounts form and the invite sign-up."""
    long_address = "a" * 60 + "@" + ("b" * 60 + ".") * 4 + "org"
    assert len(long_address) > 254
    client.force_login(researcher)
    answer = client.post("/research/campaigns/demo/accounts/", {"username": "longmail", "email": long_address})
    assert answer.status_code == 400
    assert "at most 254 characters" in answer.content.decode()
    assert not User.objects.filter(username="longmail").exists()
    invite = invite_create(campaign=demo_campaign, by=researcher)
    with pytest.raises(ServiceError) as refused:
        invite_accept(token=invite.token, username="longmail2", password="long-enough-pass-42", email=long_address)
    assert refused.value.field == "email"


@pytest.mark.parametrize(("timeout", "said"), [(3 * 86400, "for 3 days"), (86400, "for 1 day"),
                                               (6 * 3600, "for 6 hours"), (90 * 60, "for 90 minutes")])
def test_the_account_message_says_how_long_the_link_works_in_words(demo_campaign, researcher, client, settings,
                                                                   timeout, said):
    """It said "for 0 days" when PASSWORD_RESET_TIMEOUT was under a day."""
    settings.PASSWORD_RESET_TIMEOUT = timeout
    client.force_login(researcher)
    text = client.post("/research/campaigns/demo/accounts/", {"username": "dora"}, follow=True).content.decode()
    assert f"it works once, {said})" in text and "0 days" not in text
