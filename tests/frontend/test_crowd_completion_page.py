"""The crowd worker's completion page (issue 44, defect 4): the code in a selectable field with a copy
button, and the platform's completion URL with the code in it, for workers who finished only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment, CrowdWorker
from annotation.rules import completion_url_for
from annotation.services.campaigns import campaign_update
from annotation.services.operations import crowd_open
from tests.factories import campaign_with_outputs, submit_assignment

pytestmark = pytest.mark.django_db
PROLIFIC = "https://app.prolific.com/submissions/complete?cc={code}"


def _link(campaign: Any) -> str:
    return f"/crowd/{campaign.slug}/{campaign.crowd_token}/"


def _research(researcher: Any) -> Client:
    page = Client()
    page.force_login(researcher)
    return page


def test_the_completion_page_gives_the_code_and_the_platforms_url(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=1, ratings_per_output=1)
    crowd_open(campaign=campaign)
    campaign_update(campaign=campaign, crowd_completion_url=PROLIFIC)
    worker = Client()
    worker.get(_link(campaign), {"PROLIFIC_PID": "done1"})
    user = CrowdWorker.objects.get(worker_id="done1").user
    unfinished = worker.get(f"/campaigns/{campaign.slug}/done/").content.decode()
    assert "completion-redirect" not in unfinished and campaign.completion_code not in unfinished
    submit_assignment(Assignment.objects.get(annotator=user))
    done = worker.get(f"/campaigns/{campaign.slug}/done/").content.decode()
    assert re.search(rf'<input id="completion-code"[^>]*value="{campaign.completion_code}"[^>]*readonly', done)
    assert 'id="copy-code"' in done and 'for="completion-code"' in done and "crowd_done.js" in done
    target = completion_url_for(PROLIFIC, campaign.completion_code)
    assert target == f"https://app.prolific.com/submissions/complete?cc={campaign.completion_code}"
    assert f'data-url="{target}"' in done and f'href="{target}"' in done

    campaign_update(campaign=campaign, crowd_completion_url="")
    plain = worker.get(f"/campaigns/{campaign.slug}/done/").content.decode()
    assert campaign.completion_code in plain and "completion-redirect" not in plain


def test_an_excluded_worker_is_not_sent_to_the_platform(researcher: Any) -> None:
    campaign = campaign_with_outputs(owners=[researcher], n_sources=2, ratings_per_output=1, batch_size=1)
    crowd_open(campaign=campaign)
    campaign_update(campaign=campaign, crowd_completion_url=PROLIFIC)
    worker = Client()
    worker.get(_link(campaign), {"PROLIFIC_PID": "out1"})
    user = CrowdWorker.objects.get(worker_id="out1").user
    submit_assignment(Assignment.objects.get(annotator=user))
    _research(researcher).post(f"/research/campaigns/{campaign.slug}/quality/",
                               {"action": "exclude", "pseudonym": user.pseudonym, "crowd_end": "excluded",
                                "confirm": "1"})
    done = worker.get(f"/campaigns/{campaign.slug}/done/").content.decode()
    assert "Your submission was excluded" in done
    assert "completion-redirect" not in done and "prolific.com" not in done
