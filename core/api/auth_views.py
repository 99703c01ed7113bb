"""Token login and logout for API clients (the pages use the session and Django's login views)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api.authentication import token_expired
from core.throttle import SignInThrottle

TOKEN_RESPONSE = inline_serializer("AuthToken", {"token": serializers.CharField()})


class TokenObtainApi(APIView):
    authentication_classes = ()
    permission_classes = [AllowAny]
    # Requests per client address (core.throttle); wrong passwords lock sign-in out (django-axes, docs/security.md).
    throttle_classes = [SignInThrottle]

    class TokenObtainInputSerializer(serializers.Serializer[Any]):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=4096, trim_whitespace=False)

    @extend_schema(request=TokenObtainInputSerializer, auth=[],
                   responses={200: TOKEN_RESPONSE,
                              400: OpenApiResponse(description="Missing fields"),
                              401: OpenApiResponse(description="Wrong username or password"),
                              429: OpenApiResponse(description="Too many sign-in requests or wrong passwords "
                                                               "(Retry-After says when to try again)")},
                   summary="A token for 'Authorization: Token <key>' (expires; a new one after expiry)")
    def post(self, request: Request) -> Response:
        data = self.TokenObtainInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(request._request, username=data.validated_data["username"],
                            password=data.validated_data["password"])
        if user is None or not user.is_active:
            # A locked-out sign-in is refused here too; axes' middleware turns this answer into its 429.
            # The body DRF's obtain_auth_token gave (with a 400); the status now says what failed.
            return Response({"non_field_errors": ["Unable to log in with provided credentials."]},
                            status=status.HTTP_401_UNAUTHORIZED, headers={"WWW-Authenticate": "Token"})
        token, _ = Token.objects.get_or_create(user=user)
        if token_expired(token):
            token.delete()
            token = Token.objects.create(user=user)
        return Response({"token": token.key})


class TokenLogoutApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None}, summary="Revoke my API token (log out)")
    def post(self, request: Request) -> Response:
        if request.user.pk is not None:
            Token.objects.filter(user_id=request.user.pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)
