from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.formats import FormatError
from annotation.services.imports import campaign_import
from core.commands import ProjectCommand
from core.errors import ServiceError

from ._common import as_command_error, references_or_error


class Command(ProjectCommand):
    help = (
        "Import a released SimpEval CSV (2022 or past layout) into a campaign, creating it if needed. "
        "References: --references SRC DST [DST ...] (DST lines hold tab-separated references; several "
        "line-aligned files, e.g. ASSET's asset.test.simp.0..9, are combined)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--references", nargs="+", type=Path, metavar="FILE",
                            help="a .src file then one or more reference files")
        parser.add_argument("--no-analysis", action="store_true", help="do not queue the text analysis")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        references = references_or_error(options["references"])
        try:
            with path.open("rb") as handle:
                result = campaign_import(
                    kind="simpeval", file=handle, filename=path.name, campaign_slug=options["campaign"],
                    references=references, analyse=not options["no_analysis"],
                )
        except (FormatError, ServiceError) as exc:
            raise as_command_error(exc) from None
        self.stdout.write(result.summary())
