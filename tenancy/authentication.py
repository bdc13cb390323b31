"""Bearer authentication: an API key secret or an access token from /api/v1/auth/token."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from ledger_project.api.errors import NotAuthenticatedError


class BearerTokenAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None  # HasApiKey then answers 401 for protected views
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise NotAuthenticatedError("The Authorization header must be 'Bearer <token>'.")
        from tenancy.services import api_key_for_token

        api_key = api_key_for_token(token)
        return api_key, token

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """The OpenAPI description of the scheme above (registered when this module loads)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key secret, or an access token from POST /api/v1/auth/token."}
