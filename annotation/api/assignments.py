"""Annotator-facing API: my assignments, next work, the annotation page's data, autosave, submit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.blinding import assignment_scope, unit_token
from annotation.models import Annotation, Assignment, Source, User
from annotation.selectors import (
    CampaignPurpose,
    UserShape,
    assignment_detail,
    assignment_list_for_annotator,
    campaign_get_visible,
    campaign_is_visible,
    campaign_visible_exists,
    user_of_shape,
    user_shape,
)
from annotation.services.annotations import (
    MAX_DRAFT_REVISION,
    annotation_reopen,
    annotation_save_draft,
    annotation_submit_outcome,
)
from annotation.services.assignments import assignment_claim_next
from annotation.services.tutorials import assignment_must_pass_tutorial
from core.concurrency import annotation_lane
from core.prepared import PreparedQuery


def _assignment_with_annotating(shape: UserShape, *, pk: int, user_id: int) -> QuerySet[Assignment]:
    return Assignment.objects.select_related("campaign", "source").annotate(
        annotating=campaign_visible_exists(user=user_of_shape(shape, user_id), purpose=CampaignPurpose.ANNOTATE),
        has_tutorials=Exists(Source.objects.filter(campaign_id=OuterRef("campaign_id"), is_tutorial=True)),
    ).filter(pk=pk)


_ASSIGNMENT_WITH_ANNOTATING = PreparedQuery(_assignment_with_annotating)  # read by every page load and autosave


def assignment_visible(user: User, pk: int) -> Assignment:
    """Annotators see their own assignments while they are active annotators of the campaign (a removed
    annotator gets a 404, as the page says); researchers those of campaigns they own; admins all. The
    annotator's case (and whether the campaign has a tutorial) is read with the assignment, in one statement."""
    found = _ASSIGNMENT_WITH_ANNOTATING.run(user_shape(user), pk=pk, user_id=user.pk)
    if not found:
        raise Http404("No such assignment.")
    assignment = found[0]
    row: Any = assignment  # with the annotation above
    if assignment.annotator_id == user.pk and row.annotating:
        return assignment
    if campaign_is_visible(user=user, campaign=assignment.campaign, purpose=CampaignPurpose.MANAGE):
        return assignment
    raise Http404("No such assignment.")


class AssignmentListApi(APIView):
    class AssignmentListOutputSerializer(serializers.ModelSerializer[Assignment]):
        campaign = serializers.CharField(source="campaign.slug")

        class Meta:
            model = Assignment
            fields = ["id", "campaign", "source", "status", "assigned_at", "started_at", "submitted_at"]

        def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
            # Declared here: a class attribute named `source` would shadow Field.source.
            fields = super().get_fields()
            fields["source"] = serializers.CharField(source="source.id_for_annotators")  # a repeat: its original's
            return fields

    @extend_schema(responses=AssignmentListOutputSerializer(many=True), summary="My assignments")
    def get(self, request: Request) -> Response:
        qs = assignment_list_for_annotator(annotator=request_user(request))
        if slug := request.query_params.get("campaign"):
            qs = qs.filter(campaign__slug=slug)
        return Response(self.AssignmentListOutputSerializer(qs, many=True).data)


@annotation_lane
class AssignmentNextApi(APIView):
    @extend_schema(
        request=None,
        responses=inline_serializer("NextAssignment", {"assignment": serializers.IntegerField(allow_null=True)}),
        summary="My next unfinished source in a campaign (taken from the pool if needed)",
    )
    def post(self, request: Request, slug: str) -> Response:
        user = request_user(request)
        campaign = campaign_get_visible(user=user, slug=slug)
        assignment = assignment_claim_next(campaign=campaign, annotator=user)
        return Response({"assignment": assignment.pk if assignment else None})


@annotation_lane
class AssignmentDetailApi(APIView):
    @extend_schema(summary="Source, outputs (shuffled, no system names), automatic analysis and saved draft",
                   responses=inline_serializer("AssignmentDetail", {
                       "id": serializers.IntegerField(), "campaign": serializers.CharField(),
                       "status": serializers.CharField(), "source": serializers.DictField(),
                       "units": serializers.ListField(child=serializers.DictField()),
                       "annotation": serializers.DictField(allow_null=True)}))
    def get(self, request: Request, pk: int) -> Response:
        user = request_user(request)
        assignment = assignment_visible(user, pk)
        if getattr(assignment, "has_tutorials", True):
            assignment_must_pass_tutorial(assignment=assignment, user=user)
        return Response(assignment_detail(assignment=assignment))


@annotation_lane
class AssignmentDraftApi(APIView):
    class AssignmentDraftInputSerializer(serializers.Serializer[Any]):
        state = serializers.DictField()
        revision = serializers.IntegerField(min_value=1, max_value=MAX_DRAFT_REVISION)

    @extend_schema(request=AssignmentDraftInputSerializer, summary="Autosave the page state (highest revision wins)",
                   responses=inline_serializer("DraftSaved", {"revision": serializers.IntegerField(),
                                                              "annotation": serializers.IntegerField()}))
    def put(self, request: Request, pk: int) -> Response:
        user = request_user(request)
        assignment = assignment_visible(user, pk)
        data = self.AssignmentDraftInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        annotation = annotation_save_draft(
            assignment=assignment, user=user, state=data.validated_data["state"],
            revision=data.validated_data["revision"],
        )
        return Response({"revision": annotation.draft_revision, "annotation": annotation.pk})


class AnnotationOutputSerializer(serializers.ModelSerializer[Annotation]):
    rater = serializers.CharField(source="rater_key")
    judgements = serializers.SerializerMethodField()

    class Meta:
        model = Annotation
        fields = ["id", "status", "version", "rater", "submitted_at", "step_seconds", "step_timestamps",
                  "judgements"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_judgements(self, obj: Annotation) -> list[dict[str, object]]:
        """One entry per rating unit. Shown to the annotator (context ``blind``): the unit by the opaque id
        of their page and no output ids, which would follow import order; researchers get the real ids."""
        blind = bool(self.context.get("blind")) and obj.assignment_id is not None
        scope = assignment_scope(obj.assignment_id) if obj.assignment_id is not None else ""
        by_unit: dict[int, dict[str, object]] = {}
        outputs: dict[int, list[int]] = {}
        stored = self.context.get("judgements")  # the rows a submit just wrote, outputs attached: no re-read
        rows = (sorted(stored, key=lambda j: (j.rank, j.output_id)) if stored is not None
                else obj.judgements.select_related("output").order_by("rank", "output_id"))
        for j in rows:
            unit_id = j.output.unit_id
            if unit_id not in by_unit:
                outputs[unit_id] = []
                by_unit[unit_id] = {
                    "unit": unit_token(scope=scope, unit_id=unit_id) if blind else unit_id,
                    "category": j.category, "auto_category": j.auto_category, "edits": j.edits,
                    "auto_edits": j.auto_edits, "rank": j.rank, "rating": j.rating,
                }
                if not blind:
                    by_unit[unit_id]["outputs"] = outputs[unit_id]
            outputs[unit_id].append(j.output_id)
        return list(by_unit.values())


@annotation_lane
class AssignmentSubmitApi(APIView):
    class AssignmentSubmitInputSerializer(serializers.Serializer[Any]):
        submit_key = serializers.CharField(max_length=64)
        units = serializers.ListField(child=serializers.DictField())
        step_seconds = serializers.DictField(required=False)
        step_timestamps = serializers.DictField(required=False)
        steps_reviewed = serializers.DictField(
            required=False, help_text='Required by the service: {"categorise": "visited" | "confirmed", '
            '"edits": "visited" | "confirmed"} (steps 1 and 2 opened, or their automatic result confirmed).')

    @extend_schema(request=AssignmentSubmitInputSerializer, responses=AnnotationOutputSerializer,
                   summary="Submit the annotation (idempotent for the same submit_key)")
    def post(self, request: Request, pk: int) -> Response:
        user = request_user(request)
        # Bad input to an assignment the user may not see answers its 404 first, as every other view does.
        try:
            data = self.AssignmentSubmitInputSerializer(data=request.data)
            valid = data.is_valid()
        except ParseError:
            assignment_visible(user, pk)
            raise
        if not valid:
            assignment_visible(user, pk)
            raise ValidationError(data.errors)
        # The service reads the assignment once, under its lock, with the visibility rule of
        # `assignment_visible` (404, or 403 for the campaign's researchers).
        outcome = annotation_submit_outcome(
            assignment=pk, user=user, payload=_json_object(request),
            submit_key=data.validated_data["submit_key"],
        )
        context = {"blind": True, "judgements": outcome.judgements if outcome.created else None}
        return Response(AnnotationOutputSerializer(outcome.annotation, context=context).data,
                        status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK)


def _json_object(request: Request) -> Mapping[str, Any]:
    """The request body, which the input serializer has already checked to be an object."""
    if not isinstance(request.data, Mapping):
        raise ValidationError({"detail": "expected a JSON object"})
    return request.data


def annotation_visible(user: User, pk: int) -> Annotation:
    """Annotators see their own annotations; researchers those of campaigns they own; admins all."""
    annotation = get_object_or_404(Annotation.objects.select_related("source__campaign"), pk=pk)
    if annotation.annotator_id == user.pk or campaign_is_visible(
        user=user, campaign=annotation.source.campaign, purpose=CampaignPurpose.MANAGE
    ):
        return annotation
    raise Http404("No such annotation.")


@annotation_lane
class AnnotationDetailApi(APIView):
    @extend_schema(responses=AnnotationOutputSerializer, summary="One annotation with its judgements")
    def get(self, request: Request, pk: int) -> Response:
        user = request_user(request)
        annotation = annotation_visible(user, pk)
        blind = not campaign_is_visible(user=user, campaign=annotation.source.campaign, purpose=CampaignPurpose.MANAGE)
        return Response(AnnotationOutputSerializer(annotation, context={"blind": blind}).data)


class AnnotationReopenApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={201: AnnotationOutputSerializer},
                   summary="Reopen a submitted annotation as a new draft version (researchers)")
    def post(self, request: Request, pk: int) -> Response:
        user = request_user(request)
        new = annotation_reopen(annotation=annotation_visible(user, pk), by=user)
        return Response(AnnotationOutputSerializer(new).data, status=status.HTTP_201_CREATED)
