"""Markdown tables of output- and system-level meta-evaluation for several campaigns (issue #46's closing table).

Each ``--dataset LABEL=SLUG[:EXCLUDED SYSTEM]`` is evaluated with
:func:`metrics.services.meta_evaluation.campaign_meta_evaluate` (``level="both"``), the function
``meta_evaluate --level both`` and the API use, on stored scores (``meta_evaluate --metric all`` stores them):

    .venv/bin/python -m experiments.system_level_tables --n-boot 1000 \\
        --dataset "SimpEval_2022=s22" --dataset "SimpEval_2022 without Human 1=s22:Human 1 Writing" \\
        --dataset "SimpDA_2022=simpda-2022" --dataset "Simplicity-DA=wiki-da" --dataset "SimpEval_past=past"
"""

from __future__ import annotations

import argparse
import os
from typing import Any


def _n(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _eps(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _ci(cell: dict[str, Any]) -> str:
    low, high = cell["ci_sources"]
    return f"{_n(cell['value'])} [{_n(low)}, {_n(high)}]"


def dataset_tables(label: str, result: dict[str, Any]) -> str:
    """One table per human column: output-level figures, then system-level ones, with clusters."""
    system = result["system"]
    lines = [f"### {label}", "",
             f"{result['outputs']} outputs, {len(system['systems'])} systems, {result['n_boot']} resamples"]
    for column in system["humans"]:
        clusters = system["clusters"][column]
        out_clusters = result["output_clusters"][column]
        head = "tau-like all" if result["kind"] == "kendall" else f"Pearson ({column})"
        lines += ["", f"Humans: {column}.", "",
                  f"| metric | {head} | acc_eq out (eps) | cl | sys Pearson [95% CI] | sys Kendall | "
                  "sys accuracy [95% CI] | sys acc_eq (eps) | cl acc/r/acc_eq |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for name in clusters["accuracy"]["order"]:
            entry = result["metrics"][name]
            output_figure = entry["kendall"]["all"] if result["kind"] == "kendall" else entry["pearson"].get(column)
            out_cell = entry["acc_eq"][column]
            cells = system["metrics"][name][column]
            eps = _eps(cells["acc_eq"]["epsilon"])
            out_eps = _eps(out_cell["epsilon"])
            ranks = "/".join(str(clusters[f]["rank"][name]) for f in ("accuracy", "pearson", "acc_eq"))
            lines.append(
                f"| {name} | {_n(output_figure)} | {_n(out_cell['value'])} ({out_eps}) "
                f"| {out_clusters['rank'][name]} | {_ci(cells['pearson'])} | {_n(cells['kendall']['value'])} | "
                f"{_ci(cells['accuracy'])} | {_n(cells['acc_eq']['value'])} ({eps}) "
                f"| {ranks} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", action="append", default=[], metavar="LABEL=SLUG[:SYSTEM]")
    parser.add_argument("--metric", default="all")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from annotation.models import Campaign
    from metrics.services.meta_evaluation import campaign_meta_evaluate

    for spec in args.dataset:
        label, _, rest = spec.partition("=")
        slug, _, system = rest.partition(":")
        result = campaign_meta_evaluate(
            campaign=Campaign.objects.get(slug=slug), metric=args.metric, n_boot=args.n_boot, seed=args.seed,
            exclude_systems=[system] if system else [], level="both",
        )
        print(dataset_tables(label, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
