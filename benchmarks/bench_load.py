"""Load: concurrent annotators claiming, fetching and submitting against daphne, then an exactly-once check.

Usage: .venv/bin/python benchmarks/bench_load.py [--db sqlite|postgres|both] [--annotators 50] [--seconds 60]
       [--postgres-url postgres://...]

For each database it prepares a fresh campaign (SOURCES sources x 3 outputs, two ratings per output, every
annotator a member, the slots left in the pool so `next` claims under load), starts daphne on 127.0.0.1
(a free port; nothing else is reached) and runs one thread per annotator for the given time: `next`,
then the page data (fetch), then submit. It stops by itself, stops daphne, and prints p50/p95/p99 of fetch
and submit, the error count, the throughput and the exactly-once check: every 201 is one stored
annotation, no assignment has two, no annotator two live assignments of one source.

SQLite (the embedded default, `make run`) uses a throw-away file; PostgreSQL the database of --postgres-url
or DATABASE_URL (a campaign with a unique slug; nothing is deleted). Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUTPUTS_PER_SOURCE = 3


@dataclass
class Tally:
    fetch: list[float] = field(default_factory=list)
    submit: list[float] = field(default_factory=list)
    claim: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    created: list[tuple[int, int]] = field(default_factory=list)  # (assignment, annotation) of each 201
    repeats: int = 0
    idle: int = 0  # annotators who ran out of work
    lock: threading.Lock = field(default_factory=threading.Lock)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


# --- one database: prepare, serve, drive, check (run in a child process per database) ----------------


def prepare(annotators: int, sources: int, slug: str) -> dict[str, str]:
    import io

    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotation.models import Campaign, CampaignAnnotator, User
    from annotation.services.assignments import campaign_ensure_slots
    from annotation.services.imports import campaign_import

    call_command("migrate", verbosity=0)
    lines = [
        json.dumps({"id": f"s{i}", "source": f"The rather long and winding complex sentence number {i} goes on.",
                    "outputs": [{"system": f"sys{k}", "text": f"Simple sentence {k} of source {i}."}
                                for k in range(OUTPUTS_PER_SOURCE)]})
        for i in range(sources)
    ]
    campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="load.jsonl",
                    campaign_slug=slug, analyse=False)
    campaign = Campaign.objects.get(slug=slug)
    campaign.ratings_per_output = 2
    campaign.save(update_fields=["ratings_per_output"])
    tokens: dict[str, str] = {}
    for i in range(annotators):
        user = User.objects.create_user(username=f"{slug}-a{i}", password=uuid.uuid4().hex, role=User.Role.ANNOTATOR)
        CampaignAnnotator.objects.create(campaign=campaign, annotator=user)
        tokens[user.username] = Token.objects.create(user=user).key
    campaign_ensure_slots(campaign=campaign)
    return tokens


def annotate(port: int, token: str, slug: str, until: float, tally: Tally) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        started = time.perf_counter()
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        data = response.read()
        took = time.perf_counter() - started
        return response.status, (json.loads(data) if data else None), took

    n = 0
    try:
        while time.monotonic() < until:
            status, data, took = call("POST", f"/api/campaigns/{slug}/next/")
            if status != 200:
                raise RuntimeError(f"next: {status} {str(data)[:200]}")
            with tally.lock:
                tally.claim.append(took)
            pk = data["assignment"]
            if pk is None:
                with tally.lock:
                    tally.idle += 1
                return
            status, page, took = call("GET", f"/api/assignments/{pk}/")
            if status != 200:
                raise RuntimeError(f"fetch: {status} {str(page)[:200]}")
            with tally.lock:
                tally.fetch.append(took)
            answer = {"submit_key": f"{token[:8]}-{n}", "steps_reviewed": {"categorise": "visited", "edits": "visited"},
                      "units": [
                {"unit": u["id"], "category": "paraphrase", "rating": 50 + i, "rank": i + 1}
                for i, u in enumerate(page["units"])]}
            status, saved, took = call("POST", f"/api/assignments/{pk}/submit/", answer)
            if status not in (200, 201):
                raise RuntimeError(f"submit: {status} {str(saved)[:200]}")
            with tally.lock:
                tally.submit.append(took)
                if status == 201:
                    tally.created.append((pk, saved["id"]))
                else:
                    tally.repeats += 1
            n += 1
    except Exception as exc:  # one annotator's failure is counted, the others go on
        with tally.lock:
            tally.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


def check(slug: str, tally: Tally) -> dict[str, Any]:
    from django.db.models import Count

    from annotation.models import Annotation, Assignment

    submitted = Annotation.objects.filter(source__campaign__slug=slug, status=Annotation.Status.SUBMITTED)
    stored = set(submitted.values_list("assignment_id", "id"))
    doubled = (submitted.values("assignment_id").annotate(n=Count("id")).filter(n__gt=1).count())
    live_twice = (
        Assignment.objects.filter(campaign__slug=slug).exclude(status=Assignment.Status.RELEASED)
        .values("annotator_id", "source_id").annotate(n=Count("id")).filter(n__gt=1).count()
    )
    answered = set(tally.created)
    return {
        "answered_201": len(tally.created), "stored": len(stored),
        "lost": len(answered - stored), "unanswered_but_stored": len(stored - answered),
        "duplicate_201": len(tally.created) - len(answered),
        "assignments_with_two_annotations": doubled, "annotator_source_live_twice": live_twice,
    }


def run_one(db: str, annotators: int, seconds: float, sources: int) -> int:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    slug = f"load-{uuid.uuid4().hex[:8]}"
    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    t0 = time.perf_counter()
    tokens = prepare(annotators, sources, slug)
    connections.close_all()
    print(f"[{db}] database {engine}, campaign {slug}: {sources} sources x {OUTPUTS_PER_SOURCE} outputs, "
          f"{annotators} annotators (prepared in {time.perf_counter() - t0:.1f} s)", flush=True)
    port = free_port()
    log = open(Path(os.environ["RANKRATE_VAR_DIR"]) / "daphne.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen([str(Path(sys.executable).parent / "daphne"), "-b", "127.0.0.1", "-p", str(port),
                               "config.asgi:application"], cwd=REPO, env=os.environ.copy(), stdout=log,
                              stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"daphne did not start; see {log.name}") from None
                time.sleep(0.2)
        tally = Tally()
        started = time.monotonic()
        until = started + seconds
        threads = [threading.Thread(target=annotate, args=(port, token, slug, until, tally))
                   for token in tokens.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
    result = check(slug, tally)
    ms = 1000.0
    print(f"[{db}] {elapsed:.1f} s, {len(tally.submit)} submits ({len(tally.submit) / elapsed:.1f}/s), "
          f"{len(tally.claim) + len(tally.fetch) + len(tally.submit)} requests "
          f"({(len(tally.claim) + len(tally.fetch) + len(tally.submit)) / elapsed:.1f}/s), "
          f"errors {len(tally.errors)}, annotators out of work {tally.idle}")
    for name, values in (("next", tally.claim), ("fetch", tally.fetch), ("submit", tally.submit)):
        print(f"[{db}]   {name:6} n={len(values):5}  p50 {percentile(values, 50) * ms:7.1f} ms  "
              f"p95 {percentile(values, 95) * ms:7.1f} ms  p99 {percentile(values, 99) * ms:7.1f} ms  "
              f"mean {statistics.fmean(values) * ms if values else float('nan'):7.1f} ms")
    print(f"[{db}]   exactly once: {json.dumps(result)}")
    for error in sorted(set(tally.errors))[:10]:
        print(f"[{db}]   error: {error}")
    ok = not tally.errors and result["lost"] == 0 and result["unanswered_but_stored"] == 0 and \
        result["duplicate_201"] == 0 and result["assignments_with_two_annotations"] == 0 and \
        result["annotator_source_live_twice"] == 0
    print(f"[{db}] OK: 0 errors and nothing lost or doubled" if ok else f"[{db}] FAILED")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default=None,
                        help="default: both when a PostgreSQL URL is known, else sqlite")
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--sources", type=int, default=2000, help="enough work for the whole run")
    parser.add_argument("--postgres-url", default=os.environ.get("DATABASE_URL", "")
                        if os.environ.get("DATABASE_URL", "").startswith("postgres") else "")
    parser.add_argument("--child", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_one(args.child, args.annotators, args.seconds, args.sources)
    chosen = args.db or ("both" if args.postgres_url else "sqlite")
    dbs = ["sqlite", "postgres"] if chosen == "both" else [chosen]
    if "postgres" in dbs and not args.postgres_url:
        parser.error("PostgreSQL needs --postgres-url or DATABASE_URL=postgres://...")
    print(f"{os.cpu_count()} CPU cores on this machine (shared: the server, the {args.annotators} client threads "
          "and anything else running compete for them); loopback only.", flush=True)
    status = 0
    for db in dbs:
        var = tempfile.mkdtemp(prefix=f"rankrate-load-{db}-")
        env = {k: v for k, v in os.environ.items()
               if k not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "DATABASE_URL")}
        env.update({"DJANGO_SETTINGS_MODULE": "config.settings.local", "DEBUG": "0", "RANKRATE_VAR_DIR": var,
                    "LOG_LEVEL": "WARNING",
                    "DATABASE_URL": args.postgres_url if db == "postgres" else f"sqlite:///{var}/load.sqlite3"})
        child = subprocess.run([sys.executable, __file__, "--child", db, "--annotators", str(args.annotators),
                                "--seconds", str(args.seconds), "--sources", str(args.sources)],
                               cwd=REPO, env=env, check=False)
        status = status or child.returncode
    return status


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
