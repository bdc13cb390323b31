"""What the webhook serializers cannot say in the OpenAPI (a postprocessing hook next to
ledger_project.api.schema.postprocess): a webhook's API key header is an HTTP field name and
its key an HTTP field value — the registry's and an instrument's alike."""

from __future__ import annotations

from .serializers import HEADER_NAME, HEADER_VALUE


def postprocess(result, generator, request, public):
    schemas = result.get("components", {}).get("schemas", {})
    # A webhook's API key header is an HTTP field name (RFC 9110 token; INVALID otherwise) and
    # its key an HTTP field value (INVALID_HEADER_VALUE): the validators' patterns, which the
    # text extension's NUL pattern would hide. The registry's and an instrument's alike.
    for name in ("WebhookApiKeyAuthInputRequest", "WebhookApiKeyRequest"):
        key = schemas.get(name)
        if key is not None:
            key["properties"]["httpHeaderName"]["pattern"] = HEADER_NAME
            key["properties"]["keyValue"]["pattern"] = HEADER_VALUE
    for name in ("WebhookRequest", "CreateWebhookItemRequest", "UpdateWebhookItemRequest"):
        webhook = schemas.get(name)
        if webhook is not None:
            # One way to authenticate to the endpoint, not both (CONFLICTING_FIELDS).
            _none = {"nullable": True, "enum": [None]}
            webhook.setdefault("allOf", []).append({"anyOf": [{"properties": {"apiKeyAuthConfig": _none}}, {"properties": {"oauth2AuthConfig": _none}}]})
    return result
