"""Cross-check of the system-level and tie-calibrated figures against Google's mt-metrics-eval (MTME).

Runs in two halves.  The project half (the default; Django, the project's virtual environment) reads each
campaign's rated outputs and stored metric scores exactly as ``meta_evaluate`` does, computes the project's
figures with :func:`metrics.services.meta_evaluation.rated_meta_evaluate` (``level="both"``), writes the same
scores as plain matrices to a JSON file and runs the MTME half in MTME's own virtual environment
(``--mtme-python``), with MTME's source folder on its path (``--mtme-src``; MTME is never installed here and none
of its code is in this repository).  The MTME half calls MTME's ``stats.KendallWithTiesOpt`` (``acc23``:
pairwise accuracy with tie calibration) on the system means (no grouping) and on the outputs (grouped by item,
that is by source), ``stats.Agreement`` (pairwise system accuracy) and ``stats.WilliamsTest``.  The project half
prints both sides and the largest absolute difference.

    nice .venv/bin/python -m experiments.mtme_crosscheck --mtme-python /work/mtme-venv/bin/python \\
        --mtme-src /work/mtme-src --campaign s22 --campaign simpda-2022 --metric all

Scores must be stored first (``meta_evaluate --metric all`` stores them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOLERANCE = 1e-6


# --- The MTME half (MTME's venv: numpy, scipy and MTME's source only) ---------------------------------------


def _mtme_side(src: str, path: str) -> None:
    sys.path.insert(0, src)
    from mt_metrics_eval import stats  # type: ignore[import-not-found]

    data = json.loads(Path(path).read_text())
    out: dict[str, Any] = {}
    for column, block in data["columns"].items():
        human_sys = block["human_system"]
        cells: dict[str, Any] = {}
        for name, metric_sys in block["metric_system"].items():
            value, epsilon, _ = stats.KendallWithTiesOpt(human_sys, metric_sys, "acc23", 1, "none", 1.0)
            agree, pairs = stats.Agreement(human_sys, metric_sys)
            n_sys = block["n_systems"]
            item_value, item_epsilon, _ = stats.KendallWithTiesOpt(
                block["human_items"], block["metric_items"][name], "acc23", n_sys, "item", 1.0
            )
            cells[name] = {"system_acc_eq": float(value), "system_epsilon": float(epsilon),
                           "system_accuracy": agree / pairs, "output_acc_eq": float(item_value),
                           "output_epsilon": float(item_epsilon)}
        williams = {}
        for pair in block["williams"]:
            williams[f"{pair['metric_a']}|{pair['metric_b']}"] = float(
                stats.WilliamsTest(pair["r_a"], pair["r_b"], pair["r_ab"], pair["n"])
            )
        out[column] = {"metrics": cells, "williams": williams}
    print(json.dumps(out))


# --- The project half ---------------------------------------------------------------------------------------


def _matrix(per_output: list[float], human: list[float], systems: list[str], sources: list[int],
            cell_of: dict[tuple[str, int], int]) -> list[float | None]:
    """Outputs as a flat systems x sources matrix, system-major (MTME reshapes to (systems, items)); None where a
    system has no output of a source or the output has no human value."""
    flat: list[float | None] = []
    for system in systems:
        for source in sources:
            i = cell_of.get((system, source))
            flat.append(None if i is None or not math.isfinite(human[i]) else per_output[i])
    return flat


def _raw_columns(rated: list[Any]) -> dict[str, list[float]]:
    """Each output's mean raw rating ("raw"), or its raw rating per aspect ("<aspect> raw")."""
    aspects = sorted({a for r in rated for a in r.aspects_raw})
    if aspects:
        return {f"{a} raw": [r.aspects_raw.get(a, math.nan) for r in rated] for a in aspects}
    return {"raw": [sum(r.ratings.values()) / len(r.ratings) if r.ratings else math.nan for r in rated]}



def _project_side(args: argparse.Namespace) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from annotation.models import Campaign
    from evaluation.stats.system_level import grouped_acc_eq, system_level_figures
    from metrics.selectors import campaign_rated_outputs
    from metrics.services.meta_evaluation import human_columns, rated_outputs_filter
    from metrics.services.metric_registry import metrics_get
    from metrics.services.metric_scores import campaign_metric_scores

    worst = 0.0
    for slug in args.campaign:
        campaign = Campaign.objects.get(slug=slug)
        rated = rated_outputs_filter(campaign_rated_outputs(campaign), exclude_systems=args.exclude_system)
        wanted = [m.name for m in metrics_get(args.metric)]
        stored, signatures = campaign_metric_scores(campaign, metrics=wanted)
        names = [n for n in wanted if n in signatures]
        scores = {n: {pk: rows[n].value for pk, rows in stored.items() if n in rows} for n in names}
        usable = [r for r in rated if all(r.output_pk in scores[n] for n in names)]
        humans = human_columns(usable)  # what meta_evaluate compares with (mean z, or z per aspect)
        if args.raw:  # raw ratings tie far more often: they put the tie calibration to work
            humans.update(_raw_columns(usable))
        source_keys = [str(r.source_pk) for r in usable]
        columns = {n: [scores[n][r.output_pk] for r in usable] for n in names}
        ours = {"system": system_level_figures(source_keys, [r.system for r in usable], humans, columns, n_boot=0),
                "output": grouped_acc_eq(source_keys, humans, columns, n_boot=0)}
        systems = ours["system"]["systems"]
        sources = sorted({r.source_pk for r in usable})
        cell_of = {(r.system, r.source_pk): i for i, r in enumerate(usable)}
        if len(cell_of) != len(usable):
            raise SystemExit(f"{slug}: a system has two outputs of one source; the matrices need one")
        payload: dict[str, Any] = {"columns": {}}
        for column, values in humans.items():
            human_means = ours["system"]["human_means"][column]
            present = [s for s in systems if s in human_means]

            payload["columns"][column] = {
                "n_systems": len(present),
                "human_system": [human_means[s] for s in present],
                "metric_system": {n: [ours["system"]["metrics"][n]["means"][column][s] for s in present]
                                  for n in names},
                "human_items": _matrix(values, values, present, sources, cell_of),
                "metric_items": {n: _matrix([scores[n][r.output_pk] for r in usable], values, present, sources, cell_of)
                                 for n in names},
                "williams": ours["system"]["williams"][column],
            }
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(payload, handle)
        try:
            done = subprocess.run(
                [args.mtme_python, str(Path(__file__).resolve()), "--mtme-side", "--mtme-src", args.mtme_src,
                 handle.name], check=True, capture_output=True, text=True,
            )
        finally:
            Path(handle.name).unlink()
        mtme = json.loads(done.stdout)
        label = slug + (f" without {', '.join(args.exclude_system)}" if args.exclude_system else "")
        print(f"== {label}: {len(usable)} outputs, {len(systems)} systems, {len(sources)} sources")
        for column in humans:
            print(f"  humans: {column}")
            print(f"  {'metric':<15} {'sys acc':>8} {'MTME':>8} {'sys acc_eq':>10} {'MTME':>8} {'eps':>8} "
                  f"{'MTME eps':>8} {'out acc_eq':>10} {'MTME':>8} {'eps':>8} {'MTME eps':>8}")
            for n in names:
                ours_sys = ours["system"]["metrics"][n][column]
                ours_out = ours["output"]["metrics"][n][column]
                theirs = mtme[column]["metrics"][n]
                pairs = [(ours_sys["accuracy"]["value"], theirs["system_accuracy"]),
                         (ours_sys["acc_eq"]["value"], theirs["system_acc_eq"]),
                         (ours_out["value"], theirs["output_acc_eq"])]
                worst = max([worst, *(abs(a - b) for a, b in pairs)])
                print(f"  {n:<15} {pairs[0][0]:8.6f} {pairs[0][1]:8.6f} {pairs[1][0]:10.6f} {pairs[1][1]:8.6f} "
                      f"{ours_sys['acc_eq']['epsilon']:8.4g} {theirs['system_epsilon']:8.4g} "
                      f"{pairs[2][0]:10.6f} {pairs[2][1]:8.6f} {ours_out['epsilon']:8.4g} "
                      f"{theirs['output_epsilon']:8.4g}")
            for pair in ours["system"]["williams"][column]:
                theirs_p = mtme[column]["williams"][f"{pair['metric_a']}|{pair['metric_b']}"]
                if pair["p_value"] is not None:
                    worst = max(worst, abs(pair["p_value"] - theirs_p))
            print(f"  Williams' test: {len(ours['system']['williams'][column])} pairs compared")
    print(f"largest absolute difference: {worst:.2e} ({'within' if worst <= TOLERANCE else 'OVER'} {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mtme-python", default="/work/mtme-venv/bin/python", help="MTME's venv's python")
    parser.add_argument("--mtme-src", default="/work/mtme-src",
                        help="the folder holding MTME's mt_metrics_eval package (its source, not installed here)")
    parser.add_argument("--campaign", action="append", default=[])
    parser.add_argument("--exclude-system", action="append", default=[])
    parser.add_argument("--metric", default="all")
    parser.add_argument("--raw", action="store_true",
                        help="also compare on the raw ratings (mean raw rating, or raw per aspect), which tie")
    parser.add_argument("--mtme-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("data", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mtme_side:
        _mtme_side(args.mtme_src, args.data)
        return 0
    if not args.campaign:
        parser.error("name at least one --campaign")
    return _project_side(args)


if __name__ == "__main__":
    raise SystemExit(main())
