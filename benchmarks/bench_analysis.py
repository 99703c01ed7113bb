"""Benchmark and agreement report for ``annotation.analysis``.

Usage::

    python benchmarks/bench_analysis.py [--limit N] [--skip-agreement]

1. Times the analysis of all outputs of ``simpeval/simpeval_past.csv`` (2,400)
   with ``analyze_many``; model loading is timed separately. Reports peak memory
   (``resource`` max RSS of the process, and tracemalloc's Python-heap peak for
   the analysis call), and checks that every edit list rebuilds its output.
2. Prints the confusion matrix of the automatic category against the annotators'
   final ``sentence_type`` on ``simpeval/simpeval_2022.csv``, for the paper rule
   and the refined rule, and checks that every edit list rebuilds its output.

3. ``--task`` (needs ``DATABASE_URL``, a database this script may fill): the worker's overhead over the core.
   Imports the first ``--task-rows`` rows of SimpEval_past into a campaign (no analysis), then, per checkout
   (this one, and the ``--before`` checkout when one is named, each in a fresh process on the same database),
   clears the units' analysis and runs the Celery task ``analysis_run`` in-process (``apply``) with the
   core ``analyze_many`` timed inside it: task seconds, core seconds, overhead = task - core, per unit.

Data come from ``$SIMPEVAL_DATA_DIR`` (default: ``shared/data`` beside the repo).
"""

from __future__ import annotations

import argparse
import csv
import resource
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from annotation.analysis import (  # noqa: E402
    RULES,
    analyze_many,
    apply_edits,
    categorize,
    token_keys,
)
from annotation.analysis.models import get_encoder, get_nlp  # noqa: E402
from config.datasets import simpeval_data_dir  # noqa: E402

LABELS = {"Splittings": "split", "Deletions": "deletion", "Paraphrases": "paraphrase"}
ORDER = ("split", "deletion", "paraphrase")


def read_rows(name: str) -> list[dict[str, str]]:
    with open(simpeval_data_dir() / "simpeval" / name, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def bench_past(limit: int | None) -> None:
    rows = read_rows("simpeval_past.csv")[:limit]
    pairs = [(r["original"], r["generation"]) for r in rows]
    start = time.perf_counter()
    get_nlp()
    get_encoder()
    load_s = time.perf_counter() - start
    print(f"model load: {load_s:.2f} s")

    tracemalloc.start()
    start = time.perf_counter()
    results = analyze_many(pairs)
    elapsed = time.perf_counter() - start
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # Timing again without tracemalloc's overhead.
    start = time.perf_counter()
    analyze_many(pairs)
    clean = time.perf_counter() - start
    errors = sum(r.error is not None for r in results)
    distinct = len({text for pair in pairs for text in pair})
    print(
        f"simpeval_past: {len(pairs)} outputs, {distinct} distinct texts, {errors} errors\n"
        f"  analysis: {clean:.2f} s = {1000 * clean / len(pairs):.1f} ms/output "
        f"(with tracemalloc: {elapsed:.2f} s)\n"
        f"  tracemalloc peak (Python heap, analysis call): {heap_peak / 2**20:.1f} MiB\n"
        f"  max RSS of the process: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )
    print("  categories:", dict(Counter(r.category for r in results)))
    broken = sum(
        r.error is None and apply_edits(s, o, r.edits) != token_keys(o)
        for (s, o), r in zip(pairs, results, strict=True)
    )
    print(f"  edit lists that fail to rebuild their output: {broken}")


def agreement() -> None:
    rows = read_rows("simpeval_2022.csv")
    results = analyze_many([(r["original"], r["generation"]) for r in rows])
    broken = sum(
        apply_edits(r["original"], r["generation"], a.edits) != token_keys(r["generation"])
        for r, a in zip(rows, results, strict=True)
    )
    print(f"\nsimpeval_2022: {len(rows)} outputs; edit lists that fail to rebuild: {broken}")
    for rule in RULES:
        confusion: Counter[tuple[str, str]] = Counter()
        for row, result in zip(rows, results, strict=True):
            predicted, _ = categorize(result.features, rule=rule)
            confusion[(LABELS[row["sentence_type"]], predicted)] += 1
        correct = sum(confusion[(c, c)] for c in ORDER)
        print(f"\nrule={rule}: agreement {correct}/{len(rows)} = {100 * correct / len(rows):.1f}%")
        print(f"{'annotators / auto':>18}" + "".join(f"{c:>12}" for c in ORDER))
        for gold in ORDER:
            print(f"{gold:>18}" + "".join(f"{confusion[(gold, c)]:>12}" for c in ORDER))


TASK_MEASURE = r"""
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
import django
django.setup()
from django.db import connection
import annotation.analysis as analysis
from annotation.models import Campaign, RatingUnit
from annotation.tasks import analysis_run
from core.services import background_job_create
campaign = Campaign.objects.get(slug=sys.argv[1])
real = analysis.analyze_many
real([("A cat sat on the mat.", "A cat sat.")])  # load spaCy and the encoder outside the timings
core = [0.0]
def timed(*args, **kwargs):
    start = time.perf_counter()
    result = real(*args, **kwargs)
    core[0] += time.perf_counter() - start
    return result
analysis.analyze_many = timed
runs = []
for _ in range(int(sys.argv[2])):
    RatingUnit.objects.filter(source__campaign=campaign).update(analysis_version="", analysed_threshold=None,
                                                                analysis={})
    core[0] = 0.0
    job = background_job_create(kind="analysis", subject=campaign)
    start = time.perf_counter()
    n = analysis_run.apply(args=(job.pk,)).get()
    runs.append({"units": n, "task": time.perf_counter() - start, "core": core[0]})
print(json.dumps(runs))
"""


def bench_task(rows: int, before: Path | None, repeat: int) -> None:
    import json
    import os
    import subprocess
    import tempfile

    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("--task needs DATABASE_URL (a database this script may fill)")
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from django.core.management import call_command

    from annotation.models import Campaign

    call_command("migrate", verbosity=0)
    slug = f"bench-analysis-{rows}"
    if not Campaign.objects.filter(slug=slug).exists():
        with open(simpeval_data_dir() / "simpeval" / "simpeval_past.csv", encoding="utf-8") as handle:
            lines = handle.read().splitlines(keepends=True)
        with tempfile.NamedTemporaryFile("w", suffix=".csv", encoding="utf-8", delete=False) as part:
            part.writelines(lines[: rows + 1])
        call_command("import_simpeval", part.name, "--campaign", slug, "--no-analysis", verbosity=0)
        os.unlink(part.name)
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env["CELERY_TASK_ALWAYS_EAGER"] = "1"
    print(f"\nanalysis task vs core, {rows} SimpEval_past rows, {repeat} runs each (best shown); shared machine")
    checkouts = [("after", ROOT)]
    if before is not None and before.resolve() != ROOT:
        checkouts.insert(0, ("before", before.resolve()))
    for name, checkout in checkouts:
        if not (checkout / ".venv" / "bin" / "python").exists():
            print(f"{name:>7}: skipped, no .venv/bin/python in {checkout}")
            continue
        out = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "-c", TASK_MEASURE, slug, str(repeat)],
                             cwd=checkout, env=env, capture_output=True, text=True, timeout=3600, check=False)
        if out.returncode != 0:
            raise SystemExit(f"{checkout}: {out.stderr[-3000:]}")
        best = min(json.loads(out.stdout.strip().splitlines()[-1]), key=lambda run: run["task"])
        units, task, core = best["units"], best["task"], best["core"]
        print(f"{name:>7}: {units} units, task {task:.2f} s, core {core:.2f} s, overhead {task - core:.2f} s "
              f"({(task - core) / units * 1000:.1f} ms/unit, task/core {task / core:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N outputs")
    parser.add_argument("--skip-agreement", action="store_true")
    parser.add_argument("--task", action="store_true", help="only the worker's overhead over the core (see 3.)")
    parser.add_argument("--task-rows", type=int, default=480)
    parser.add_argument("--task-repeat", type=int, default=2)
    parser.add_argument("--before", type=Path, default=None, help="--task: a checkout to compare with (its .venv)")
    args = parser.parse_args()
    if args.task:
        bench_task(args.task_rows, args.before, args.task_repeat)
        return
    bench_past(args.limit)
    if not args.skip_agreement:
        agreement()


if __name__ == "__main__":
    main()
