"""The research page of a campaign's allocation simulations: a form starts a job, the job's page shows its
progress line, the summary table, the plot and the summary.json link; bad fields are errors next to them."""

from __future__ import annotations

import re

import pytest

from core.models import BackgroundJob

pytestmark = pytest.mark.django_db

PAGE = "/research/campaigns/sim/allocation/"


def test_the_page_starts_a_job_and_shows_its_result(sim_campaign, researcher, web_client_for,
                                                    django_capture_on_commit_callbacks) -> None:
    client = web_client_for(researcher)
    page = client.get(PAGE).content.decode()
    assert "No simulation yet" in page and 'value="elimination"' in page
    assert "/research/campaigns/sim/allocation/" in client.get("/research/campaigns/sim/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(PAGE, {"policy": ["elimination"], "seeds": "2", "budget": ""})
    job = BackgroundJob.objects.get(kind="allocation")
    assert response.status_code == 302 and response["Location"].endswith(f"{PAGE}{job.pk}/")
    assert job.status == "done" and job.done == job.total == 3 * 2
    detail = client.get(f"{PAGE}{job.pk}/").content.decode()
    assert 'data-ws-path="/ws/campaigns/sim/"' in detail and f'data-job="{job.pk}"' in detail
    for policy in ("uniform", "adaptive", "elimination"):
        assert f'<tr data-policy="{policy}">' in detail
    assert '<table class="numeric" data-allocation-summary>' in detail  # its figures right-aligned, as elsewhere
    assert detail.count("<svg") == 1 and f"/api/campaigns/sim/allocation/{job.pk}/summary.json" in detail
    assert f'<tr data-job="{job.pk}">' in client.get(PAGE).content.decode()


def test_a_running_job_shows_its_progress_and_no_result(sim_campaign, researcher, web_client_for) -> None:
    from metrics.services.allocation import campaign_allocation_start

    job = campaign_allocation_start(sim_campaign, policies="uniform", seeds=4)  # never committed: stays queued
    BackgroundJob.objects.filter(pk=job.pk).update(status="running", done=3)
    detail = web_client_for(researcher).get(f"{PAGE}{job.pk}/").content.decode()
    assert 'data-status="running"' in detail and "3 / 8" in detail and "<svg" not in detail


@pytest.mark.parametrize(("form", "field", "words"), [
    ({"policy": ["nope"], "seeds": "2"}, "policy", "nope"),
    ({"seeds": "0"}, "seeds", "from 1 to"),
    ({"seeds": "9999"}, "seeds", "from 1 to"),
    ({"seeds": "2", "budget": "100000"}, "budget", "from 1 to 54"),
    ({"policy": ["metric_guided"], "seeds": "2"}, "policy", "stored metric scores"),
])
def test_bad_fields_are_errors_next_to_them(sim_campaign, researcher, web_client_for, form, field, words) -> None:
    page = web_client_for(researcher).post(PAGE, form)
    assert page.status_code == 400
    html = page.content.decode()
    error = html.split(f'id="id_{field}_error"', 1)[1].split("</small>", 1)[0]
    assert words in error
    assert not BackgroundJob.objects.exists()


def test_annotators_and_other_researchers_are_kept_out(sim_campaign, annotators, make_user, web_client_for) -> None:
    assert web_client_for(annotators[0]).get(PAGE).status_code == 403
    assert web_client_for(make_user("res9", "researcher")).get(PAGE).status_code in (403, 404)


def test_the_pages_explain_each_policy_and_the_result_table_in_words(
    sim_campaign, researcher, web_client_for, django_capture_on_commit_callbacks,
) -> None:
    """A researcher reads what each policy does (and which need metric scores) beside its box, the result's
    ratings as whole ratings under a header that says so, the job's status announced as it changes, and
    links back to the dashboard."""
    client = web_client_for(researcher)
    page = client.get(PAGE).content.decode()
    assert "round_robin: whole screens, every source once before any twice" in page
    assert "metric_guided: whole screens, first the sources on which the automatic metrics disagree" in page
    assert page.count("(needs the campaign scored with metrics)") == 6
    assert "oracle_bound: not a policy a campaign can run" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post(PAGE, {"policy": ["round_robin"], "seeds": "2", "budget": ""})
    job = BackgroundJob.objects.get(kind="allocation")
    detail = client.get(f"{PAGE}{job.pk}/").content.decode()
    assert "Ratings to τ ≥ 0.95" in detail and "Top system right, after … of the ratings" in detail
    row = detail.split('<tr data-policy="uniform">')[1].split("</tr>")[0]
    assert re.search(r'<td class="num">\d+</td>', row) and not re.search(r">\d+\.\d</td>", row)
    assert re.search(r'data-allocation-status role="status" aria-live="polite"', detail)
    assert 'aria-label="Simulated runs done"' in detail and 'href="/research/campaigns/sim/"' in detail


def test_the_policy_boxes_are_a_named_group_that_its_help_and_error_describe(sim_campaign, researcher,
                                                                            web_client_for) -> None:
    """Not an orphan <label for=""> above thirteen checkboxes: a fieldset whose legend names the group and
    whose help and error a screen reader reads with it."""
    client = web_client_for(researcher)
    page = client.get(PAGE).content.decode()
    assert '<label for="">' not in page
    assert re.search(r'<fieldset class="field field-group" aria-describedby="id_policy_helptext">\s*'
                     r"<legend>Policies</legend>", page)
    bad = client.post(PAGE, {"policy": ["nope"], "seeds": "2"}).content.decode()
    assert 'aria-describedby="id_policy_helptext id_policy_error"' in bad and 'id="id_policy_error"' in bad
