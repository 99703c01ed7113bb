"""Practice sentences as a researcher sets them: which sources are practice, and their expected answers.

The answers are checked by ``annotation.services.tutorials`` (the gate annotators pass); this module only
marks sources and stores what that check reads, for the research page, the admin and the API alike.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation.models import Assignment, Slot, Source
from annotation.services.assignments import campaign_ensure_slots
from annotation.services.tutorials import tutorial_key_check
from core.errors import Conflict


def source_practice_check(*, source: Source, practice: bool, key: Any = None) -> dict[str, Any] | None:
    """What `source_practice_set` would store as the expected answer (None: not practice), or its refusal;
    writes nothing (the admin's form asks it before saving)."""
    if not practice:
        return None
    checked = tutorial_key_check(source=source, key=key)
    if not source.is_tutorial and Assignment.objects.filter(source=source).exists():
        raise Conflict(f"source {source.external_id!r} has been given to annotators already; only a source "
                       "nobody has worked on can become a practice sentence", field="is_tutorial")
    return checked


@transaction.atomic
def source_practice_set(*, source: Source, practice: bool, key: Any = None) -> Source:
    """Make ``source`` a practice sentence with the expected answer ``key`` (checked by `tutorial_key_check`),
    or (``practice=False``) real work again.

    A practice sentence is handed to no one as work: its free slots are deleted, and a source someone has
    been given already cannot become one (409). Made real work again, it gets its slots back.
    """
    source = Source.objects.select_for_update().get(pk=source.pk)
    checked = source_practice_check(source=source, practice=practice, key=key)
    if checked is not None:
        Slot.objects.filter(source=source, assignment__isnull=True).delete()
        source.is_tutorial, source.tutorial_key = True, checked
        source.save(update_fields=["is_tutorial", "tutorial_key"])
    elif source.is_tutorial:
        source.is_tutorial = False
        source.save(update_fields=["is_tutorial"])
        campaign_ensure_slots(campaign=source.campaign, source_ids=[source.pk])
    return source
