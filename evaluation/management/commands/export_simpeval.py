from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from annotation.management.commands._common import campaign_or_error
from core.commands import ProjectCommand
from evaluation.services.exports import campaign_export_jsonl, campaign_export_simpeval


class Command(ProjectCommand):
    help = "Export a campaign as a SimpEval CSV (--format csv, default) or as the full JSONL (--format jsonl)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--format", choices=["csv", "jsonl"], default="csv")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_or_error(options["campaign"])
        out: Path = options["out"]
        tmp = out.with_name(out.name + ".part")
        with tmp.open("w", encoding="utf-8", newline="") as handle:
            if options["format"] == "csv":
                handle.write(campaign_export_simpeval(campaign=campaign))
            else:
                handle.writelines(campaign_export_jsonl(campaign=campaign))
        tmp.replace(out)
        self.stdout.write(f"Wrote {out}")
