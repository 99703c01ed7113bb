"""Steps of the worker-kill test, each run in its own process with the test's environment.

    python -m tests.core.fault_setup prepare SOURCES  (migrate, import a campaign of SOURCES x 4 outputs)
    python -m tests.core.fault_setup queue            (queue its analysis; prints the job id)
    python -m tests.core.fault_setup retry JOB        (the dashboard's Retry)
"""

from __future__ import annotations

import io
import json
import os
import sys


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from annotation.models import Campaign
    from annotation.services.analysis import campaign_schedule_analysis
    from annotation.services.imports import campaign_import
    from core.models import BackgroundJob
    from core.services import background_job_retry

    if argv[0] == "retry":
        background_job_retry(job=BackgroundJob.objects.get(pk=int(argv[1])))
    elif argv[0] == "queue":
        with transaction.atomic():
            job = campaign_schedule_analysis(campaign=Campaign.objects.get(slug="fault"))
        print(job.pk)
    elif argv[0] == "prepare":
        call_command("migrate", verbosity=0)
        lines = [
            json.dumps({"id": f"s{i}", "source": f"The long and winding complex sentence number {i} goes on.",
                        "outputs": [{"system": f"sys{k}", "text": f"Simple sentence {k} of source {i}."}
                                    for k in range(4)]})
            for i in range(int(argv[1]))
        ]
        campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="fault.jsonl",
                        campaign_slug="fault", analyse=False)
    else:
        raise SystemExit(f"unknown step {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
