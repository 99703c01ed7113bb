"""Many annotators claiming and submitting at once on a file-based SQLite database (run as a script).

    python -m tests.annotation.sqlite_load DB_FILE ANNOTATORS ROUNDS

Migrates a fresh database, imports a campaign, then runs one thread per annotator (next, page data,
autosave, submit through the API) beside a thread that rewrites the analysis like the worker does, and
prints one JSON line: the errors seen and the rows stored. Run in its own process because the test
database of pytest-django is in memory.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from typing import Any

# As tests.factories.STEPS_REVIEWED (not imported: this script sets Django up itself, after its imports).
STEPS_REVIEWED = {"categorise": "visited", "edits": "visited"}


def main(db_file: str, annotators: int, rounds: int) -> dict[str, Any]:
    os.environ["DATABASE_URL"] = f"sqlite:///{db_file}"
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from rest_framework.test import APIClient

    from annotation.models import Annotation, OutputJudgement, RatingUnit
    from annotation.services.assignments import campaign_ensure_slots
    from tests.factories import CampaignFactory, OutputFactory, SourceFactory, UserFactory

    call_command("migrate", verbosity=0)
    campaign = CampaignFactory.create(slug="load", ratings_per_output=2)
    for i in range(annotators * rounds // 2 + 2):
        source = SourceFactory.create(campaign=campaign, external_id=f"s{i}")
        for k in range(3):
            OutputFactory.create(source=source, text=f"Simple sentence {k} of source {i}.")
    users = [UserFactory.create(username=f"load{i}") for i in range(annotators)]
    from annotation.models import CampaignAnnotator

    for user in users:
        CampaignAnnotator.objects.create(campaign=campaign, annotator=user)
    campaign_ensure_slots(campaign=campaign)
    connection.close()

    errors: list[str] = []
    submitted = 0
    lock = threading.Lock()
    barrier = threading.Barrier(annotators + 1)
    stop = threading.Event()

    def annotate(user: Any) -> None:
        nonlocal submitted
        client = APIClient()
        client.force_authenticate(user)
        try:
            barrier.wait()
            for r in range(rounds):
                got = client.post(f"/api/campaigns/{campaign.slug}/next/")
                if got.status_code != 200:
                    raise AssertionError(f"next: {got.status_code} {got.content[:300]!r}")
                pk = got.json()["assignment"]
                if pk is None:
                    return
                page = client.get(f"/api/assignments/{pk}/")
                if page.status_code != 200:
                    raise AssertionError(f"detail: {page.status_code} {page.content[:300]!r}")
                units = page.json()["units"]
                answer = [{"unit": u["id"], "category": "paraphrase", "rating": 50, "rank": i + 1}
                          for i, u in enumerate(units)]
                state = {"ratings": {u["id"]: 50 for u in units}}
                draft = client.put(f"/api/assignments/{pk}/draft/", {"state": state, "revision": 1}, format="json")
                if draft.status_code != 200:
                    raise AssertionError(f"draft: {draft.status_code} {draft.content[:300]!r}")
                done = client.post(f"/api/assignments/{pk}/submit/",
                                   {"submit_key": f"{user.username}-{r}", "steps_reviewed": STEPS_REVIEWED,
                                                                          "units": answer}, format="json")
                if done.status_code != 201:
                    raise AssertionError(f"submit: {done.status_code} {done.content[:300]!r}")
                with lock:
                    submitted += 1
        except BaseException:
            with lock:
                errors.append(traceback.format_exc(limit=3))
        finally:
            connection.close()

    def worker() -> None:
        """Rewrites the analysis in batches, as the Celery worker does after an import."""
        try:
            barrier.wait()
            while not stop.is_set():
                units = list(RatingUnit.objects.filter(source__campaign=campaign)[:200])
                for unit in units:
                    unit.analysis_error = ""
                RatingUnit.objects.bulk_update(units, ["analysis_error"])
        except BaseException:
            with lock:
                errors.append(traceback.format_exc(limit=3))
        finally:
            connection.close()

    threads = [threading.Thread(target=annotate, args=(u,)) for u in users]
    background = threading.Thread(target=worker)
    background.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    background.join()
    return {
        "errors": errors,
        "submitted": submitted,
        "annotations": Annotation.objects.filter(status=Annotation.Status.SUBMITTED).count(),
        "judgements": OutputJudgement.objects.count(),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
