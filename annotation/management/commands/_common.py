from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from django.core.management.base import CommandError

from annotation.formats import FormatError
from annotation.models import Campaign
from annotation.services.imports import references_read
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
        with ExitStack() as stack:
            opened = [(stack.enter_context(f.open("rb")), f.name) for f in files]
            return references_read(source=opened[0], files=opened[1:])
    except (FormatError, ServiceError) as exc:
        raise as_command_error(exc) from None
