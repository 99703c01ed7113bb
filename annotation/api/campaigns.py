"""Researcher-facing API: campaigns, their annotators, imports and progress (exports: evaluation.api.exports)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import reverse
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.auth import request_user
from annotation.models import Campaign, Source, User
from annotation.rules import MAX_COMPLETION_URL_CHARS
from annotation.selectors import CampaignPurpose, campaign_get_visible, campaign_list_visible, campaign_progress
from annotation.services.assignments import (
    MAX_USERNAMES,
    annotators_by_username,
    campaign_add_annotators,
    campaign_annotator_by_username,
    campaign_remove_annotator,
)
from annotation.services.campaigns import (
    MAX_CROWD_PLACES,
    MAX_IDLE_RELEASE_MINUTES,
    campaign_create,
    campaign_update,
)
from annotation.services.imports import IMPORT_KINDS, campaign_import, import_references_check, references_read
from annotation.services.operations import (
    MAX_INVITE_USES,
    CrowdRoom,
    crowd_open,
    crowd_places_held,
    crowd_room,
    crowd_turned_away_summary,
    invite_create,
)
from annotation.services.practice import source_practice_set
from annotation.services.tutorials import PRACTICE_SCORE_TOLERANCE
from core.errors import NotFound, TooLarge
from core.permissions import IsResearcher


def _managed(request: Request, slug: str) -> Campaign:
    """A campaign the requesting researcher may manage; 404 otherwise."""
    return campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)


class CampaignSerializer(serializers.ModelSerializer[Campaign]):
    owners: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(
        slug_field="username", many=True, read_only=True
    )
    sources = serializers.IntegerField(source="sources.count", read_only=True)

    class Meta:
        model = Campaign
        fields = ["slug", "name", "instructions", "ratings_per_output", "compression_threshold",
                  "idle_release_minutes", "batch_size", "crowd_places", "crowd_completion_url", "allocation",
                  "owners", "sources", "created_at"]


class CampaignListApi(APIView):
    class CampaignListInputSerializer(serializers.Serializer[Any]):
        name = serializers.CharField(max_length=200)
        slug = serializers.SlugField(max_length=100, required=False)
        instructions = serializers.CharField(required=False, allow_blank=True)
        ratings_per_output = serializers.IntegerField(min_value=1, max_value=50, required=False)
        compression_threshold = serializers.FloatField(min_value=0, max_value=1, required=False)
        idle_release_minutes = serializers.IntegerField(
            min_value=1, max_value=MAX_IDLE_RELEASE_MINUTES, required=False, allow_null=True
        )
        allocation = serializers.ChoiceField(choices=Campaign.Allocation.choices, required=False)

    @extend_schema(responses=CampaignSerializer(many=True), summary="Campaigns I can see")
    def get(self, request: Request) -> Response:
        return Response(CampaignSerializer(campaign_list_visible(user=request_user(request)), many=True).data)

    @extend_schema(request=CampaignListInputSerializer, responses={201: CampaignSerializer},
                   summary="Create a campaign")
    def post(self, request: Request) -> Response:
        user = request_user(request)
        if not user.is_researcher:
            self.permission_denied(request, message=IsResearcher.message)
        data = self.CampaignListInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        campaign = campaign_create(name=fields.pop("name"), slug=fields.pop("slug", None), owner=user,
                                   **fields)
        return Response(CampaignSerializer(campaign).data, status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    permission_classes = [IsResearcher]

    class CampaignDetailInputSerializer(serializers.Serializer[Any]):
        name = serializers.CharField(max_length=200, required=False)
        instructions = serializers.CharField(required=False, allow_blank=True)
        ratings_per_output = serializers.IntegerField(min_value=1, max_value=50, required=False)
        compression_threshold = serializers.FloatField(min_value=0, max_value=1, required=False)
        idle_release_minutes = serializers.IntegerField(
            min_value=1, max_value=MAX_IDLE_RELEASE_MINUTES, required=False, allow_null=True
        )
        crowd_completion_url = serializers.CharField(
            required=False, allow_blank=True, max_length=MAX_COMPLETION_URL_CHARS,
            help_text="Where a finished crowd worker is sent, {code} standing for the completion code ('': none).")
        allocation = serializers.ChoiceField(
            choices=Campaign.Allocation.choices, required=False,
            help_text="Which source is handed out next: uniform (source order) or adaptive (the source with the "
                      "highest priority / (1 + screens handed out), the priority being how differently SARI, BLEU "
                      "and FKGL score its outputs; round-robin without metric scores; whole screens either way).")

    @extend_schema(responses=CampaignSerializer)
    def get(self, request: Request, slug: str) -> Response:
        return Response(CampaignSerializer(_managed(request, slug)).data)

    @extend_schema(request=CampaignDetailInputSerializer, responses=CampaignSerializer)
    def patch(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = self.CampaignDetailInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        return Response(CampaignSerializer(campaign_update(campaign=campaign, **data.validated_data)).data)


class CampaignAnnotatorsApi(APIView):
    permission_classes = [IsResearcher]

    class CampaignAnnotatorsInputSerializer(serializers.Serializer[Any]):
        usernames = serializers.ListField(child=serializers.CharField(max_length=150), min_length=1,
                                          max_length=MAX_USERNAMES)

    @extend_schema(request=CampaignAnnotatorsInputSerializer,
                   responses=inline_serializer("AnnotatorsAdded", {"assigned": serializers.IntegerField()}),
                   summary="Add annotators; free sources are distributed among the active annotators",
                   description="A username that is no account and one that is no annotator get the same 400 "
                               "(\"no annotator with the username(s) ... can be added\"), so the answer tells "
                               "nothing about other accounts.")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = self.CampaignAnnotatorsInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        users = annotators_by_username(data.validated_data["usernames"])
        created = campaign_add_annotators(campaign=campaign, annotators=users)
        return Response({"assigned": len(created)}, status=status.HTTP_201_CREATED)


class CampaignAnnotatorRemoveApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(request=None, responses={200: inline_serializer("AnnotatorRemoved",
                                                                  {"released": serializers.IntegerField()})},
                   summary="Remove an annotator; their unfinished sources go back into the pool")
    def delete(self, request: Request, slug: str, username: str) -> Response:
        campaign = _managed(request, slug)
        user = campaign_annotator_by_username(campaign=campaign, username=username)
        return Response({"released": campaign_remove_annotator(campaign=campaign, annotator=user)})


# Room for the multipart envelope and the form's other fields around the file itself.
MULTIPART_OVERHEAD_BYTES = 64 * 1024


def _refuse_oversized_upload(request: Request) -> None:
    """413 from the declared Content-Length, before the body is read (the import service checks the file too)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > settings.MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD_BYTES:
        raise TooLarge(f"the upload is {declared:,} bytes; files of at most {settings.MAX_UPLOAD_BYTES:,} bytes "
                       "are accepted (MAX_UPLOAD_BYTES)", field="file")


class CampaignImportApi(APIView):
    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser, FormParser]

    class CampaignImportInputSerializer(serializers.Serializer[Any]):
        file = serializers.FileField()
        kind = serializers.ChoiceField(choices=IMPORT_KINDS, default="jsonl")
        reference_source = serializers.FileField(required=False, help_text=(
            "simpeval and da: the source sentences, one per line, that the reference files are aligned with"))
        references = serializers.ListField(child=serializers.FileField(), required=False, help_text=(
            "simpeval and da: one or more line-aligned reference files (tab-separated references on a line)"))

    @extend_schema(request=CampaignImportInputSerializer,
                   responses=inline_serializer("ImportDone", {"summary": serializers.CharField(),
                                                               "sources": serializers.IntegerField(),
                                                               "outputs": serializers.IntegerField()}),
                   summary="Upload a JSONL, SimpEval CSV or multi-aspect rating CSV (kind \"da\") into this campaign "
                           "(all or nothing, written in short transactions; see docs/data-import.md)")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        _refuse_oversized_upload(request)
        data = self.CampaignImportInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        source, files = data.validated_data.get("reference_source"), data.validated_data.get("references") or []
        references = None
        import_references_check(kind=data.validated_data["kind"], source_given=source is not None,
                                files_given=bool(files))
        if source is not None:
            references = references_read(source=(source, source.name), files=[(f, f.name) for f in files])
        result = campaign_import(kind=data.validated_data["kind"], file=upload, filename=upload.name,
                                 campaign_slug=campaign.slug, user=request_user(request), references=references)
        return Response({"summary": result.summary(), "sources": result.sources, "outputs": result.outputs,
                         "warnings": result.warnings}, status=status.HTTP_201_CREATED)


@extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100}})
class ExpectedScoresField(serializers.DictField):
    """A practice sentence's expected scores, {system name: score}: the values pass unread to the practice rule
    (`tutorial_key_check`), which refuses what is no number from 0 to 100 naming ``ratings`` (DRF's FloatField
    would read ``true`` as 1 and ``"50"`` as 50)."""


class CampaignPracticeApi(APIView):
    """A source as a practice sentence with its expected answer (PUT), or real work again (DELETE)."""

    permission_classes = [IsResearcher]

    class PracticeInputSerializer(serializers.Serializer[Any]):
        ranking = serializers.ListField(child=serializers.CharField(max_length=2000), max_length=200, required=False,
                                        help_text="system names (or output texts), best first")
        ratings = ExpectedScoresField(required=False, help_text="system name -> the score expected (0 to 100), "
                                      f"met within {PRACTICE_SCORE_TOLERANCE} points")
        categories = serializers.DictField(child=serializers.CharField(max_length=20), required=False,
                                           help_text="system name -> split, deletion or paraphrase")

    def _source(self, request: Request, slug: str, external_id: str) -> Source:
        source = Source.objects.filter(campaign=_managed(request, slug), external_id=external_id).first()
        if source is None:
            raise NotFound(f"no source {external_id!r} in campaign {slug!r}", field="source")
        return source

    @extend_schema(request=PracticeInputSerializer,
                   responses=inline_serializer("Practice", {"source": serializers.CharField(),
                                                             "is_tutorial": serializers.BooleanField(),
                                                             "tutorial_key": serializers.DictField()}),
                   summary="Make a source a practice sentence with its expected answer (checked as on the page)")
    def put(self, request: Request, slug: str, external_id: str) -> Response:
        data = self.PracticeInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        source = source_practice_set(source=self._source(request, slug, external_id), practice=True,
                                     key=dict(data.validated_data))
        return Response({"source": source.external_id, "is_tutorial": True, "tutorial_key": source.tutorial_key})

    @extend_schema(request=None, responses={204: None}, summary="Make a practice sentence real work again")
    def delete(self, request: Request, slug: str, external_id: str) -> Response:
        source_practice_set(source=self._source(request, slug, external_id), practice=False)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CampaignProgressApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(responses=inline_serializer("Progress", {
        "annotators": serializers.ListField(child=serializers.DictField()),
        "sources": serializers.ListField(child=serializers.DictField())}),
        summary="Progress per annotator (pseudonym) and per source")
    def get(self, request: Request, slug: str) -> Response:
        return Response(campaign_progress(campaign=_managed(request, slug)))


class CampaignInviteApi(APIView):
    permission_classes = [IsResearcher]

    class InviteInputSerializer(serializers.Serializer[Any]):
        max_uses = serializers.IntegerField(min_value=1, max_value=MAX_INVITE_USES, required=False, allow_null=True)

    @extend_schema(request=InviteInputSerializer,
                   responses={201: inline_serializer("InviteCreated", {"token": serializers.CharField(),
                                                                       "url": serializers.CharField()})},
                   summary="Create an invite link: whoever opens it gets an annotator account on the campaign")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = self.InviteInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        invite = invite_create(campaign=campaign, by=request_user(request),
                               max_uses=data.validated_data.get("max_uses"))
        url = request.build_absolute_uri(reverse("frontend:invite", kwargs={"token": invite.token}))
        return Response({"token": invite.token, "url": url}, status=status.HTTP_201_CREATED)


_CROWD_STATE = inline_serializer("CrowdLink", {
    "url": serializers.CharField(allow_null=True, help_text="The crowd link (null: closed)."),
    "completion_code": serializers.CharField(),
    "places": serializers.IntegerField(allow_null=True),
    "places_held": serializers.IntegerField(),
    "completion_url": serializers.CharField(help_text="Where a finished worker is sent ('': nowhere)."),
    "room": serializers.ChoiceField(choices=[room.value for room in CrowdRoom],
                                    help_text="Whether a new worker gets work now (open), or why not."),
    "turned_away": inline_serializer("CrowdTurnedAway", {
        "workers": serializers.IntegerField(), "first_at": serializers.DateTimeField(allow_null=True),
        "last_at": serializers.DateTimeField(allow_null=True)}),
})


def _crowd_state(request: Request, campaign: Campaign) -> dict[str, Any]:
    url = request.build_absolute_uri(
        reverse("frontend:crowd", kwargs={"slug": campaign.slug, "token": campaign.crowd_token})
    ) if campaign.crowd_token else None
    away = crowd_turned_away_summary(campaign=campaign)
    return {"url": url, "completion_code": campaign.completion_code, "places": campaign.crowd_places,
            "places_held": crowd_places_held(campaign=campaign), "completion_url": campaign.crowd_completion_url,
            "room": crowd_room(campaign=campaign).value,
            "turned_away": {"workers": away.workers, "first_at": away.first_at, "last_at": away.last_at}}


class CampaignCrowdApi(APIView):
    permission_classes = [IsResearcher]

    class CrowdInputSerializer(serializers.Serializer[Any]):
        places = serializers.IntegerField(
            required=False, allow_null=True, min_value=1, max_value=MAX_CROWD_PLACES,
            help_text="The study's places on the platform: crowd workers admitted at most (null: as many as "
                      "there is free work for). Left out: unchanged.")
        completion_url = serializers.CharField(
            required=False, allow_blank=True, max_length=MAX_COMPLETION_URL_CHARS,
            help_text="The platform's completion URL, {code} standing for the completion code (Prolific: "
                      "https://app.prolific.com/submissions/complete?cc={code}); '': none. Left out: unchanged.")

    @extend_schema(responses=_CROWD_STATE,
                   summary="The crowd link's state: whether a new worker gets work now, the places held, and the "
                           "workers who opened the link when nothing was left")
    def get(self, request: Request, slug: str) -> Response:
        return Response(_crowd_state(request, _managed(request, slug)))

    @extend_schema(request=CrowdInputSerializer, responses=_CROWD_STATE,
                   summary="Open the campaign to crowd workers: the link (add PROLIFIC_PID... or workerId...) "
                           "and the completion code")
    def post(self, request: Request, slug: str) -> Response:
        campaign = _managed(request, slug)
        data = self.CrowdInputSerializer(data=request.data if isinstance(request.data, dict) else {})
        data.is_valid(raise_exception=True)
        fields = {name: data.validated_data[key] for key, name in (("places", "crowd_places"),
                                                                   ("completion_url", "crowd_completion_url"))
                  if key in data.validated_data}
        if fields:
            campaign_update(campaign=campaign, **fields)
        return Response(_crowd_state(request, crowd_open(campaign=campaign)))
