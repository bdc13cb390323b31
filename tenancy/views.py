"""Authentication endpoints: OAuth 2.0 client-credentials tokens and key introspection."""

from __future__ import annotations

import base64
import binascii

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from ledger_project.api.clusters import configured_clusters
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from ledger_project.api.parsers import LedgerJSONParser
from ledger_project.api.schema import api_responses, operation_parameters
from tenancy.viewsets import TenantScopedViewSet

from . import services
from .serializers import AccessTokenInput, AccessTokenOutput, WhoAmIInput, WhoAmIOutput


def _basic_credentials(request) -> dict:
    """client_secret_basic (RFC 6749 2.3.1): Authorization: Basic base64(id:secret)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return {}
    try:
        client_id, _, client_secret = base64.b64decode(value.strip()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return {}
    return {"client_id": client_id, "client_secret": client_secret}


class AccessTokenView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [LedgerJSONParser, FormParser]

    @extend_schema(
        operation_id="issueAccessToken",
        summary="Issue an access token (OAuth 2.0 client credentials)",
        description="client_id is the API key id, client_secret the API key secret (JSON, form, or HTTP Basic). "
        f"Tokens live {settings.LEDGER_ACCESS_TOKEN_LIFETIME_SECONDS} s and die with the key.",
        request=AccessTokenInput,
        responses=api_responses({200: AccessTokenOutput}, authenticated=False),
        parameters=operation_parameters(cluster=False),
        auth=[],
        tags=["Authentication"],
    )
    def post(self, request):
        body = request.data
        if not isinstance(body, dict):  # the request guard refuses these first; never a 500
            raise LedgerError("The request body must be a JSON object.", code="INVALID_TYPE")
        data = {**_basic_credentials(request), **dict(body)}
        # Form bodies arrive as lists of values.
        data = {k: (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in data.items()}
        credentials = validated(AccessTokenInput, data)
        token = services.access_token_issue(client_id=credentials["client_id"], client_secret=credentials["client_secret"])
        response = Response(token)
        response["Cache-Control"] = "no-store"
        return response


class WhoAmIViewSet(TenantScopedViewSet):
    @extend_schema(
        operation_id="fetchApiKeyInfo",
        summary="Describe the calling API key and the organization it acts for",
        description="Creates no transaction. Useful to check a key, its roles, a tenancyConfig override and the cluster.",
        request=WhoAmIInput,
        responses=api_responses({200: WhoAmIOutput}),
        parameters=operation_parameters(),
        tags=["Authentication"],
    )
    def whoami(self, request):
        return self._whoami(request)

    @extend_schema(operation_id="fetchApiKeyInfoGet", summary="Describe the calling API key (GET form)", responses=api_responses({200: WhoAmIOutput}), parameters=operation_parameters(), tags=["Authentication"])
    def whoami_get(self, request):
        return self._whoami(request)

    def _whoami(self, request):
        validated(WhoAmIInput, request if request.method == "POST" else {})
        key = self.api_key
        limit = key.rate_limit_per_minute if key.rate_limit_per_minute is not None else settings.LEDGER_RATE_LIMIT_PER_MINUTE
        payload = {
            "keyId": key.key_id,
            "name": key.name,
            "roles": list(key.roles),
            "organization": key.organization,
            "actingOrganization": self.tenant,
            "rateLimitPerMinute": limit,
            "svmCluster": self.cluster,
            "clusters": sorted(configured_clusters()),
        }
        return Response(WhoAmIOutput(payload).data)
