"""Django admin of evaluation: the SimpEval CSV export action on campaigns.

Campaigns are administered by ``annotation.admin.CampaignAdmin``; the export belongs to evaluation (it
needs the z-scores), so this module registers that admin again with the action added.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from annotation.admin import CampaignAdmin
from annotation.models import Campaign


class CampaignWithExportAdmin(CampaignAdmin):
    actions = ["export_simpeval"]  # CampaignAdmin has none of its own

    @admin.action(description="Export as SimpEval CSV")
    def export_simpeval(self, request: HttpRequest, queryset: QuerySet[Campaign]) -> HttpResponse | None:
        if queryset.count() != 1:
            self.message_user(request, "Choose exactly one campaign to export.", messages.WARNING)
            return None
        from evaluation.services.exports import campaign_export_simpeval  # numpy and the stats core, on use only

        campaign = queryset.get()
        response = HttpResponse(campaign_export_simpeval(campaign=campaign), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}.csv"'
        return response


admin.site.unregister(Campaign)
admin.site.register(Campaign, CampaignWithExportAdmin)
