from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from annotation.services.imports import imports_clean_up
from core.commands import ProjectCommand

from ._common import campaign_or_error


class Command(ProjectCommand):
    help = (
        "Finish off the imports killed partway (no write step for IMPORT_STALE_SECONDS): remove the rows of an "
        "unfinished one, make the missing slots of one that was making them. Imports still running are left "
        "alone. Every worker's job reaper and the next import into the campaign do the same."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--campaign", help="only the imports into this campaign (slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        slug: str | None = options["campaign"]
        if slug is not None:
            campaign_or_error(slug)
        done = imports_clean_up(campaign_slug=slug)
        for line in done:
            self.stdout.write(line)
        self.stderr.write(f"{len(done)} abandoned import(s) cleaned up.")
