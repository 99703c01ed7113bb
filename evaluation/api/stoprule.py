"""Researcher-facing API of the stop rule (how settled a campaign's ranking is) and the study planner."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.errors import ServiceError
from core.permissions import IsResearcher
from evaluation.services.stoprule import campaign_settledness, plan_request_parse, planner_pilot, study_plan


class CampaignSettlednessApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("live", enum=["0", "1"], default="0",
                                     description="1: figures built in the last few seconds may be returned.")],
        responses=inline_serializer("Settledness", {
            "ratings": serializers.IntegerField(), "adjacent_pairs": serializers.IntegerField(),
            "settled_pairs": serializers.IntegerField(),
            "expected_discordant": serializers.FloatField(allow_null=True),
            "tau_expected": serializers.FloatField(allow_null=True),
            "ratings_needed_top1": serializers.IntegerField(
                allow_null=True, help_text="more ratings, spread as so far, for the top system to stay on top "
                                           "with probability >= level (normal model; null: over 100x today's)"),
            "ratings_needed_tau": serializers.IntegerField(
                allow_null=True, help_text="more ratings for an expected Kendall tau >= 0.95 with the true "
                                           "order (same model; null: over 100x today's)"),
            "uniform_ratings": serializers.IntegerField(allow_null=True),
            "ratings_saved": serializers.IntegerField(allow_null=True),
            "pairs": serializers.ListField(child=serializers.DictField()),
        }),
        summary="How settled the ranking is: P(order kept) per adjacent pair, ratings needed (top-1, tau), saved",
        description="The dashboard's stop rule on the campaign's current ratings (bootstrap over sources, 200 "
                    "resamples, seed 0; normal model per pair of systems); cached until the ratings change.",
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        live = request.query_params.get("live", "0")
        if live not in ("0", "1"):
            raise ServiceError("live must be 0 or 1", field="live")
        return Response(campaign_settledness(campaign=campaign, live=live == "1"))


class StudyPlanApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        request=inline_serializer("PlanRequest", {
            "campaign": serializers.CharField(required=False, help_text="pilot: a campaign's slug, or"),
            "dataset": serializers.ChoiceField(choices=["past", "2022", "simpda"], required=False,
                                               help_text="pilot: a released study"),
            "target": serializers.ChoiceField(choices=["top_k", "alpha"], default="top_k"),
            "k": serializers.IntegerField(default=1), "p": serializers.FloatField(default=0.9),
            "w": serializers.FloatField(default=0.1),
            "sources": serializers.ListField(child=serializers.IntegerField(), required=False),
            "raters": serializers.ListField(child=serializers.IntegerField(), required=False),
            "sims": serializers.IntegerField(default=200), "seed": serializers.IntegerField(default=0),
        }),
        responses=inline_serializer("Plan", {
            "recommended": serializers.DictField(allow_null=True),
            "rows": serializers.ListField(child=serializers.DictField()),
        }),
        summary="How many sources and raters a study needs for a target, by simulation from a pilot",
        description="Top-k right with probability p, or Krippendorff's alpha's 95% interval narrower than w. "
                    "Every size of the sources x raters grid is simulated (sims studies each, bounded).",
    )
    def post(self, request: Request) -> Response:
        data: dict[str, Any] = request.data if isinstance(request.data, dict) else {}
        plan_request = plan_request_parse(data)
        pilot = planner_pilot(user=request_user(request), campaign=str(data.get("campaign") or ""),
                              dataset=str(data.get("dataset") or ""))
        return Response(study_plan(pilot=pilot, request=plan_request))
