"""Creating and editing campaigns."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.text import slugify

from annotation.models import Campaign, User
from annotation.rules import completion_url_problem
from annotation.services.allocation import allocation_check
from annotation.services.assignments import campaign_allocation_set
from core.errors import Conflict, ServiceError

EDITABLE = (
    "name", "instructions", "ratings_per_output", "compression_threshold", "idle_release_minutes", "batch_size",
    "crowd_places", "crowd_completion_url", "allocation",
)
# Past a year an idle assignment is never released in practice; larger values overflow date arithmetic.
MAX_IDLE_RELEASE_MINUTES = 60 * 24 * 366
MAX_BATCH_SIZE = 100_000  # sources per annotator at most (None: no limit)
SLUG_MAX_CHARS = 100
MAX_CROWD_PLACES = 1_000_000  # Campaign.crowd_places' validator


def _check_fields(fields: dict[str, Any]) -> None:
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ServiceError(f"unknown field(s): {', '.join(sorted(unknown))}")
    places = fields.get("crowd_places")
    if places is not None and not 1 <= places <= MAX_CROWD_PLACES:
        raise ServiceError(f"the places must be from 1 to {MAX_CROWD_PLACES}", field="crowd_places")
    url = fields.get("crowd_completion_url")
    problem = completion_url_problem(url) if url else None
    if problem:
        raise ServiceError(problem, field="crowd_completion_url")
    minutes = fields.get("idle_release_minutes")
    if minutes is not None and not 1 <= minutes <= MAX_IDLE_RELEASE_MINUTES:
        raise ServiceError(f"idle_release_minutes must be from 1 to {MAX_IDLE_RELEASE_MINUTES}",
                           field="idle_release_minutes")
    if "allocation" in fields:
        allocation_check(fields["allocation"])
    batch = fields.get("batch_size")
    if batch is not None and not 1 <= batch <= MAX_BATCH_SIZE:
        raise ServiceError(f"batch_size must be from 1 to {MAX_BATCH_SIZE:,} (or empty for no limit)",
                           field="batch_size")


@transaction.atomic
def campaign_create(*, name: str, slug: str | None, owner: User, **fields: Any) -> Campaign:
    # A slug made from a long name is cut at a word boundary to fit the column.
    slug = slug or slugify(name)[:SLUG_MAX_CHARS].strip("-")
    if not slug or slug != slugify(slug):
        raise ServiceError("the slug may only hold lowercase letters, digits and hyphens", field="slug")
    if len(slug) > SLUG_MAX_CHARS:
        raise ServiceError(f"the slug may have at most {SLUG_MAX_CHARS} characters", field="slug")
    if Campaign.objects.filter(slug=slug).exists():
        raise Conflict(f"a campaign with slug {slug!r} already exists", field="slug")
    _check_fields(fields)
    campaign = Campaign(name=name, slug=slug, **fields)
    campaign.full_clean()
    campaign.save()
    campaign.owners.add(owner)
    return campaign


@transaction.atomic
def campaign_update(*, campaign: Campaign, **fields: Any) -> Campaign:
    _check_fields(fields)
    allocation = fields.pop("allocation", None)
    threshold_changed = (
        "compression_threshold" in fields and fields["compression_threshold"] != campaign.compression_threshold
    )
    ratings_changed = (
        "ratings_per_output" in fields and fields["ratings_per_output"] != campaign.ratings_per_output
    )
    for key, value in fields.items():
        setattr(campaign, key, value)
    campaign.full_clean()
    campaign.save(update_fields=list(fields))
    if threshold_changed:
        from annotation.services.queue import campaign_schedule_analysis

        campaign_schedule_analysis(campaign=campaign)
    if ratings_changed and campaign.memberships.filter(active=True).exists():
        from annotation.services.assignments import campaign_distribute, campaign_ensure_slots

        campaign_ensure_slots(campaign=campaign)
        campaign_distribute(campaign=campaign)
    if allocation is not None:
        campaign_allocation_set(campaign=campaign, allocation=allocation)
    return campaign
