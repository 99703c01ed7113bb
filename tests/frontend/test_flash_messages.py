"""Issue 44, defect 11: a flash message is shown once (base.html renders them; no page does again)."""

from __future__ import annotations

import pytest

from tests.factories import login

pytestmark = pytest.mark.django_db



def test_flash_message_is_shown_once(demo_campaign, researcher, annotators):
    client = login(researcher)
    response = client.post(f"/research/campaigns/{demo_campaign.slug}/people/",
                           {"action": "add", "usernames": "ann1"}, follow=True)
    body = response.content.decode()
    assert body.count("Added ann1;") == 1
    response = client.post(f"/research/campaigns/{demo_campaign.slug}/invites/", {"max_uses": "2"}, follow=True)
    assert response.content.decode().count("Invite link: http") == 1


def test_learned_metrics_message_is_shown_once(admin_user, settings, tmp_path):
    from tests.factories import LearnedVersionFactory

    settings.LEARNED_CHECKPOINT_DIR = tmp_path
    (tmp_path / "v1").mkdir()
    version = LearnedVersionFactory.create(checkpoint_path=str(tmp_path / "v1"))
    response = login(admin_user).post(f"/learned/{version.pk}/promote/", {"confirm": "1"}, follow=True)
    assert response.content.decode().count("it is now active.") == 1
