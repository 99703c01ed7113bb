"""The largest import the embedded default takes, and whether other writers go on while it runs.

Usage: .venv/bin/python benchmarks/bench_import.py [--db sqlite|postgres|both] [--mib 24] [--sources 293094]
       [--outputs 1] [--postgres-url postgres://postgres@127.0.0.1:5432/rankrate_import_bench]

Writes a synthetic JSONL of --sources sources (each --outputs outputs; made-up words, seeded) padded to about
--mib MiB (the upload cap is MAX_UPLOAD_BYTES, 25 MiB), then for each database, in a process of its own with
the project's settings (SQLite: a throw-away file with the WAL, IMMEDIATE and busy-timeout settings of
config/settings/base.py; PostgreSQL: the scratch database of --postgres-url, dropped and created again)
imports it through annotation.services.imports.campaign_import, while a thread autosaves a draft through
annotation.services.annotations.annotation_save_draft every 100 ms and creates a campaign every second.
Prints the import's total time, its write transactions and the longest of them (BEGIN to COMMIT: how long
it held SQLite's one write lock at most), and the autosaves and campaign creations that succeeded and
failed with their p50 and max latency. Exits 1 when a concurrent write failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
WORDS = ("the", "a", "cat", "dog", "sat", "on", "mat", "river", "city", "old", "new", "small", "large",
         "house", "road", "green", "quick", "slow", "bright", "people", "walked", "across", "bridge",
         "after", "storm", "while", "children", "played", "near", "school", "garden", "morning", "evening")


def make_jsonl(path: Path, *, sources: int, outputs: int, mib: float, seed: int = 7) -> int:
    rng = random.Random(seed)
    target = int(mib * 1024 * 1024)
    skeleton = len(json.dumps({"id": f"s{sources}", "source": "", "outputs": [
        {"system": f"sys{k}", "text": ""} for k in range(outputs)]}, separators=(",", ":"))) + 1
    chars = max(8, target // sources - skeleton)  # text characters per line, shared by source and outputs
    source_chars = max(4, chars // 2)
    output_chars = max(2, (chars - source_chars) // outputs)

    def text(n: int) -> str:
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < n:
            words.append(rng.choice(WORDS))
        return " ".join(words)[:n].strip() or "x"

    with path.open("w", encoding="utf-8") as out:
        for i in range(sources):
            line = {"id": f"s{i}", "source": text(source_chars),
                    "outputs": [{"system": f"sys{k}", "text": text(output_chars)} for k in range(outputs)]}
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
    return path.stat().st_size


def _latencies(values: list[float]) -> str:
    if not values:
        return "none"
    return f"p50 {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


def child(db: str, jsonl: Path, database_url: str) -> dict[str, Any]:
    """One database: migrate, set up an annotator with a claimed assignment, import beside the writers."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ.setdefault("DEBUG", "0")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotation.models import Campaign, CampaignAnnotator, Source, User
    from annotation.services.annotations import annotation_save_draft
    from annotation.services.assignments import assignment_claim_next
    from annotation.services.imports import campaign_import
    from tests.factories import CampaignFactory, OutputFactory, SourceFactory

    call_command("migrate", verbosity=0)
    live = CampaignFactory.create(slug="live", ratings_per_output=1)
    source = SourceFactory.create(campaign=live, external_id="live-1")
    OutputFactory.create(source=source, text="A simple sentence.")
    from annotation.services.assignments import campaign_ensure_slots

    campaign_ensure_slots(campaign=live)
    annotator = User.objects.create_user(username="autosaver", password=None)
    CampaignAnnotator.objects.create(campaign=live, annotator=annotator)
    with transaction.atomic():
        assignment = assignment_claim_next(campaign=live, annotator=annotator)
    assert assignment is not None
    connection.close()

    done = threading.Event()
    tally: dict[str, dict[str, Any]] = {k: {"ok": 0, "failed": 0, "lat": [], "errors": set()}
                                        for k in ("autosave", "campaign")}

    def attempt(kind: str, work: Any) -> None:
        started = time.perf_counter()
        try:
            with transaction.atomic():
                work()
        except Exception as exc:
            tally[kind]["failed"] += 1
            tally[kind]["errors"].add(f"{type(exc).__name__}: {str(exc)[:80]}")
        else:
            tally[kind]["ok"] += 1
        tally[kind]["lat"].append(time.perf_counter() - started)

    def writer() -> None:
        n = 0
        try:
            while not done.is_set():
                n += 1
                attempt("autosave", lambda n=n: annotation_save_draft(assignment=assignment, user=annotator,
                                                                        state={"ratings": {"1": n % 100}}, revision=n))
                if n % 10 == 0:
                    attempt("campaign", lambda n=n: Campaign.objects.create(slug=f"made-{n}", name=f"made {n}"))
                time.sleep(0.1)
        finally:
            connection.close()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    started = time.perf_counter()
    error = None
    try:
        with jsonl.open("rb") as handle:
            result = campaign_import(kind="jsonl", file=handle, filename=jsonl.name, campaign_slug="big",
                                     analyse=False)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    elapsed = time.perf_counter() - started
    done.set()
    thread.join()
    out: dict[str, Any] = {"db": db, "vendor": connection.vendor, "seconds": round(elapsed, 1), "error": error,
                           "rows_per_write": settings.IMPORT_ROWS_PER_WRITE}
    if error is None:
        out.update(sources=result.sources, outputs=result.outputs, units=result.units, writes=result.writes,
                   longest_write_seconds=round(result.longest_write_seconds, 3),
                   stored_sources=Source.objects.filter(campaign__slug="big").count())
    for kind, t in tally.items():
        out[kind] = {"ok": t["ok"], "failed": t["failed"], "latency": _latencies(t["lat"]),
                     "max_seconds": round(max(t["lat"], default=0.0), 3), "errors": sorted(t["errors"])[:3]}
    return out


def _fresh_postgres(url: str) -> None:
    import psycopg2  # type: ignore[import-untyped]

    base, _, name = url.rpartition("/")
    conn = psycopg2.connect(f"{base}/postgres")
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--mib", type=float, default=24.0)
    parser.add_argument("--sources", type=int, default=293_094)
    parser.add_argument("--outputs", type=int, default=1)
    parser.add_argument("--postgres-url", default="postgres://postgres@127.0.0.1:5432/rankrate_import_bench")
    parser.add_argument("--child", nargs=3, metavar=("DB", "JSONL", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]), args.child[2])))
        return 0
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "bench.jsonl"
        size = make_jsonl(jsonl, sources=args.sources, outputs=args.outputs, mib=args.mib)
        print(f"file: {size:,} bytes ({size / 1024 / 1024:.1f} MiB), {args.sources:,} sources x {args.outputs} "
              f"output(s)", flush=True)
        for db in (["sqlite", "postgres"] if args.db == "both" else [args.db]):
            if db == "sqlite":
                url = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
            else:
                _fresh_postgres(args.postgres_url)
                url = args.postgres_url
            run = subprocess.run([sys.executable, __file__, "--child", db, str(jsonl), url], cwd=REPO,
                                 capture_output=True, text=True, check=False)
            if run.returncode != 0:
                print(f"{db}: the run failed\n{run.stderr[-3000:]}")
                failed = True
                continue
            r = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"\n{db} ({r['vendor']}): import {r['seconds']} s"
                  + (f", error {r['error']}" if r["error"] else
                     f", {r['sources']:,} sources, {r['outputs']:,} outputs, {r['writes']} write transactions "
                     f"of ~{r['rows_per_write']} rows, the longest {r['longest_write_seconds']} s"))
            for kind in ("autosave", "campaign"):
                t = r[kind]
                print(f"  {kind} beside it: {t['ok']} ok, {t['failed']} failed, {t['latency']}"
                      + (f"; errors: {t['errors']}" if t["errors"] else ""))
                failed = failed or bool(t["failed"]) or bool(r["error"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
