"""Steps of the worker-kill tests, each run in its own process with the test's environment.

    python -m tests.core.fault_setup prepare SOURCES        (migrate; import a campaign "fault" of SOURCES x 4
                                                             outputs, and a rated campaign "fault-lens" with
                                                             references, and build the tiny encoder in
                                                             $RANKRATE_VAR_DIR/tiny-bert)
    python -m tests.core.fault_setup queue analysis          (queue the analysis of "fault"; prints the job id)
    python -m tests.core.fault_setup queue lens ENCODER N    (queue an N-epoch LENS training on "fault-lens" with
                                                             the encoder in ENCODER; prints the version id)
    python -m tests.core.fault_setup retry JOB               (the dashboard's Retry)

The broker is the one the settings choose from the environment; ``FAULT_BROKER_PREFIX`` puts every key a
Redis broker writes under that prefix (``fault_broker``), so a test's messages never reach another run's
workers and the test can delete them afterwards.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path


def fault_broker() -> None:
    """Apply ``FAULT_BROKER_PREFIX`` to the Celery app (a Redis broker's keys); call after ``django.setup()``."""
    from config.celery import app

    prefix = os.environ.get("FAULT_BROKER_PREFIX", "")
    if prefix and app.conf.broker_url.startswith("redis"):
        app.conf.broker_transport_options = {**app.conf.broker_transport_options, "global_keyprefix": prefix}


def prepare(sources: int) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotation.services.imports import campaign_import
    from tests.factories import rated_campaign
    from tests.tiny import WORDS, build_tiny_bert

    call_command("migrate", verbosity=0)
    lines = [
        json.dumps({"id": f"s{i}", "source": f"The long and winding complex sentence number {i} goes on.",
                    "outputs": [{"system": f"sys{k}", "text": f"Simple sentence {k} of source {i}."}
                                for k in range(4)]})
        for i in range(sources)
    ]
    campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="fault.jsonl",
                    campaign_slug="fault", analyse=False)
    user_model = get_user_model()
    raters = [user_model.objects.create_user(username=f"rater{i}", password="x") for i in range(2)]
    rated_campaign("fault-lens", raters, n_sources=12, seed=5)
    encoder = Path(os.environ["RANKRATE_VAR_DIR"]) / "tiny-bert"
    encoder.mkdir(parents=True, exist_ok=True)
    build_tiny_bert(encoder, WORDS, hidden=32, layers=2, seed=1234, max_length=24)


def queue(what: str, args: list[str]) -> int:
    from django.db import transaction

    from annotation.models import Campaign
    from annotation.services.queue import campaign_schedule_analysis
    from metrics.services.training import lens_version_create
    from tests.tiny import tiny_train_config

    with transaction.atomic():
        if what == "analysis":
            return campaign_schedule_analysis(campaign=Campaign.objects.get(slug="fault")).pk
        if what == "lens":
            config = tiny_train_config(Path(args[0]), epochs=int(args[1]), heldout_fraction=0.2)
            return lens_version_create(config=config, campaigns=[Campaign.objects.get(slug="fault-lens")],
                                       started_by=None).pk
    raise SystemExit(f"unknown work {what!r}")


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    fault_broker()
    from core.models import BackgroundJob
    from core.services import background_job_retry

    if argv[0] == "retry":
        background_job_retry(job=BackgroundJob.objects.get(pk=int(argv[1])))
    elif argv[0] == "queue":
        print(queue(argv[1], argv[2:]))
    elif argv[0] == "prepare":
        prepare(int(argv[1]))
    else:
        raise SystemExit(f"unknown step {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
