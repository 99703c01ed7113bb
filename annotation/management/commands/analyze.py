from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandParser

from annotation.models import Output
from annotation.selectors import campaign_analysis_counts
from annotation.services.analysis import campaign_analyse
from core.commands import ProjectCommand

from ._common import campaign_or_error


class Command(ProjectCommand):
    help = (
        "Analyse a campaign's outputs (categories, edits, ASSET features) where missing or stale, and "
        "write one JSON object per output: original_id, system, category, reasons, edits, features."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--campaign", required=True)
        parser.add_argument("--jsonl", type=Path, help="write the per-output results here")

    def handle(self, *args: Any, **options: Any) -> None:
        campaign = campaign_or_error(options["campaign"])
        analysed = campaign_analyse(campaign=campaign)
        self.stderr.write(f"Analysed {analysed} distinct output texts (the others were up to date).")
        degraded = campaign_analysis_counts(campaign=campaign)["degraded"]
        if degraded:
            self.stderr.write(self.style.WARNING(
                f"{degraded} output texts are analysed without the token encoder (it failed): lexical alignment "
                "only. Run this command again once the encoder works to redo them."
            ))
        out: Path | None = options["jsonl"]
        if out is None:
            return
        outputs = (
            Output.objects.filter(source__campaign=campaign)
            .select_related("source", "system", "unit")
            .order_by("source__order", "row_index", "id")
        )
        tmp = out.with_name(out.name + ".part")
        with tmp.open("w", encoding="utf-8") as handle:
            for output in outputs:
                analysis = output.unit.analysis or {}
                handle.write(json.dumps({
                    "original_id": output.source.external_id,
                    "system": output.system.name,
                    "category": analysis.get("category"),
                    "reasons": analysis.get("reasons"),
                    "edits": analysis.get("edits"),
                    "features": analysis.get("features"),
                    "engine_version": analysis.get("engine_version"),
                    "error": analysis.get("error"),
                }, ensure_ascii=False) + "\n")
        tmp.replace(out)
        self.stdout.write(f"Wrote {out}")
