"""Researcher-facing API of a campaign's quality control: the verdicts, the attention items, exclusions.

The same services as the dashboard's "Quality control" panel (``evaluation.services.quality``), so a
script running a crowd study can read the flags and exclude a careless rater without the pages.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.models import AnnotatorExclusion, Campaign, User
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.errors import ServiceError
from core.permissions import IsResearcher
from evaluation.services.quality import (
    MAX_ATTENTION_RATE,
    MAX_REPEAT_SHARE,
    annotator_exclude,
    annotator_reinclude,
    campaign_quality,
    campaign_quality_setup,
    crowd_end_choice,
    quality_rows,
)


def _managed(request: Request, slug: str) -> Campaign:
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


def _annotator(campaign: Campaign, pseudonym: Any) -> User:
    """A member of the campaign by pseudonym (what researchers see), or a 400 naming the field."""
    user = campaign.annotators.filter(pseudonym=str(pseudonym or "")[:200]).first()
    if user is None:
        raise ServiceError("no annotator of this campaign has that pseudonym", field="annotator")
    return user


class QualityRowSerializer(serializers.Serializer[Any]):
    annotator = serializers.CharField(help_text="Pseudonym.")
    username = serializers.CharField()
    n_pairs = serializers.IntegerField(help_text="Originals rated beside their degraded copies.")
    mwu_u = serializers.FloatField(allow_null=True)
    mwu_p = serializers.FloatField(allow_null=True, help_text="One-sided Mann-Whitney U: originals > degraded.")
    reliable = serializers.BooleanField(allow_null=True)
    unrelated_mean = serializers.FloatField(allow_null=True)
    repeat_gap = serializers.FloatField(allow_null=True)
    n_repeats = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    r_with_others = serializers.FloatField(allow_null=True)
    flagged = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField())
    excluded = serializers.BooleanField()
    excluded_by = serializers.CharField(allow_null=True)
    excluded_at = serializers.DateTimeField(allow_null=True)
    crowd_end = serializers.ChoiceField(choices=AnnotatorExclusion.CrowdEnd.choices, allow_null=True,
                                        help_text="What the excluded annotator sees at the end if they came "
                                                  "through the crowd link.")


class CampaignQualityApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=QualityRowSerializer(many=True), summary="Per-annotator quality verdicts",
                   description="Each annotator's Mann-Whitney test on the attention items, repeat agreement, "
                               "time per source and correlation with the other raters; flags with reasons.")
    def get(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        return Response(quality_rows(campaign_quality(campaign=campaign)))


class CampaignQualitySetupApi(APIView):
    permission_classes = [IsResearcher]

    class InputSerializer(serializers.Serializer[Any]):
        attention_rate = serializers.FloatField(min_value=0, max_value=MAX_ATTENTION_RATE,
                                                help_text="Share of sources given a degraded copy (0-1).")
        repeat_share = serializers.FloatField(min_value=0, max_value=MAX_REPEAT_SHARE,
                                              help_text="Share of sources shown twice (0-0.5).")

    class OutputSerializer(serializers.Serializer[Any]):
        attention_sources = serializers.IntegerField()
        repeats = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer},
                   summary="Add attention items and repeated sources at the given shares")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = request.data if isinstance(request.data, dict) else {}
        done = campaign_quality_setup(
            campaign=campaign,
            attention_rate=data.get("attention_rate"),  # checked by the service's one rule (quality_share)
            repeat_share=data.get("repeat_share"),
        )
        return Response({"attention_sources": done.attention_sources, "repeats": done.repeats},
                        status=status.HTTP_201_CREATED)


class ExclusionInputSerializer(serializers.Serializer[Any]):
    annotator = serializers.CharField(help_text="Pseudonym.")
    reason = serializers.CharField(required=False, allow_blank=True)
    crowd_end = serializers.ChoiceField(
        choices=AnnotatorExclusion.CrowdEnd.choices, required=False,
        help_text="What an excluded crowd worker sees at the end: `excluded` (the default), a page saying their "
                  "submission was excluded, with no completion code; `code`, the completion code.")


class CampaignExclusionApi(APIView):
    """Exclude (POST) or include again (DELETE) one annotator's ratings, recorded with who and when."""

    permission_classes = [IsResearcher]

    @extend_schema(request=ExclusionInputSerializer, responses={201: QualityRowSerializer(many=True)},
                   summary="Exclude an annotator from reports, alpha and exports, and end their work",
                   description="They can no longer take, save or submit the campaign's sources (403), and their "
                               "unfinished ones go back to the pool at once.")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = request.data if isinstance(request.data, dict) else {}
        reason = data.get("reason", "")
        annotator_exclude(campaign=campaign, annotator=_annotator(campaign, data.get("annotator")),
                          by=request_user(request), reason=reason if isinstance(reason, str) else "",
                          crowd_end=crowd_end_choice(data.get("crowd_end")))
        return Response(quality_rows(campaign_quality(campaign=campaign)), status=status.HTTP_201_CREATED)

    @extend_schema(request=ExclusionInputSerializer, responses=QualityRowSerializer(many=True),
                   summary="Include an excluded annotator again")
    def delete(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = request.data if isinstance(request.data, dict) else {}
        annotator_reinclude(campaign=campaign, annotator=_annotator(campaign, data.get("annotator")),
                            by=request_user(request))
        return Response(quality_rows(campaign_quality(campaign=campaign)))
