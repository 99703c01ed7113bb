"""Time from navigation to an interactive annotation page with 30 outputs, in headless Chromium.

Usage: .venv/bin/python benchmarks/bench_annotation_page.py [--runs 15]

Starts Django's live-server thread on a throw-away SQLite database, creates a campaign whose source
has 30 distinct outputs (with stand-in automatic analysis), logs in as the annotator and opens the
page repeatedly. "Interactive" is the `rr-ready` performance mark that the page sets once every
handler is attached and the first step is drawn (it also sets `data-ready` on <html>).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.pop("DATABASE_URL", None)
os.environ["RANKRATE_VAR_DIR"] = tempfile.mkdtemp(prefix="rankrate-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

import django  # noqa: E402

django.setup()

from django.contrib.staticfiles.handlers import StaticFilesHandler  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test.testcases import LiveServerThread  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
WORDS = [
    "the", "old", "harbour", "which", "had", "been", "rebuilt", "twice", "after", "violent", "storms", "in",
    "the", "nineteenth", "century", "now", "shelters", "a", "small", "fleet", "of", "fishing", "boats", "and",
    "a", "ferry", "that", "crosses", "to", "the", "island", "every", "morning",
]


def make_data() -> tuple[int, str, str]:
    import random

    from annotation.models import Assignment, User
    from annotation.services.assignments import campaign_add_annotators
    from annotation.services.campaigns import campaign_create
    from annotation.services.imports import campaign_import
    from tests.browser.fake_analysis import analyse_source

    call_command("migrate", verbosity=0)
    researcher = User.objects.create_user("bench-res", password="bench-pass-1", role="researcher")
    annotator = User.objects.create_user("bench-ann", password="bench-pass-1", role="annotator")
    campaign = campaign_create(name="Bench", slug="bench", owner=researcher, ratings_per_output=1)
    rng = random.Random(7)
    source = " ".join(WORDS).capitalize() + "."
    outputs = []
    for i in range(30):
        words = [w for w in WORDS if rng.random() > 0.25]
        if i % 3 == 0:
            cut = len(words) // 2
            words = words[:cut] + ["."] + words[cut:]
        outputs.append({"system": f"sys-{i}", "text": " ".join(words).replace(" .", ".").capitalize() + f" ({i})."})
    import json

    path = Path(os.environ["RANKRATE_VAR_DIR"]) / "bench.jsonl"
    path.write_text(json.dumps({"id": "s30", "source": source, "references": [], "outputs": outputs}) + "\n")
    with path.open("rb") as bench:
        campaign_import(kind="jsonl", file=bench, filename=path.name, campaign_slug="bench", user=researcher,
                        analyse=False)
    for s in campaign.sources.all():
        analyse_source(s)
    campaign_add_annotators(campaign=campaign, annotators=[annotator])
    assignment = Assignment.objects.get(annotator=annotator)
    return assignment.pk, "bench-ann", "bench-pass-1"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    assignment_id, username, password = make_data()
    server = LiveServerThread("localhost", StaticFilesHandler, port=0)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    if server.error:
        raise server.error
    base = f"http://localhost:{server.port}"

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{base}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_selector("h1")
        url = f"{base}/annotate/{assignment_id}/"
        timings = []
        for run in range(args.runs + 1):
            page.goto(url)
            page.wait_for_selector("html[data-ready]")
            entry = page.evaluate("""() => {
                const nav = performance.getEntriesByType('navigation')[0];
                const ready = performance.getEntriesByName('rr-ready')[0];
                return {ready: ready.startTime, ttfb: nav.responseStart, dcl: nav.domContentLoadedEventEnd,
                        cards: document.querySelectorAll('[data-group] > .card').length};
            }""")
            assert entry["cards"] == 30, entry
            if run:  # the first load warms caches
                timings.append(entry)
            page.evaluate("localStorage.clear()")
        browser.close()
    server.terminate()
    ready = [t["ready"] for t in timings]
    print(f"annotation page, 30 outputs, {len(ready)} loads (after one warm-up) in headless Chromium:")
    print(f"  navigation → interactive (rr-ready): median {statistics.median(ready):.0f} ms, "
          f"min {min(ready):.0f} ms, max {max(ready):.0f} ms")
    print(f"  time to first byte: median {statistics.median(t['ttfb'] for t in timings):.0f} ms; "
          f"DOMContentLoaded: median {statistics.median(t['dcl'] for t in timings):.0f} ms")
    print("  target: < 300 ms —", "met" if statistics.median(ready) < 300 else "NOT met")


if __name__ == "__main__":
    main()
