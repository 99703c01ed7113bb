"""Suite metrics over the API: ad-hoc scoring, a campaign's metrics-vs-humans comparison, stored scores."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.models import Campaign
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.budgets import N_BOOT_DEFAULT, N_BOOT_MAX, n_boot_param
from core.errors import ServiceError
from core.permissions import IsResearcher
from metrics.services.meta_evaluation import (
    LEVELS,
    campaign_meta_evaluate_stored,
    campaign_metric_points,
    level_check,
)
from metrics.services.metric_card import campaign_metric_card
from metrics.services.metric_scores import campaign_metric_scores_queue, campaign_scores_csv, metric_score_batch


def _campaign(request: Request, slug: str) -> Campaign:
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


class MetricScoreApi(APIView):
    permission_classes = [IsResearcher]

    class MetricScoreInputSerializer(serializers.Serializer[Any]):
        metric = serializers.CharField(help_text="sari, sari:lens, fkgl, gleu, bleu, bertscore, lens, lens:<id>...")
        items = serializers.JSONField(help_text="[{complex, output, references: [...]}]")

    @extend_schema(
        request=MetricScoreInputSerializer,
        responses=inline_serializer("MetricScoreResponse", {
            "metric": serializers.CharField(), "signature": serializers.CharField(),
            "higher_is_better": serializers.BooleanField(),
            "results": serializers.ListField(child=serializers.DictField())}),
        summary="Score a batch of {complex, output, references} items with any suite metric",
    )
    def post(self, request: Request) -> Response:
        data = self.MetricScoreInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(metric_score_batch(metric=data.validated_data["metric"], items=data.validated_data["items"]))


class CampaignMetricsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[
            OpenApiParameter("n_boot", int,
                             description=f"bootstrap resamples, 0-{N_BOOT_MAX} (default {N_BOOT_DEFAULT})"),
            OpenApiParameter("exclude_sources_of", str, description="drop the sources of another campaign"),
            OpenApiParameter("exclude_system", str, many=True, description="leave a system out (repeatable)"),
            OpenApiParameter("level", str, enum=list(LEVELS),
                             description="output, system or both (default both), as `meta_evaluate --level`"),
        ],
        responses=inline_serializer("CampaignMetricsResponse", {"kind": serializers.CharField(),
                                                                "metrics": serializers.DictField()}),
        summary="Every stored metric against the campaign's humans, with CIs and paired bootstrap tests",
    )
    def get(self, request: Request, slug: str) -> Response:
        campaign = _campaign(request, slug)
        n_boot = n_boot_param(request.query_params.get("n_boot"))
        other_slug = request.query_params.get("exclude_sources_of")
        other = None
        if other_slug:
            other = campaign_get_visible(user=request_user(request), slug=other_slug, purpose=CampaignPurpose.VIEW)
        return Response(campaign_meta_evaluate_stored(
            campaign=campaign, n_boot=n_boot, exclude_sources_of=other,
            exclude_systems=request.query_params.getlist("exclude_system"),
            level=level_check(request.query_params.get("level", "both")),
        ))


class CampaignMetricCardApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[OpenApiParameter("n_boot", int,
                                     description=f"bootstrap resamples, 0-{N_BOOT_MAX} (default {N_BOOT_DEFAULT})"),
                    OpenApiParameter("exclude_system", str, many=True, description="leave a system out (repeatable)")],
        responses=inline_serializer("MetricCard", {
            "metric": serializers.CharField(), "signature": serializers.CharField(),
            "output": serializers.DictField(), "system": serializers.DictField(allow_null=True),
            "sensitivity": serializers.DictField(allow_null=True), "sanity": serializers.DictField(allow_null=True),
            "stale": serializers.CharField(allow_null=True, help_text="Why the metric cannot score new outputs now "
                                                                     "(a blend whose components changed), or null")}),
        summary="One stored metric's card: output- and system-level figures with clusters, testbed sensitivity, "
                "sanity checks, signature (404 naming an unknown metric)",
    )
    def get(self, request: Request, slug: str, metric: str) -> Response:
        campaign = _campaign(request, slug)
        n_boot = n_boot_param(request.query_params.get("n_boot"))
        return Response(campaign_metric_card(campaign=campaign, metric=metric, n_boot=n_boot,
                                             exclude_systems=request.query_params.getlist("exclude_system")))


class CampaignMetricPointsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(parameters=[OpenApiParameter("metric", str, required=True)],
                   responses=inline_serializer("CampaignMetricPoints", {"metric": serializers.CharField(),
                                                                        "points": serializers.ListField()}),
                   summary="One stored metric against the human mean z per output (scatter plot)")
    def get(self, request: Request, slug: str) -> Response:
        campaign = _campaign(request, slug)
        metric = request.query_params.get("metric", "").strip()
        if not metric:
            raise ServiceError("metric: name a stored metric (e.g. ?metric=sari)", field="metric")
        return Response(campaign_metric_points(campaign=campaign, metric=metric))


class CampaignMetricScoreQueueApi(APIView):
    permission_classes = [IsResearcher]

    class MetricScoreQueueInputSerializer(serializers.Serializer[Any]):
        metric = serializers.CharField(default="all", help_text="a metric, a comma-separated list, or all")

    @extend_schema(request=MetricScoreQueueInputSerializer,
                   responses={202: inline_serializer("MetricScoreQueued", {
                       "jobs": serializers.ListField(),
                       "skipped": serializers.DictField(
                           help_text="Metrics 'all' left out because they cannot score now, each with why (a "
                                     "blend whose components changed since it was trained; named, it is a 409)"),
                   })},
                   summary="Score every output of the campaign in the background (stored per signature)")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _campaign(request, slug)
        data = self.MetricScoreQueueInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        queued = campaign_metric_scores_queue(campaign=campaign, metric=data.validated_data["metric"],
                                              owner=request_user(request))
        return Response({"jobs": [job.pk for job in queued.jobs], "skipped": queued.skipped},
                        status=status.HTTP_202_ACCEPTED)


class CampaignScoresCsvApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses={(200, "text/csv"): str},
                   summary="Stored scores: output id, source, system, one column per metric; signatures in # lines")
    def get(self, request: Request, slug: str) -> HttpResponse:
        campaign = _campaign(request, slug)
        response = HttpResponse(campaign_scores_csv(campaign=campaign), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-scores.csv"'
        return response
