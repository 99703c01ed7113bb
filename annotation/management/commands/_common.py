from __future__ import annotations

from django.core.management.base import CommandError

from annotation.formats import FormatError
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
