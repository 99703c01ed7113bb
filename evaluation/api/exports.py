"""Export of a campaign over the API: the SimpEval CSV or the full JSONL (`evaluation.services.exports`)."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.errors import ServiceError
from core.permissions import IsResearcher
from evaluation.selectors import campaign_excluded_annotators
from evaluation.services.exports import campaign_export_jsonl, campaign_export_simpeval

EXPORT_TYPES = ("csv", "jsonl")


class CampaignExportApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter("type", enum=EXPORT_TYPES, default="csv")],
                   responses={(200, "text/csv"): str, (200, "application/x-ndjson"): str},
                   summary="SimpEval CSV or full JSONL export")
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        kind = request.query_params.get("type", "csv")
        if kind not in EXPORT_TYPES:
            raise ServiceError(f"type must be one of {', '.join(EXPORT_TYPES)}", field="type")
        response: HttpResponseBase
        # Which annotators a researcher excluded (quality control), by pseudonym; "-" for none.
        excluded = ",".join(u.pseudonym for u in campaign_excluded_annotators(campaign)) or "-"
        if kind == "jsonl":
            response = StreamingHttpResponse(
                campaign_export_jsonl(campaign=campaign), content_type="application/x-ndjson"
            )
            response["Content-Disposition"] = f'attachment; filename="{campaign.slug}.jsonl"'
            response["X-Excluded-Annotators"] = excluded
            return response
        response = HttpResponse(campaign_export_simpeval(campaign=campaign), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}.csv"'
        response["X-Excluded-Annotators"] = excluded
        return response
