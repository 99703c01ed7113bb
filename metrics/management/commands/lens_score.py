"""Score a JSONL file of {"complex", "output", "references"} objects with a LENS version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.budgets import SCORE_BATCH_MAX, bound_int
from core.commands import ProjectCommand
from core.errors import ServiceError
from metrics.lens import ScoreInput
from metrics.selectors import learned_version_ref
from metrics.services.scoring import lens_scorer, lens_version_for_scoring


class Command(ProjectCommand):
    help = (
        "Score JSONL lines {\"complex\", \"output\", \"references\": [...]} with LENS; writes each input "
        "object with lens_z, lens_score (0-100), lens_per_reference, lens_truncated and lens_version added."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # --version here picks the LENS version; it replaces Django's own --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--version", dest="lens_version", default="active",
                            help="'active', 'latest' or a version id")
        parser.add_argument("--input", type=Path, required=True)
        parser.add_argument("--out", type=Path, required=True)
        parser.add_argument("--batch-size", type=int, default=64, help="items per model call")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            size = bound_int(options["batch_size"], field="--batch-size", low=1, high=SCORE_BATCH_MAX)
            version = lens_version_for_scoring(learned_version_ref(options["lens_version"], param="--version"))
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        path: Path = options["input"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        rows: list[dict[str, Any]] = []
        triples: list[ScoreInput] = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                refs = row["references"]
                if isinstance(refs, str) or not refs:
                    raise ValueError("references must be a non-empty list")
                triples.append(ScoreInput(str(row["complex"]), str(row["output"]), [str(r) for r in refs]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise CommandError(f"{path}:{number}: {type(exc).__name__}: {exc}") from None
            rows.append(row)
        scorer = lens_scorer(version)
        options["out"].parent.mkdir(parents=True, exist_ok=True)
        with options["out"].open("w", encoding="utf-8") as out:
            for start in range(0, len(triples), size):
                try:
                    predictions = scorer.predict(triples[start : start + size])
                except ValueError as exc:
                    raise CommandError(f"items {start + 1}-{start + size}: {exc}") from None
                for row, p in zip(rows[start : start + size], predictions, strict=True):
                    out.write(json.dumps({**row, "lens_z": p.z, "lens_score": p.score,
                                          "lens_per_reference": p.per_reference, "lens_truncated": p.truncated,
                                          "lens_version": version.pk}, ensure_ascii=False) + "\n")
        self.stdout.write(f"scored {len(rows)} item(s) with LENS v{version.pk} -> {options['out']}")
