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
        "Import a multi-aspect rating CSV into a campaign, creating it if needed: the Simplicity-DA layout "
        "(sent_id, sys_name, orig_sent, simp_sent, sys_type, <aspect>, <aspect>_zscore, ...) or the crowd "
        "layout of SimpDA_2022 / SimpLikert_2022 (WorkerId, Input.id, Input.original, Input.simplified, "
        "Input.system, Answer.<aspect>, ...). References: --references SRC DST [DST ...], matched to sources "
        "by text (DST lines hold one or more tab-separated references; several line-aligned files are combined)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--name", help="name of the campaign when it is created (default: its slug)")
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
                    kind="da", file=handle, filename=path.name, campaign_slug=options["campaign"],
                    campaign_name=options["name"], references=references, analyse=not options["no_analysis"],
                )
        except (FormatError, ServiceError) as exc:
            raise as_command_error(exc) from None
        self.stdout.write(result.summary())
