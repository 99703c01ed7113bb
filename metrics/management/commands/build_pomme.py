"""Train POMME's default n-gram language models on ASSET validation (once per machine)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from core.commands import ProjectCommand
from metrics.suite import create_metric
from metrics.suite.pomme import Pomme, asset_rows, build_default, compare_levels, default_lm_dir


class Command(ProjectCommand):
    help = (
        "Train POMME's complex- and plain-domain Kneser-Ney LMs on ASSET validation rows 0-1499 and store "
        "them with the z-reference (rows 1500-1999); --report prints APPLS Table 3 on ASSET test."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, help="artefact folder (default: $POMME_LM_DIR or var/pomme)")
        parser.add_argument("--report", action="store_true", help="compare ASSET test's two sides afterwards")

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir = Path(settings.SIMPEVAL_DATA_DIR)
        if not (data_dir / "asset" / "asset.valid.orig").is_file():
            raise CommandError(f"ASSET validation not found under {data_dir / 'asset'} (set SIMPEVAL_DATA_DIR)")
        out = build_default(data_dir, options["out"] or default_lm_dir())
        self.stdout.write(f"pomme: language models written to {out}")
        if options["report"]:
            metric = create_metric("pomme", lm_dir=out)
            assert isinstance(metric, Pomme)
            originals, columns = asset_rows(data_dir, "test", (0, 10**6))
            targets = [list(group) for group in zip(*columns, strict=True)]
            self.stdout.write("ASSET test (n sources; target = mean of the 10 simplifications)")
            self.stdout.write("column\tn\tsource\ttarget\tdelta\tp_ttest\tp_wilcoxon")
            for row in compare_levels(metric, originals, targets):
                self.stdout.write(
                    f"{row.column}\t{row.n}\t{row.source_mean:.3f}\t{row.target_mean:.3f}\t{row.delta:+.3f}"
                    f"\t{row.p_ttest:.2g}\t{row.p_wilcoxon:.2g}"
                )
            self.stdout.write(metric.signature)
