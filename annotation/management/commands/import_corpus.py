from __future__ import annotations

from argparse import ArgumentParser
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.services.corpora import corpus_import
from core.commands import ProjectCommand
from core.errors import ServiceError

from ._common import as_command_error


class Command(ProjectCommand):
    help = (
        "Import a corpus without ratings under a name: line-aligned source file and reference files, e.g. "
        "import_corpus --name asset-valid asset.valid.orig asset.valid.simp.0 ... asset.valid.simp.9"
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("orig", type=Path, help="source sentences, one per line")
        parser.add_argument("simp", type=Path, nargs="+", help="reference files, line-aligned with ORIG")
        parser.add_argument("--name", required=True, help="corpus name (e.g. asset-valid)")
        parser.add_argument("--replace", action="store_true", help="replace a corpus of that name")

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = [options["orig"], *options["simp"]]
        for path in paths:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        try:
            with ExitStack() as stack:
                handles = [stack.enter_context(path.open("rb")) for path in paths]
                corpus = corpus_import(
                    name=options["name"],
                    source_file=handles[0],
                    source_filename=paths[0].name,
                    reference_files=[(h, p.name) for h, p in zip(handles[1:], paths[1:], strict=True)],
                    replace=options["replace"],
                )
        except ServiceError as exc:
            raise as_command_error(exc) from None
        self.stdout.write(
            f"corpus {corpus.name}: {corpus.items.count()} sources, {len(paths) - 1} reference files"
        )
