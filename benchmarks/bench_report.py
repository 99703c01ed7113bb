"""The campaign report on SimpEval_past at 1x, 3x and 10x its ratings, in-process and from the command,
before/after in the same run.

Usage: ``python benchmarks/bench_report.py [--before CHECKOUT] [--scales 1,3,10] [--n-boot 1000] [--skip-command]``

Needs PostgreSQL: ``DATABASE_URL`` names a database this script may empty and fill (``manage.py migrate`` is run
on it). It imports SimpEval_past (12,000 ratings: 2,400 outputs x 5 rating slots) once per scale and, for
scale k, adds k-1 synthetic copies of every rating slot (new slots ``rating_<n>``, each rating moved by a
deterministic -3..+3, released z-scores kept), so 3x is 36,000 ratings and 10x 120,000.

This checkout, and the ``--before`` checkout when one is named (another clone with its own ``.venv``, e.g. the
untouched main), are measured in fresh subprocesses on the same database:

* in-process: ``campaign_report_build`` (the report the API and the command build, n_boot resamples), wall
  time, the peak RSS of the process during the build above its RSS just before (``ru_maxrss``), and the
  process's peak RSS;
* command: ``manage.py campaign_report --campaign <slug> --json``, wall time and peak RSS of the process.

Without a PostgreSQL ``DATABASE_URL`` it prints that it skipped; a ``--before`` without a ``.venv`` is an error.

Goals: 12K <= 0.5 s in-process and <= 1.5 s from the command; 120K <= 3 s and <= 400 MB.
Prints figures; asserts nothing. The machine may be shared: compare before/after of the same run only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
import django
django.setup()
from annotation.models import Campaign
from evaluation.services.report import campaign_report_build
campaign = Campaign.objects.get(slug=sys.argv[1])
def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
before = rss_kb()
start = time.perf_counter()
report = campaign_report_build(campaign=campaign, n_boot=int(sys.argv[2]))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "delta_mb": (peak - before) / 1024, "peak_mb": peak / 1024,
                  "ratings": report["counts"]["ratings"], "z_top": report["systems"][0]["z_mean"]}))
"""


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "REDIS_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    return env


def run_in(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    python = str(checkout / ".venv" / "bin" / "python")
    return subprocess.run([python, *args], cwd=checkout, env=environment(), capture_output=True, text=True,
                          timeout=1800, check=False)


def in_process(checkout: Path, slug: str, n_boot: int) -> dict[str, float]:
    result = run_in(checkout, "-c", MEASURE, slug, str(n_boot))
    if result.returncode != 0:
        raise SystemExit(f"{checkout}: {result.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


COMMAND = (
    "import json, resource, subprocess, sys, time; "
    "start = time.perf_counter(); "
    "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(json.dumps({'seconds': time.perf_counter() - start, "
    "'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def from_command(checkout: Path, slug: str, n_boot: int) -> dict[str, float]:
    """Wall time and peak RSS of ``manage.py campaign_report --json`` (a helper runs it and reads its rusage)."""
    python = str(checkout / ".venv" / "bin" / "python")
    result = run_in(checkout, "-c", COMMAND, python, "manage.py", "campaign_report", "--campaign", slug, "--json",
                    "--n-boot", str(n_boot))
    if result.returncode != 0:
        raise SystemExit(f"{checkout}: {result.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def prepare(scales: list[int]) -> dict[int, str]:
    """Migrate DATABASE_URL and import one campaign per scale (kept when already there)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from annotation.models import Annotation, Campaign, OutputJudgement
    from config.datasets import simpeval_data_dir

    call_command("migrate", verbosity=0)
    slugs: dict[int, str] = {}
    for scale in scales:
        slug = f"bench-past-{scale}x"
        slugs[scale] = slug
        if Campaign.objects.filter(slug=slug).exists():
            continue
        start = time.perf_counter()
        call_command("import_simpeval", str(simpeval_data_dir() / "simpeval" / "simpeval_past.csv"),
                     "--campaign", slug, "--no-analysis", verbosity=0)
        campaign = Campaign.objects.get(slug=slug)
        originals = list(Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED))
        slots = {int(a.rater_slot.split("_")[1]) for a in originals}
        judgements: dict[int, list[OutputJudgement]] = {}
        for j in OutputJudgement.objects.filter(annotation__in=originals):
            judgements.setdefault(j.annotation_id, []).append(j)
        with transaction.atomic():
            for copy in range(1, scale):
                new: list[Annotation] = []
                for a in originals:
                    slot = int(a.rater_slot.split("_")[1]) + copy * max(slots)
                    new.append(Annotation(source_id=a.source_id, import_batch_id=a.import_batch_id,
                                          rater_slot=f"rating_{slot}", status=a.status, version=a.version,
                                          submitted_at=a.submitted_at))
                Annotation.objects.bulk_create(new, batch_size=2000)
                rows = [
                    OutputJudgement(annotation_id=b.pk, output_id=j.output_id, category=j.category,
                                    auto_category=j.auto_category,
                                    rating=min(100.0, max(0.0, j.rating + ((j.output_id * 7 + copy * 13) % 7) - 3)),
                                    z_score=j.z_score)
                    for a, b in zip(originals, new, strict=True)
                    for j in judgements.get(a.pk, [])
                ]
                OutputJudgement.objects.bulk_create(rows, batch_size=5000)
        n = OutputJudgement.objects.filter(annotation__source__campaign=campaign).count()
        print(f"prepared {slug}: {n} ratings in {time.perf_counter() - start:.1f} s", flush=True)
    from django.db import connection

    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would give a live database
        cursor.execute("ANALYZE")
    return slugs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=None, help="a checkout to compare with (its own .venv)")
    parser.add_argument("--scales", default="1,3,10")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--skip-command", action="store_true")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("skipped: set DATABASE_URL to a PostgreSQL database this benchmark may fill")
        return
    checkouts = [("after", REPO_ROOT)]
    if args.before is not None and args.before.resolve() != REPO_ROOT:
        if not (args.before / ".venv" / "bin" / "python").exists():
            parser.error(f"--before {args.before}: no .venv/bin/python there")
        checkouts.insert(0, ("before", args.before.resolve()))
    scales = [int(s) for s in args.scales.split(",")]
    slugs = prepare(scales)
    print(f"\nreport (n_boot={args.n_boot}); shared machine, compare within this run")
    print(f"{'scale':>5} {'ratings':>8} {'checkout':>8} | {'in-process s':>12} {'+RSS MB':>8} {'peak MB':>8} | "
          f"{'command s':>9} {'peak MB':>8}")
    for scale in scales:
        for name, checkout in checkouts:
            inp = in_process(checkout, slugs[scale], args.n_boot)
            cmd = {"seconds": float("nan"), "peak_mb": float("nan")}
            if not args.skip_command:
                cmd = from_command(checkout, slugs[scale], args.n_boot)
            print(f"{scale:>4}x {int(inp['ratings']):>8} {name:>8} | {inp['seconds']:>12.2f} {inp['delta_mb']:>8.0f} "
                  f"{inp['peak_mb']:>8.0f} | {cmd['seconds']:>9.2f} {cmd['peak_mb']:>8.0f}", flush=True)
    print("goals: 1x <= 0.5 s in-process, <= 1.5 s command; 10x <= 3 s, <= 400 MB")


if __name__ == "__main__":
    main()
