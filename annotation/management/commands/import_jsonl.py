from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.formats import FormatError
from annotation.services.imports import campaign_import
from core.commands import ProjectCommand
from core.errors import ServiceError

from ._common import as_command_error


class Command(ProjectCommand):
    help = 'Import a JSONL file of sources ({"id", "source", "references": [...], "outputs": [{"system", "text"}]}).'

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--campaign", required=True, help="campaign slug")
        parser.add_argument("--name", help="campaign name when it is created")
        parser.add_argument("--no-analysis", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            with path.open("rb") as handle:
                result = campaign_import(
                    kind="jsonl", file=handle, filename=path.name, campaign_slug=options["campaign"],
                    campaign_name=options["name"], analyse=not options["no_analysis"],
                )
        except (FormatError, ServiceError) as exc:
            raise as_command_error(exc) from None
        self.stdout.write(result.summary())
