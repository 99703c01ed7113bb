from __future__ import annotations

import pytest
from django.http import Http404

from annotation.models import Campaign, User
from annotation.selectors import CampaignPurpose, campaign_get_visible, campaign_list_visible
from annotation.services.assignments import campaign_add_annotators, campaign_remove_annotator
from annotation.services.campaigns import campaign_create

pytestmark = pytest.mark.django_db

VIEW, MANAGE, ANNOTATE = CampaignPurpose.VIEW, CampaignPurpose.MANAGE, CampaignPurpose.ANNOTATE


def test_one_rule_for_who_sees_which_campaign(make_user, researcher, admin_user, annotators):
    other = make_user("res2", "researcher")
    mine = campaign_create(name="Mine", slug="mine", owner=researcher)
    campaign_create(name="Theirs", slug="theirs", owner=other)
    left = campaign_create(name="Left", slug="left", owner=other)
    campaign_add_annotators(campaign=mine, annotators=[annotators[0]])
    campaign_add_annotators(campaign=left, annotators=[annotators[0]])
    campaign_remove_annotator(campaign=left, annotator=annotators[0])

    def slugs(user, purpose):
        return sorted(campaign_list_visible(user=user, purpose=purpose).values_list("slug", flat=True))

    expected: dict[User, dict[CampaignPurpose, list[str]]] = {
        admin_user: {VIEW: ["left", "mine", "theirs"], MANAGE: ["left", "mine", "theirs"], ANNOTATE: []},
        researcher: {VIEW: ["mine"], MANAGE: ["mine"], ANNOTATE: []},
        annotators[0]: {VIEW: ["mine"], MANAGE: [], ANNOTATE: ["mine"]},  # not "left": no longer active
        annotators[1]: {VIEW: [], MANAGE: [], ANNOTATE: []},
    }
    for user, by_purpose in expected.items():
        for purpose, wanted in by_purpose.items():
            assert slugs(user, purpose) == wanted, (user.username, purpose)
    assert campaign_get_visible(user=researcher, slug="mine", purpose=MANAGE) == mine
    # "Not yours" and "no such campaign" are the same 404, so slugs do not leak.
    for slug in ("theirs", "nope"):
        with pytest.raises(Http404, match="No such campaign"):
            campaign_get_visible(user=researcher, slug=slug, purpose=MANAGE)
    with pytest.raises(Http404):
        campaign_get_visible(user=annotators[0], slug="mine", purpose=MANAGE)
    assert Campaign.objects.count() == 3


def test_every_interface_answers_404_for_a_campaign_the_user_may_not_see(make_user, researcher, client_for, client):
    other = make_user("res2", "researcher")
    campaign_create(name="Theirs", slug="theirs", owner=other)
    api = client_for(researcher)
    for url in ("/api/campaigns/theirs/", "/api/campaigns/theirs/progress/", "/api/campaigns/theirs/report/",
                "/api/lens/campaigns/theirs/leaderboard/"):
        assert api.get(url).status_code == 404, url
    client.force_login(researcher)
    assert client.get("/research/campaigns/theirs/").status_code == 404
