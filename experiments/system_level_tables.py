"""Markdown tables of output- and system-level meta-evaluation for several campaigns (issue #46's closing table).

Each ``--dataset LABEL=SLUG[:EXCLUDED SYSTEM]`` is evaluated with
:func:`metrics.services.meta_evaluation.campaign_meta_evaluate` (``level="both"``), the function
``meta_evaluate --level both`` and the API use, on stored scores (``meta_evaluate --metric all`` stores them):

    .venv/bin/python -m experiments.system_level_tables --n-boot 1000 \\
        --dataset "SimpEval_2022=s22" --dataset "SimpEval_2022 without Human 1=s22:Human 1 Writing" \\
        --dataset "SimpDA_2022=simpda-2022" --dataset "Simplicity-DA=wiki-da" --dataset "SimpEval_past=past" \\
        --exclude-sources-of wiki-da=past   # Simplicity-DA without the sources SimpEval_past shares
"""

from __future__ import annotations

import argparse
import os
from typing import Any


def dataset_tables(label: str, result: dict[str, Any]) -> str:
    """One Markdown table per human column (:func:`metrics.services.meta_table.render_meta_table`, the rows the
    command's CSV and LaTeX carry): output-level figures, then system-level ones, with clusters."""
    from metrics.services.meta_table import render_meta_table

    excluded = f" ({result['outputs_excluded']} excluded)" if result.get("outputs_excluded") else ""
    head = (f"### {label}\n\n{result['outputs']} outputs{excluded}, {len(result['system']['systems'])} systems, "
            f"{result['n_boot']} resamples\n\nMetrics: {', '.join(result['metrics'])}.\n\n")
    return head + render_meta_table(result, "markdown")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", action="append", default=[], metavar="LABEL=SLUG[:SYSTEM]")
    parser.add_argument("--metric", default="all")
    parser.add_argument("--exclude-sources-of", action="append", default=[], metavar="SLUG=OTHER_SLUG",
                        help="for campaign SLUG, drop the sources campaign OTHER_SLUG also has (repeatable)")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from annotation.models import Campaign
    from metrics.services.meta_evaluation import campaign_meta_evaluate

    exclude_of = dict(spec.split("=", 1) for spec in args.exclude_sources_of)
    for spec in args.dataset:
        label, _, rest = spec.partition("=")
        slug, _, system = rest.partition(":")
        result = campaign_meta_evaluate(
            campaign=Campaign.objects.get(slug=slug), metric=args.metric, n_boot=args.n_boot, seed=args.seed,
            exclude_systems=[system] if system else [], level="both",
            exclude_sources_of=Campaign.objects.get(slug=exclude_of[slug]) if slug in exclude_of else None,
        )
        print(dataset_tables(label, result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
