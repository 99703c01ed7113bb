from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.formats import FormatError
from annotation.formats.references import read_reference_files
from annotation.models import Campaign
from core.errors import ServiceError


def campaign_or_error(slug: str) -> Campaign:
    try:
        return Campaign.objects.get(slug=slug)
    except Campaign.DoesNotExist:
        raise CommandError(f"no campaign with slug {slug!r}") from None


def as_command_error(exc: Exception) -> CommandError:
    if isinstance(exc, FormatError | ServiceError):
        return CommandError(str(exc))
    return CommandError(f"{type(exc).__name__}: {exc}")


def references_or_error(files: list[Path] | None) -> dict[str, list[str]] | None:
    """``--references SRC DST [DST ...]`` read into source text -> references; None when not given."""
    if not files:
        return None
    if len(files) < 2:
        raise CommandError("--references needs a source file and at least one reference file")
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise CommandError(f"no such file: {', '.join(missing)}")
    try:
        return read_reference_files(files[0], files[1:])
    except FormatError as exc:
        raise as_command_error(exc) from None
