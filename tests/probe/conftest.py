"""The probe's cast: one user per role and the objects every URL of the app can name.

`probe` gives a campaign owned by `researcher` in which `annotator` has passed the tutorial, one
submitted and one open assignment; `other_annotator` and `other_researcher` work on a second campaign;
a LENS version exists. `url_kwargs` fills any URL pattern's arguments from these objects.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

ROLES = ("anonymous", "annotator", "other_annotator", "researcher", "other_researcher", "admin")
# The schema fuzzer's responses per role (tests/probe/test_openapi.py), printed at the end of the run.
FUZZ_COUNTS: dict[str, Counter[str]] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FUZZ_COUNTS:
        terminalreporter.section("schema fuzzer: responses per role")
        for role, counts in FUZZ_COUNTS.items():
            terminalreporter.write_line(f"{role:>10}: {counts['cases']} cases, {counts['2xx/3xx']} 2xx/3xx, "
                                        f"{counts['4xx']} 4xx, {counts['5xx']} 5xx")


@dataclass
class Probe:
    users: dict[str, Any]
    campaign: Any
    other_campaign: Any
    assignment: Any  # the annotator's open assignment
    annotation: Any  # the annotator's submitted annotation (on another assignment)
    version: Any
    password_link: dict[str, str] = field(default_factory=dict)  # a new account's set-password link

    def allocation_job(self) -> int:
        """A finished allocation simulation of the campaign, started by its researcher (its files written)."""
        from core.models import BackgroundJob
        from core.services import background_job_create
        from metrics.selectors import ALLOCATION_JOB_KIND
        from metrics.services.allocation import allocation_job_dir

        job = background_job_create(kind=ALLOCATION_JOB_KIND, subject=self.campaign, owner=self.users["researcher"])
        BackgroundJob.objects.filter(pk=job.pk).update(status=BackgroundJob.Status.DONE)
        folder = allocation_job_dir(job.pk)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in {"params.json": "{}", "summary.json": "[]\n", "details.json": "[]\n",
                           "curves.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>'}.items():
            (folder / name).write_text(text, encoding="utf-8")
        return job.pk

    def kwargs_for(self, name: str, argument: str) -> Any:
        """The value of URL argument `argument` of the URL named `name`."""
        if argument == "slug":
            return self.campaign.slug
        if argument == "username":
            return self.users["annotator"].username
        if argument == "version_id":
            return self.version.pk
        if argument == "n":
            return 1
        if argument == "rest":  # the rest of a former address that redirects
            return f"{self.version.pk}/"
        if argument == "job_id" and name == "frontend:research-job-retry":  # a failed job of the campaign
            from core.services import background_job_create, background_job_fail

            job = background_job_create(kind="analysis", subject=self.campaign)
            background_job_fail(job.pk, "probe")
            return job.pk
        if argument == "job_id" and "allocation" in name:  # a finished allocation simulation of the campaign
            return self.allocation_job()
        if argument == "job_id":  # the researcher's perturbation-testbed run (queued: no results yet)
            from core.services import background_job_create
            from metrics.selectors import TESTBED_JOB_KIND

            return background_job_create(kind=TESTBED_JOB_KIND, owner=self.users["researcher"]).pk
        if argument == "metric":  # a metric with stored scores on the campaign (its card)
            from annotation.models import Output
            from metrics.services.metric_registry import metric_get
            from metrics.services.metric_scores import campaign_metric_scores_compute

            outputs = list(Output.objects.filter(source__campaign=self.campaign).values_list("pk", flat=True))
            campaign_metric_scores_compute(campaign=self.campaign, metrics=[metric_get("fkgl")], output_ids=outputs)
            return "fkgl"
        if argument in ("uid", "token") and name == "frontend:set-password":  # a new account's link
            from annotation.services.operations import account_password_token, annotator_account_create

            if not self.password_link:
                user = annotator_account_create(campaign=self.campaign, by=self.users["researcher"],
                                                username="p-new")
                self.password_link.update(zip(("uid", "token"), account_password_token(user), strict=True))
            return self.password_link[argument]
        if argument == "token" and name == "frontend:invite":
            from annotation.services.operations import invite_create

            return invite_create(campaign=self.campaign, by=self.users["researcher"]).token
        if argument == "token":  # the campaign's crowd link
            from annotation.services.operations import crowd_open

            return crowd_open(campaign=self.campaign).crowd_token
        if argument == "key":  # a crowd worker's personal link
            from annotation.models import CrowdWorker
            from tests.factories import UserFactory

            user = UserFactory.create(username=f"prolific-{self.campaign.pk}-probe", role="annotator")
            return CrowdWorker.objects.create(platform="prolific", worker_id="probe", user=user,
                                              campaign=self.campaign).key
        if argument == "external_id":  # a source of the campaign
            return self.campaign.sources.order_by("order", "id").values_list("external_id", flat=True)[0]
        if argument == "pk":
            return self.annotation.pk if name.startswith("annotation") else self.assignment.pk
        raise KeyError(f"the probe has no value for URL argument {argument!r} of {name!r}; add one in "
                       "tests/probe/conftest.py (Probe.kwargs_for)")


@pytest.fixture
def probe(db: None, settings: Any, tmp_path: Any) -> Probe:
    from annotation.models import Assignment, Output, RatingUnit, Source, System, TutorialPass
    from annotation.services.assignments import campaign_add_annotators
    from tests.factories import LearnedVersionFactory, UserFactory, campaign_with_outputs, submit_assignment

    settings.VAR_DIR = tmp_path  # the files the probe's jobs write (an allocation simulation's results)
    users = {
        "annotator": UserFactory.create(username="p-ann", role="annotator"),
        "other_annotator": UserFactory.create(username="p-ann2", role="annotator"),
        "researcher": UserFactory.create(username="p-res", role="researcher"),
        "other_researcher": UserFactory.create(username="p-res2", role="researcher"),
        "admin": UserFactory.create(username="p-admin", role="admin"),
    }
    campaign = campaign_with_outputs(slug="probe", owners=[users["researcher"]], n_sources=3,
                                     ratings_per_output=1)
    other = campaign_with_outputs(slug="probe-other", owners=[users["other_researcher"]], n_sources=2,
                                  ratings_per_output=1)
    tutorial = Source.objects.create(campaign=campaign, external_id="tut", text="The big dog barked.",
                                     is_tutorial=True, order=0, tutorial_key={"ranking": ["TGood", "TBad"]})
    for name, text in (("TGood", "The dog barked."), ("TBad", "Dog the.")):
        unit = RatingUnit.objects.create(source=tutorial, text=text, text_key=name)
        Output.objects.create(source=tutorial, system=System.objects.create(campaign=campaign, name=name),
                              unit=unit, text=text)
    TutorialPass.objects.create(annotator=users["annotator"], source=tutorial)
    campaign_add_annotators(campaign=campaign, annotators=[users["annotator"]])
    campaign_add_annotators(campaign=other, annotators=[users["other_annotator"]])
    mine = list(Assignment.objects.filter(annotator=users["annotator"]).order_by("id"))
    annotation = submit_assignment(mine[0])
    version = LearnedVersionFactory.create(started_by=users["admin"], checkpoint_path="/srv/secret/ckpt")
    version.campaigns.add(campaign, other)
    return Probe(users=users, campaign=campaign, other_campaign=other, assignment=mine[1], annotation=annotation,
                 version=version)


@pytest.fixture
def client_as(probe: Probe) -> Any:
    """A DRF test client logged in as a role of the probe (anonymous: not logged in)."""
    from rest_framework.test import APIClient

    def make(role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            client.force_login(probe.users[role])
        return client

    return make
