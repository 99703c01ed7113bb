"""Small writes beside an import on a file-based SQLite database (run as a script).

    python -m tests.annotation.sqlite_import_load DB_FILE SOURCES

Migrates a fresh database with a one-second busy timeout, then imports a JSONL of SOURCES sources while a
thread makes a small write (as an autosave does) every 20 ms, and prints one JSON line: the writes that
succeeded and failed while the import ran, and what the import stored. Run in its own process because
the test database of pytest-django is in memory.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from typing import Any


def main(db_file: str, sources: int) -> dict[str, Any]:
    os.environ["DATABASE_URL"] = f"sqlite:///{db_file}"
    os.environ["SQLITE_BUSY_TIMEOUT"] = "1"
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Campaign, Output, Slot, Source
    from annotation.services.imports import campaign_import

    call_command("migrate", verbosity=0)
    other = Campaign.objects.create(slug="other", name="other")
    lines = [
        json.dumps({"id": f"s{i}", "source": f"The long original sentence number {i}, with a clause.",
                    "references": [f"A simple sentence {i}."],
                    "outputs": [{"system": s, "text": f"Output {i} of system {s}."} for s in "AB"]})
        for i in range(sources)
    ]
    payload = "\n".join(lines).encode()
    connection.close()

    done = threading.Event()
    seen: dict[str, Any] = {"ok": 0, "failed": 0, "errors": [], "slowest": 0.0}

    def writer() -> None:
        try:
            n = 0
            while not done.is_set():
                n += 1
                started = time.perf_counter()
                try:
                    with transaction.atomic():
                        Campaign.objects.filter(pk=other.pk).update(instructions=f"autosave {n}")
                except Exception as exc:  # what an annotator's autosave would have got
                    seen["failed"] += 1
                    seen["errors"].append(f"{type(exc).__name__}: {exc}")
                else:
                    seen["ok"] += 1
                seen["slowest"] = max(seen["slowest"], time.perf_counter() - started)
                time.sleep(0.02)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.perf_counter()
    try:
        result = campaign_import(kind="jsonl", file=io.BytesIO(payload), filename="big.jsonl",
                                 campaign_slug="big", analyse=False)
    finally:
        done.set()
        thread.join()
    return {
        "import_seconds": round(time.perf_counter() - started, 2),
        "writes_ok": seen["ok"], "writes_failed": seen["failed"], "errors": sorted(set(seen["errors"]))[:3],
        "slowest_write": round(seen["slowest"], 3),
        "sources": Source.objects.filter(campaign__slug="big").count(),
        "outputs": Output.objects.filter(source__campaign__slug="big").count(),
        "slots": Slot.objects.filter(campaign__slug="big").count(), "imported": result.sources,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
