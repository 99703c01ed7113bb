"""Meta-evaluation through the product on SimpEval_past (2,400 outputs, ten ASSET references each).

Usage: ``python benchmarks/bench_meta_evaluation.py [--metrics fkgl,bleu,...] [--skip-bertscore]``

In a throw-away test database (SQLite in memory, or ``test_<name>`` of ``DATABASE_URL``): imports
SimpEval_past with its ten ASSET references through ``import_simpeval`` (the README's command), then
per metric scores and stores every output (``campaign_metric_scores_compute``, outputs per second) and
runs the meta-evaluation over the stored scores (``rated_meta_evaluate``: tau-like with pair counts,
Pearson/Spearman against the mean z, 1,000 bootstrap resamples), and finally the whole comparison as
``meta_evaluate --metric all`` runs it (every metric, with the paired bootstrap test of every pair), and
again with ``--level both`` (system-level figures, tie-calibrated accuracy and significance clusters added).
Reading the campaign's ratings (``campaign_rated_outputs``: 12,000 judgements, their z-scores and final
categories) happens once per run, whatever the number of metrics, and is timed on its own.  Target:
meta-evaluation under 1 s per metric.  Prints figures; asserts nothing (the cores may be shared: run
it twice).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from io import StringIO
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from annotation.models import Campaign  # noqa: E402
from config.datasets import simpeval_data_dir  # noqa: E402
from metrics.selectors import campaign_rated_outputs  # noqa: E402
from metrics.services.meta_evaluation import campaign_meta_evaluate, rated_meta_evaluate  # noqa: E402
from metrics.services.metric_registry import metrics_get  # noqa: E402
from metrics.services.metric_scores import campaign_metric_scores, campaign_metric_scores_compute  # noqa: E402

N_BOOT = 1000
TARGET_SECONDS = 1.0
DEFAULT_METRICS = "fkgl,bleu,gleu,sari,sari:lens,bertscore"


def import_past(data_dir: Path) -> Campaign:
    asset = data_dir / "asset"
    start = time.perf_counter()
    call_command(
        "import_simpeval", str(data_dir / "simpeval" / "simpeval_past.csv"), "--campaign", "simpeval-past",
        "--no-analysis", "--references", str(asset / "asset.test.orig"),
        *[str(asset / f"asset.test.simp.{k}") for k in range(10)], stdout=StringIO(),
    )
    print(f"import SimpEval_past with 10 ASSET references: {time.perf_counter() - start:.1f} s")
    return Campaign.objects.get(slug="simpeval-past")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics", default=DEFAULT_METRICS)
    parser.add_argument("--skip-bertscore", action="store_true")
    args = parser.parse_args()
    names = [n for n in args.metrics.split(",") if n and not (args.skip_bertscore and "bertscore" in n)]

    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        print(f"database: {connection.vendor} ({test_db})")
        campaign = import_past(simpeval_data_dir())
        start = time.perf_counter()
        rated = campaign_rated_outputs(campaign)
        print(f"read the ratings once ({len(rated)} rated outputs): {time.perf_counter() - start:.2f} s")
        print(f"{'metric':<12} {'score (s)':>10} {'outputs/s':>10} {'meta-eval (s)':>14} {'tau_all':>8} "
              f"{'pearson':>8}  target <{TARGET_SECONDS:.0f} s")
        for name in names:
            [metric] = metrics_get(name)
            start = time.perf_counter()
            done = campaign_metric_scores_compute(campaign=campaign, metrics=[metric])
            score_s = time.perf_counter() - start
            start = time.perf_counter()
            stored, signatures = campaign_metric_scores(campaign, metrics=[metric.name])
            scores = {metric.name: {pk: rows[metric.name].value for pk, rows in stored.items()}}
            result = rated_meta_evaluate(rated, scores, signatures=signatures, n_boot=N_BOOT)
            meta_s = time.perf_counter() - start
            entry = result["metrics"][metric.name]
            n = done.scored[metric.name]
            print(f"{name:<12} {score_s:>10.2f} {n / score_s:>10.0f} {meta_s:>14.3f} {entry['kendall']['all']:>8.3f} "
                  f"{entry['pearson']:>8.3f}  {'ok' if meta_s < TARGET_SECONDS else 'SLOW'}")
        start = time.perf_counter()
        result = campaign_meta_evaluate(campaign=campaign, metric=None, compute=False, n_boot=N_BOOT)
        all_s = time.perf_counter() - start
        print(f"meta_evaluate --metric all ({len(result['metrics'])} metrics, {len(result['paired'])} paired tests, "
              f"ratings read included): {all_s:.2f} s = {all_s / max(1, len(result['metrics'])):.3f} s per metric, "
              f"{result['outputs']} outputs")
        start = time.perf_counter()
        result = campaign_meta_evaluate(campaign=campaign, metric=None, compute=False, n_boot=N_BOOT, level="both")
        both_s = time.perf_counter() - start
        print(f"meta_evaluate --metric all --level both (adds acc_eq, {len(result['system']['systems'])} systems' "
              f"figures, clusters and Williams' tests): {both_s:.2f} s = "
              f"{both_s / max(1, len(result['metrics'])):.3f} s per metric")
    finally:
        connection.creation.destroy_test_db(test_db, verbosity=0)


if __name__ == "__main__":
    main()
