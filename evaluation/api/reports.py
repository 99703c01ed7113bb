"""Researcher-facing API of a campaign's statistics: the report document and the leaderboard as CSV."""

from __future__ import annotations

import math
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.errors import ServiceError
from core.permissions import IsResearcher
from evaluation.services.report import campaign_report, campaign_report_timed, report_leaderboard_csv

REPORT_BEHIND_HEADER = "X-Report-Behind"
"""On a live report built on older ratings: the seconds after which one on the current ratings can be had."""


class CampaignReportApi(APIView):
    permission_classes = [IsResearcher]

    class CampaignReportOutputSerializer(serializers.Serializer[Any]):
        campaign = serializers.DictField()
        fingerprint = serializers.CharField()
        generated_at = serializers.DateTimeField()
        n_boot = serializers.IntegerField()
        seed = serializers.IntegerField()
        counts = serializers.DictField(child=serializers.IntegerField())
        ranked_by = serializers.ChoiceField(choices=["z", "raw"])
        systems = serializers.ListField(
            child=inline_serializer("ReportSystem", {
                "system": serializers.CharField(), "rank": serializers.IntegerField(),
                "n": serializers.IntegerField(), "n_outputs": serializers.IntegerField(),
                "raw_mean": serializers.FloatField(allow_null=True), "z_mean": serializers.FloatField(allow_null=True),
                "ci_low": serializers.FloatField(allow_null=True), "ci_high": serializers.FloatField(allow_null=True),
                "raw_ci_low": serializers.FloatField(allow_null=True),
                "raw_ci_high": serializers.FloatField(allow_null=True),
                "cluster": serializers.IntegerField(),
            })
        )
        alpha = serializers.DictField(child=serializers.DictField())
        categories = serializers.DictField()
        annotators = serializers.ListField(child=serializers.DictField())
        warnings = serializers.ListField(child=serializers.CharField())
        features = serializers.DictField()
        distributions = serializers.ListField(child=serializers.DictField())
        aspects = serializers.ListField(
            child=serializers.DictField(),
            help_text="Multi-aspect campaigns: per aspect (file order) its scale, where its z-scores come from "
                      "(released/computed), counts and the per-system table of mean raw and mean z with 95% "
                      "bootstrap CIs. Empty for Rank & Rate campaigns.",
        )

    @extend_schema(
        parameters=[OpenApiParameter(
            "live", enum=["0", "1"], default="0",
            description="1 (the live dashboard): a report built in the last few seconds on slightly older "
                        "ratings may be returned, so a campaign taking submissions is not rebuilt on each one; "
                        f"the {REPORT_BEHIND_HEADER} header then says in how many seconds to ask again for one "
                        "on the current ratings.",
        )],
        responses=CampaignReportOutputSerializer,
        summary="Leaderboard with CIs and clusters, alpha, categories, annotator quality, features",
        description="Computed on the campaign's current submitted ratings; cached until they change.",
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        # The document is already JSON-ready (plain floats, None for undefined); serialising it again
        # through the output serializer would only copy it.
        live = request.query_params.get("live", "0")
        if live not in ("0", "1"):
            raise ServiceError("live must be 0 or 1", field="live")
        report, behind = campaign_report_timed(campaign=campaign, live=live == "1", gated=True)
        response = Response(report)
        if behind is not None:  # built on older ratings: the dashboard asks again once it may be rebuilt
            response[REPORT_BEHIND_HEADER] = str(max(1, math.ceil(behind)))
        return response


class CampaignLeaderboardCsvApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(description="One row per system, best first")},
                   summary="The leaderboard as CSV")
    def get(self, request: Request, slug: str) -> HttpResponse:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        response = HttpResponse(report_leaderboard_csv(campaign_report(campaign=campaign, gated=True)),
                                content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-leaderboard.csv"'
        return response
