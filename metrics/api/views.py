"""Learned-metric API: the registry of trained versions of every kind, LENS, REFEREE and SIERA (admins train,
promote, cancel; researchers read), and LENS scoring.

The registry answers under ``/api/learned/versions/``; its former address ``/api/lens/versions/`` redirects
there permanently with a 308, so a POST stays a POST with its body and a client that follows redirects
keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.models import Campaign, User
from annotation.selectors import CampaignPurpose, campaign_get_visible, campaign_list_visible
from core.budgets import TRAINING_CAMPAIGNS_MAX, TRAINING_CORPORA_MAX
from core.numbers import yes_or_no
from core.permissions import IsPlatformAdmin, IsResearcher
from metrics.lens import ScoreInput, TrainConfig
from metrics.lens.config import OPTION_RULES
from metrics.models import LearnedVersion
from metrics.selectors import (
    LEARNED_PUBLIC_FIELDS,
    campaign_lens_leaderboard,
    learned_version_events,
    learned_version_get,
    learned_version_get_for,
    learned_version_list_for,
    learned_version_ref,
    learned_version_require_full,
)
from metrics.services.learned import DEFAULT_CORPUS, learned_version_components
from metrics.services.metric_scores import campaign_lens_rescore
from metrics.services.scoring import (
    MAX_ITEMS,
    MAX_REFERENCES,
    MAX_TEXT_CHARS,
    lens_score_items,
    lens_version_for_scoring,
)
from metrics.services.training import (
    learned_version_cancel,
    learned_version_create,
    learned_version_promote,
)

DEFAULTS = TrainConfig()
# Input field -> training option, for the options the API takes at the top level.
TOP_LEVEL_OPTIONS = {"encoder": "encoder", "k": "k", "epochs": "epochs", "heldout": "heldout_fraction", "seed": "seed"}


def version_context(request: Request) -> dict[str, Any]:
    """What a viewer may see of a version: researchers only the campaigns visible to them and no server paths."""
    user = request_user(request)
    if user.is_platform_admin:
        return {"show_paths": True}
    visible = set(campaign_list_visible(user=user).values_list("pk", flat=True))
    return {"visible_campaigns": visible, "show_paths": False}


def _bounds(option: str) -> dict[str, Any]:
    return OPTION_RULES[option].field_bounds()


VERSION_PARAM = OpenApiParameter("version", str, description="'active' (default), 'latest' or a version id",
                                 pattern=r"^(active|latest|[0-9]{1,18})$")


class LearnedVersionSerializer(serializers.ModelSerializer[LearnedVersion]):
    started_by: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    campaigns = serializers.SerializerMethodField()
    checkpoint_path = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=serializers.SlugField()))
    def get_campaigns(self, obj: LearnedVersion) -> list[str]:
        """The slugs of the training campaigns the viewer may see (others' campaigns are not named)."""
        visible: set[int] | None = self.context.get("visible_campaigns")
        return [c.slug for c in obj.campaigns.all() if visible is None or c.pk in visible]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_checkpoint_path(self, obj: LearnedVersion) -> str | None:
        """A path on the server: admins only."""
        return obj.checkpoint_path if self.context.get("show_paths", True) else None

    class Meta:
        model = LearnedVersion
        fields = [
            "id", "kind", "label", "status", "is_active", "campaigns", "note", "encoder", "encoder_identity", "k",
            "heldout_fraction", "seed", "hyperparameters", "data_sha256", "data_counts", "data_warnings",
            "heldout_results", "best_epoch", "train_seconds", "device", "checkpoint_path", "error",
            "cancel_requested", "started_by", "created_at", "started_at", "finished_at", "promoted_at",
        ]


    def to_representation(self, instance: LearnedVersion) -> dict[str, Any]:
        """A viewer without full details (``learned_version_list_for``) gets the public fields only."""
        data: dict[str, Any] = super().to_representation(instance)
        if getattr(instance, "full_details", True):
            return data
        return {name: data[name] for name in LEARNED_PUBLIC_FIELDS}


class LearnedVersionSchema(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]  # untyped hook
    """The schema says what every viewer gets: only the public fields are required (a researcher without
    full details gets those alone; found by the schema fuzzer run as a researcher)."""

    target_class = LearnedVersionSerializer
    match_subclasses = True  # the detail's serializer too

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        schema["required"] = [name for name in schema.get("required", []) if name in LEARNED_PUBLIC_FIELDS]
        return schema


class LearnedVersionListApi(APIView):
    """GET: researchers and admins; POST (start a training run): admins only."""

    class LearnedVersionCreateInputSerializer(serializers.Serializer[Any]):
        # Bounds and defaults are the kind's config's (LENS: metrics.lens.config); omitted options keep them.
        # a plain string, checked by the registry (a 400 naming ``kind`` and the registered kinds): the kinds
        # register on first use, and a choice field here would name a second "kind" enum in the schema
        kind = serializers.CharField(max_length=40, required=False, default="lens",
                                     help_text="The learned metric: lens (default), referee, siera or blend.")
        campaigns = serializers.ListField(child=serializers.SlugField(), required=False, default=list,
                                          max_length=TRAINING_CAMPAIGNS_MAX,
                                          help_text="Rated campaigns (LENS, REFEREE, the blend).")
        corpora = serializers.ListField(child=serializers.SlugField(), required=False, default=list,
                                        max_length=TRAINING_CORPORA_MAX,
                                        help_text=f"REFEREE, SIERA: named corpora (default {DEFAULT_CORPUS}).")
        encoder = serializers.CharField(max_length=500, required=False, help_text=f"Default {DEFAULTS.model.encoder}")
        k = serializers.IntegerField(required=False, help_text=f"Default {DEFAULTS.k}", **_bounds("k"))
        epochs = serializers.IntegerField(required=False, help_text=f"Default {DEFAULTS.epochs}", **_bounds("epochs"))
        heldout = serializers.FloatField(required=False, help_text=f"Default {DEFAULTS.heldout_fraction}",
                                         **_bounds("heldout_fraction"))
        seed = serializers.IntegerField(required=False, help_text=f"Default {DEFAULTS.seed}", **_bounds("seed"))
        note = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
        options = serializers.DictField(required=False, default=dict,
                                        help_text="Other training options of the kind, e.g. batch_size, head_lr "
                                                  '(LENS); {"learner": "ridge", "crossfit": "off"} (the blend).')

    def get_permissions(self) -> list[BasePermission]:
        return [IsPlatformAdmin()] if self.request.method == "POST" else [IsResearcher()]

    @extend_schema(responses=LearnedVersionSerializer(many=True),
                   summary="Learned-metric versions (LENS, REFEREE, SIERA), newest first",
                   description="Full details to admins, to whoever started a version and to the owner of every "
                               "campaign it trained on; other researchers see the succeeded versions only, with "
                               f"the fields {', '.join(LEARNED_PUBLIC_FIELDS)}.")
    def get(self, request: Request) -> Response:
        versions = learned_version_list_for(user=request_user(request))
        return Response(LearnedVersionSerializer(versions, many=True, context=version_context(request)).data)

    @extend_schema(request=LearnedVersionCreateInputSerializer, responses=LearnedVersionSerializer,
                   summary="Train a new version of a learned metric (queued on the gpu queue; admins only)")
    def post(self, request: Request) -> Response:
        data = self.LearnedVersionCreateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        slugs = fields["campaigns"]
        campaigns = list(Campaign.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {c.slug for c in campaigns})
        if missing:
            return Response({"detail": f"unknown campaign(s): {', '.join(missing)}", "field": "campaigns"},
                            status=status.HTTP_400_BAD_REQUEST)
        options = dict(fields["options"])
        twice = sorted(set(options) & set(TOP_LEVEL_OPTIONS.values()) | set(options) & set(TOP_LEVEL_OPTIONS))
        if twice:
            return Response({"detail": f"give {', '.join(twice)} at the top level, not in options", "field": "options"},
                            status=status.HTTP_400_BAD_REQUEST)
        options.update({option: fields[name] for name, option in TOP_LEVEL_OPTIONS.items() if name in fields})
        version = learned_version_create(kind=fields["kind"], options=options, campaigns=campaigns,
                                         corpora=fields["corpora"], started_by=request_user(request),
                                         note=fields["note"])
        version.refresh_from_db()  # eager Celery (tests, embedded app) may have trained it already
        return Response(LearnedVersionSerializer(version).data, status=status.HTTP_201_CREATED)


class LearnedVersionDetailSerializer(LearnedVersionSerializer):
    """One version, with the metrics it reads (a blend's components)."""

    components = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ListField(child=inline_serializer("ComponentRead", {
        "name": serializers.CharField(), "trained": serializers.CharField(), "now": serializers.CharField(),
        "changed": serializers.BooleanField()})))
    def get_components(self, obj: LearnedVersion) -> list[dict[str, Any]]:
        """Each metric the version reads, with its signature when the version was trained and now (a blend
        with a changed component scores nothing); empty for a kind that reads none."""
        return [{"name": c.name, "trained": c.trained, "now": c.now, "changed": c.changed}
                for c in learned_version_components(obj)]

    class Meta(LearnedVersionSerializer.Meta):
        fields = [*LearnedVersionSerializer.Meta.fields, "components"]


class LearnedVersionDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=LearnedVersionDetailSerializer, summary="One learned-metric version")
    def get(self, request: Request, version_id: int) -> Response:
        version = learned_version_get_for(user=request_user(request), version_id=version_id)
        return Response(LearnedVersionDetailSerializer(version, context=version_context(request)).data)


class LearnedVersionEventsApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=inline_serializer("TrainingCurve", {"version": serializers.IntegerField(),
                                                             "status": serializers.CharField(),
                                                             "events": serializers.ListField()}),
                   summary="The persisted training curve of a version (to those who see its full details)")
    def get(self, request: Request, version_id: int) -> Response:
        version = learned_version_get_for(user=request_user(request), version_id=version_id)
        learned_version_require_full(version)
        return Response({"version": version.pk, "status": version.status, "events": learned_version_events(version)})


class LearnedVersionPromoteApi(APIView):
    permission_classes = [IsPlatformAdmin]

    @extend_schema(request=None, responses=LearnedVersionSerializer,
                   parameters=[OpenApiParameter("force", bool, description=(
                       "Promote even if the version's held-out τ_all is worse than the active version's "
                       "(otherwise 409 saying so). Also accepted in the JSON body."))],
                   summary="Make this version the active one (also how to roll back)")
    def post(self, request: Request, version_id: int) -> Response:
        version = get_object_or_404(LearnedVersion, pk=version_id)
        raw = request.data.get("force") if isinstance(request.data, Mapping) else None
        force = yes_or_no(raw if raw is not None else request.query_params.get("force"), field="force")
        promoted = learned_version_promote(version=version, user=request_user(request), force=force)
        return Response(LearnedVersionSerializer(promoted).data)


class LearnedVersionCancelApi(APIView):
    permission_classes = [IsPlatformAdmin]

    @extend_schema(request=None, responses=LearnedVersionSerializer, summary="Cancel a queued or running training")
    def post(self, request: Request, version_id: int) -> Response:
        version = get_object_or_404(LearnedVersion, pk=version_id)
        return Response(LearnedVersionSerializer(learned_version_cancel(version=version)).data,
                        status=status.HTTP_202_ACCEPTED)


class LensScoreApi(APIView):
    permission_classes = [IsResearcher]

    class LensScoreItemSerializer(serializers.Serializer[Any]):
        complex = serializers.CharField(trim_whitespace=False)
        output = serializers.CharField(trim_whitespace=False)
        references = serializers.ListField(child=serializers.CharField(trim_whitespace=False), min_length=1,
                                           max_length=MAX_REFERENCES)

    class LensScoreInputSerializer(serializers.Serializer[Any]):
        items = serializers.ListField(min_length=1)

    class LensScoreOutputSerializer(serializers.Serializer[Any]):
        z = serializers.FloatField()
        score = serializers.FloatField()
        per_reference = serializers.ListField(child=serializers.FloatField())
        truncated = serializers.BooleanField()

    @extend_schema(
        request=inline_serializer("LensScoreRequest", {"items": LensScoreItemSerializer(many=True)}),
        responses=inline_serializer("LensScoreResponse", {"version": serializers.IntegerField(),
                                                          "results": LensScoreOutputSerializer(many=True)}),
        parameters=[VERSION_PARAM],
        summary=f"Score up to {MAX_ITEMS} (complex, output, references) items; texts up to {MAX_TEXT_CHARS} chars",
    )
    def post(self, request: Request) -> Response:
        data = self.LensScoreInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        raw_items = data.validated_data["items"]
        if len(raw_items) > MAX_ITEMS:
            return Response({"detail": f"at most {MAX_ITEMS} items per request (got {len(raw_items)}); "
                                       "split the batch", "field": "items"}, status=status.HTTP_400_BAD_REQUEST)
        items = self.LensScoreItemSerializer(data=raw_items, many=True)
        items.is_valid(raise_exception=True)
        version = lens_version_for_scoring(learned_version_ref(request.query_params.get("version")))
        triples = [ScoreInput(i["complex"], i["output"], i["references"]) for i in items.validated_data]
        version, predictions = lens_score_items(items=triples, version=version)
        return Response({"version": version.pk,
                         "results": self.LensScoreOutputSerializer(predictions, many=True).data})


class CampaignLensRescoreApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, parameters=[VERSION_PARAM],
                   responses={202: inline_serializer("LensRescoreQueued", {"job": serializers.IntegerField(),
                                                                           "version": serializers.IntegerField()})},
                   summary="Score every output of a campaign in the background (stored as the metric lens:<id>)")
    def post(self, request: Request, slug: str) -> Response:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        version = lens_version_for_scoring(learned_version_ref(request.query_params.get("version")))
        job = campaign_lens_rescore(campaign=campaign, version=version, owner=request_user(request))
        return Response({"job": job.pk, "version": version.pk}, status=status.HTTP_202_ACCEPTED)


class CampaignLensLeaderboardApi(APIView):
    permission_classes = [IsResearcher]

    class LensLeaderboardRowSerializer(serializers.Serializer[Any]):
        system = serializers.CharField()
        lens = serializers.FloatField(help_text="Mean LENS score (0-100) of the system's scored outputs")
        lens_z = serializers.FloatField()
        outputs = serializers.IntegerField()
        version = serializers.IntegerField()

    @extend_schema(parameters=[VERSION_PARAM], responses=LensLeaderboardRowSerializer(many=True),
                   summary="Mean stored LENS per system (after a rescore), best first")
    def get(self, request: Request, slug: str) -> Response:
        campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
        version = learned_version_get(learned_version_ref(request.query_params.get("version")))
        return Response(campaign_lens_leaderboard(campaign, version) if version is not None else [])
