"""Who may see what: annotators their own assignments, researchers the campaigns they own, admins all.

The role permissions (`IsResearcher`, `IsPlatformAdmin`) are in `core.permissions`.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from annotation.models import Campaign, User


def campaigns_visible_to(user: User) -> QuerySet[Campaign]:
    if user.is_platform_admin:
        return Campaign.objects.all()
    if user.role == User.Role.RESEARCHER:
        return Campaign.objects.filter(owners=user)
    return Campaign.objects.filter(memberships__annotator=user, memberships__active=True)


def campaign_for_researcher(user: User, slug: str) -> Campaign:
    """The campaign if the user owns it (or is an admin); 404 otherwise, so slugs do not leak."""
    qs = Campaign.objects.all() if user.is_platform_admin else Campaign.objects.filter(owners=user)
    try:
        return qs.get(slug=slug)
    except Campaign.DoesNotExist:
        raise Http404("No such campaign.") from None
