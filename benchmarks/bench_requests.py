"""In-process cost of an annotator's requests (Django test client, no server): next, fetch and submit.

Usage: .venv/bin/python benchmarks/bench_requests.py [--cycles 60] [--checkout PATH ...] [--profile next|fetch|submit]
       [--allocation uniform,adaptive]

For each allocation (default both, in the same run, one after the other), imports a campaign of --cycles
sources (3 outputs each) into the database of DATABASE_URL (a unique slug; nothing is deleted), gives one
annotator a token, then runs next -> fetch -> submit --cycles times through the test client with token
authentication, and prints per request the median wall time, the median CPU time of this process (the
database server's work is not in it) and the statements sent (BEGIN/COMMIT included). The adaptive campaign
is switched to adaptive and given SARI scores first (random, seeded), so its slots are ordered by metric-variance
priorities (``annotation.services.allocation``); a checkout without the setting measures uniform only. The
first 5 cycles are left out of the medians (warm-up). --checkout (repeatable) measures
another checkout of the project in the same invocation, e.g. the untouched main as the "before".
--profile runs that request under cProfile (after the warm-up) and prints its 30 costliest functions by
cumulative time; the profiler slows it, so take the timings from a run without it.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def measure(cycles: int, label: str, profile: str = "", allocations: tuple[str, ...] = ("uniform",)) -> None:
    import django

    django.setup()
    from annotation.models import Campaign

    for allocation in allocations:
        if allocation != "uniform" and not hasattr(Campaign, "Allocation"):
            print(f"[{label}] no allocation setting in this checkout: {allocation} not measured")
            continue
        measure_campaign(cycles, f"{label} {allocation}", profile, allocation)


def measure_campaign(cycles: int, label: str, profile: str, allocation: str) -> None:
    import cProfile
    import pstats

    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from rest_framework.authtoken.models import Token

    from annotation.models import Campaign, CampaignAnnotator, User
    from annotation.services.assignments import campaign_ensure_slots
    from annotation.services.imports import campaign_import

    try:
        from annotation import payloads
    except ImportError:  # older checkouts kept it among the services
        from annotation.services import payloads  # type: ignore[attr-defined,no-redef]

    call_command("migrate", verbosity=0)
    slug = f"req-{uuid.uuid4().hex[:8]}"
    lines = [json.dumps({"id": f"s{i}", "source": f"The rather long complex sentence number {i} goes on.",
                         "outputs": [{"system": f"sys{k}", "text": f"Simple sentence {k} of source {i}."}
                                     for k in range(3)]}) for i in range(cycles)]
    campaign_import(kind="jsonl", file=io.BytesIO("\n".join(lines).encode()), filename="requests.jsonl",
                    campaign_slug=slug, analyse=False)
    campaign = Campaign.objects.get(slug=slug)
    user = User.objects.create_user(username=slug, password=None, role=User.Role.ANNOTATOR)
    CampaignAnnotator.objects.create(campaign=campaign, annotator=user)
    campaign_ensure_slots(campaign=campaign)
    if allocation != "uniform":
        import random

        from annotation.models import Output
        from annotation.services.assignments import campaign_allocation_set
        from metrics.models import MetricScore
        from metrics.services.allocation import campaign_allocation_after_scoring

        campaign_allocation_set(campaign=campaign, allocation=allocation)
        rng = random.Random(0)  # stored SARI scores of different spreads per source, as a scoring would leave
        MetricScore.objects.bulk_create(
            MetricScore(output=output, metric="sari", signature="bench", value=rng.uniform(20, 60))
            for output in Output.objects.filter(source__campaign=campaign))
        campaign_allocation_after_scoring(campaign=campaign, metrics=["sari"])  # recomputes the keys
        keys = len(set(campaign_slots_keys(campaign)))
        print(f"[{label}] {keys} distinct allocation keys over the free slots")
    client = Client(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    wall: dict[str, list[float]] = {"next": [], "fetch": [], "submit": []}
    cpu: dict[str, list[float]] = {"next": [], "fetch": [], "submit": []}
    queries: dict[str, int] = {}

    profiler = cProfile.Profile()

    def timed(name: str, method: str, path: str, **kwargs: Any) -> Any:
        profiling = name == profile and len(wall[name]) >= 5
        with CaptureQueriesContext(connection) as captured:
            w, c = time.perf_counter(), time.process_time()
            if profiling:
                profiler.enable()
            response = getattr(client, method)(path, **kwargs)
            if profiling:
                profiler.disable()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
        queries[name] = len(captured)
        return response

    # Steps 1 and 2 reported as looked at, where this checkout asks for it (older ones refuse the key).
    extra = {"steps_reviewed": {"categorise": "visited", "edits": "visited"}} if hasattr(
        payloads, "steps_reviewed_check") else {}
    for n in range(cycles):
        pk = timed("next", "post", f"/api/campaigns/{slug}/next/").json()["assignment"]
        page = timed("fetch", "get", f"/api/assignments/{pk}/").json()
        body = {"submit_key": f"k{n}", **extra, "units": [{"unit": u["id"], "category": "paraphrase", "rating": 50,
                                                  "rank": i + 1} for i, u in enumerate(page["units"])]}
        response = timed("submit", "post", f"/api/assignments/{pk}/submit/", data=body,
                         content_type="application/json")
        assert response.status_code == 201, response.content
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"[{label}] {cycles} cycles, load average {load}")
    for name in wall:
        print(f"[{label}]   {name:6}  wall {statistics.median(wall[name][5:]) * 1000:6.1f} ms  "
              f"CPU {statistics.median(cpu[name][5:]) * 1000:6.1f} ms  statements {queries[name]}", flush=True)
    if profile:
        order = os.environ.get("PROFILE_SORT", "cumulative")
        print(f"[{label}] cProfile of {profile} ({cycles - 5} requests), by {order}:")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats(order).print_stats(30)


def campaign_slots_keys(campaign: Any) -> list[float]:
    from annotation.models import Slot

    return list(Slot.objects.filter(campaign=campaign, assignment__isnull=True).values_list("allocation_key",
                                                                                            flat=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=60)
    parser.add_argument("--checkout", action="append", default=[], help="measure this checkout (repeatable)")
    parser.add_argument("--profile", choices=("next", "fetch", "submit"), default="",
                        help="print a cProfile of this request")
    parser.add_argument("--allocation", default="uniform,adaptive",
                        help="campaigns to measure, comma-separated (uniform, adaptive)")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    allocations = tuple(a.strip() for a in args.allocation.split(",") if a.strip())
    if not allocations or set(allocations) - {"uniform", "adaptive"}:
        parser.error("--allocation takes uniform and/or adaptive")
    if args.child:
        measure(args.cycles, args.child, args.profile, allocations)
        return 0
    status = 0
    for checkout in [Path(c).resolve() for c in (args.checkout or [str(REPO)])]:
        env = {**os.environ, "PYTHONPATH": str(checkout), "DEBUG": "0", "LOG_LEVEL": "WARNING",
               "DJANGO_SETTINGS_MODULE": "config.settings.local"}
        child = [sys.executable, "-W", "ignore", __file__, "--child", checkout.name, "--cycles", str(args.cycles),
                 "--allocation", ",".join(allocations), *(["--profile", args.profile] if args.profile else [])]
        status = status or subprocess.run(child, cwd=checkout, env=env, check=False).returncode
    return status


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or str(REPO))
    sys.exit(main())
