"""Allocation simulations of a campaign over the API (issue 45): start one as a background job, read it.

    POST /api/campaigns/<slug>/allocation/                {"policy": "elimination", "seeds": 50, "budget": 2400}
         -> 202 the job (status, done, total, params)    400 naming the field of a bad value
    GET  /api/campaigns/<slug>/allocation/                the campaign's simulations, newest first
    GET  /api/campaigns/<slug>/allocation/<job>/          the job and, once done, its summary rows and plot
    GET  /api/campaigns/<slug>/allocation/<job>/summary.json

Every check is the command's (``metrics.services.allocation.allocation_request_check``).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.models import Campaign
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.permissions import IsResearcher
from metrics.selectors import allocation_job_list
from metrics.services.allocation import (
    ALWAYS_POLICIES,
    SEEDS_MAX,
    allocation_job_result,
    allocation_summary_json,
    campaign_allocation_start,
)

JOBS_LISTED = 50

JOB_SCHEMA = inline_serializer("AllocationJob", {
    "job": serializers.IntegerField(), "status": serializers.CharField(), "done": serializers.IntegerField(),
    "total": serializers.IntegerField(), "error": serializers.CharField(), "params": serializers.DictField(),
    "summary": serializers.ListField(allow_null=True), "details": serializers.ListField(allow_null=True),
    "svg": serializers.CharField(allow_null=True),
})


def _campaign(request: Request, slug: str) -> Campaign:
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


class CampaignAllocationApi(APIView):
    permission_classes = [IsResearcher]

    class AllocationInputSerializer(serializers.Serializer[Any]):
        policy = serializers.CharField(
            default=",".join(ALWAYS_POLICIES), max_length=400,
            help_text=f"NAME[,NAME] of evaluation.allocation.POLICIES; {' and '.join(ALWAYS_POLICIES)} are added")
        seeds = serializers.IntegerField(default=50, help_text=f"seeds per policy, 1 to {SEEDS_MAX}")
        budget = serializers.IntegerField(required=False, allow_null=True, default=None,
                                          help_text="ratings each simulated campaign may reveal (default: all)")

    @extend_schema(request=AllocationInputSerializer, responses={202: JOB_SCHEMA},
                   summary="Simulate allocation policies on the campaign's ratings in the background")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _campaign(request, slug)
        data = self.AllocationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = campaign_allocation_start(campaign, policies=data.validated_data["policy"],
                                        seeds=data.validated_data["seeds"], budget=data.validated_data["budget"],
                                        owner=request_user(request))
        return Response(allocation_job_result(job), status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=inline_serializer("AllocationJobs", {"jobs": serializers.ListField()}),
                   operation_id="campaigns_allocation_list",
                   summary="The campaign's allocation simulations, newest first")
    def get(self, request: Request, slug: str) -> Response:
        campaign = _campaign(request, slug)
        return Response({"jobs": [
            {key: value for key, value in allocation_job_result(job).items() if key not in ("details", "svg")}
            for job in allocation_job_list(campaign)[:JOBS_LISTED]
        ]})


class CampaignAllocationJobApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=JOB_SCHEMA, summary="One allocation simulation: its state and, once done, its result")
    def get(self, request: Request, slug: str, job_id: int) -> Response:
        job = get_object_or_404(allocation_job_list(_campaign(request, slug)), pk=job_id)
        return Response(allocation_job_result(job))


class CampaignAllocationSummaryApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "application/json"): str}, summary="A finished simulation's summary.json")
    def get(self, request: Request, slug: str, job_id: int) -> HttpResponse:
        campaign = _campaign(request, slug)
        job = get_object_or_404(allocation_job_list(campaign), pk=job_id)
        response = HttpResponse(allocation_summary_json(job), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-allocation-{job.pk}-summary.json"'
        return response
