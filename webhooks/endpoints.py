"""The webhook registry's API: one declaration per operation (issue 13; docs/webhooks.md,
"Registry"; tenancy/endpoints.py says what a row holds). The spec names webhooks and their
auth (Events 1-4, Authentication 5) but no registry: these paths are additions, shaped like
the spec's other operations (docs/api.md, "Additions to the spec"). The view set and routes
are made from ``TABLE`` (webhooks/urls.py)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from ledger_project.timestamps import timestamp_text
from tenancy.endpoints import Endpoint, bulk_fetch
from tenancy.idempotency import write_phase
from tenancy.permissions import require_role
from tenancy.roles import Role

from . import services
from .serializers import (
    BulkWebhooksCompactOutput,
    BulkWebhooksIdentifiersOutput,
    BulkWebhooksOutput,
    CreateWebhookInput,
    CreateWebhookOutput,
    ReplayWebhookInput,
    ReplayWebhookOutput,
    UpdateWebhookInput,
    UpdateWebhookOutput,
    WebhookBulkInput,
    WebhookLookupInput,
    WebhookOutput,
    WebhookSigningSecretOutput,
    render_webhook,
)

TAG = ("Webhooks",)
LEVELS = ("detailed", "compact", "identifiers")
_V = "WebhookViewSet"


def _subscription(door, ident: dict, field: str):
    return services.webhook_get(queryset=door.get_queryset().select_related("tenant"), offchain_id=ident["offchainId"], field=field)


def _create(door, ctx, body):
    with write_phase():
        sub = services.webhook_create(tenant=door.tenant, cluster=door.cluster, data=body["itemData"])
    sub.tenant = door.tenant
    return Response({"newWebhook": render_webhook(sub)}, status=status.HTTP_201_CREATED)


def _update(door, ctx, body):
    data = body["itemData"]
    raw = door.request.data.get("itemData") or {}
    changes = {k: v for k, v in data.items() if k in raw and k != "webhook"}
    sub = _subscription(door, data["webhook"], "itemData.webhook")
    with write_phase():
        sub = services.webhook_update(tenant=door.tenant, subscription=sub, changes=changes)
    sub.tenant = door.tenant
    return Response({"updatedWebhook": render_webhook(sub)})


def _details(door, ctx, body):
    return Response(render_webhook(_subscription(door, body["itemData"], "itemData")))


def _signing_secret(door, ctx, body):
    sub = _subscription(door, body["itemData"], "itemData")
    secret = services.webhook_signing_secret(subscription=sub)
    response = Response({"webhook": {"offchainId": str(sub.offchain_id)}, **secret, "previousValidUntil": timestamp_text(secret["previousValidUntil"])})
    response["Cache-Control"] = "no-store"
    return response


def _replay(door, ctx, body):
    data = body["itemData"]
    sub = _subscription(door, data["webhook"], "itemData.webhook")
    with write_phase():
        count = services.webhook_replay(tenant=door.tenant, subscription=sub, since=data["fromTime"], until=data["toTime"], event_types=data.get("eventTypes"))
    return Response({"webhook": {"offchainId": str(sub.offchain_id)}, "scheduled": count})


def _sensitive(door) -> None:
    require_role(door.api_key, Role.PLATFORM_SENSITIVE_DATA_ACCESS, why="read a webhook's signing secret")


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "create", "webhooks", "post", "webhooks", "createWebhook", "Create Webhook",
             "Registers an endpoint for the organization's events on the cluster: transaction.pre_submit, transaction.post_submit, account.network_event. "
             "Credentials are write-only. Every delivery is signed (X-Ledger-Signature); the signing secret is read with Fetch Webhook Signing Secret.",
             CreateWebhookInput, _create, {201: CreateWebhookOutput}, tags=TAG),
    Endpoint(_V, "update", "webhooks", "patch", "webhooks", "updateWebhook", "Update Webhook",
             "Patch semantics: only fields present change. status DISABLED pauses delivery, ACTIVE resumes it; rotateSigningSecret makes a new signing secret "
             "(the previous one also signs for a day). A financial instrument's webhook takes status and rotateSigningSecret only (400 MANAGED_BY_INSTRUMENT).",
             UpdateWebhookInput, _update, {200: UpdateWebhookOutput}, tags=TAG),
    Endpoint(_V, "details", "webhooks/single", "post", "webhook-details", "fetchWebhookDetails", "Fetch Webhook Details",
             "Creates no transaction. Credentials show as ********.",
             WebhookLookupInput, _details, {200: WebhookOutput}, mutation=False, tags=TAG),
    Endpoint(_V, "signing_secret", "webhooks/single/signing-secret", "post", "webhook-signing-secret", "fetchWebhookSigningSecret", "Fetch Webhook Signing Secret",
             "Creates no transaction. The HMAC key of the webhook's X-Ledger-Signature (and the previous one during a rotation). Needs role PLATFORM_SENSITIVE_DATA_ACCESS.",
             WebhookLookupInput, _signing_secret, {200: WebhookSigningSecretOutput}, mutation=False, tags=TAG, before=_sensitive),
    bulk_fetch(_V, "webhooks/bulk", "webhooks-bulk", operation_id="fetchWebhooks", query=services.WEBHOOK_QUERY, summary="Fetch Webhooks",
               input=WebhookBulkInput, page="BulkWebhooksPage", outputs=(BulkWebhooksOutput, BulkWebhooksCompactOutput, BulkWebhooksIdentifiersOutput),
               renderers={level: (lambda sub, level=level: render_webhook(sub, level)) for level in LEVELS}, tags=TAG,
               items=lambda door, query, level: services.webhook_list(queryset=door.get_queryset().filter(cluster=door.cluster).select_related("tenant"), item_query=query),
               description="Creates no transaction. The organization's webhooks on the cluster, registry and financial instruments' alike. detail-level: detailed, compact, identifiers."),
    Endpoint(_V, "replay", "webhooks/replay", "post", "webhook-replay", "replayWebhookEvents", "Replay Webhook Events",
             "Sends the webhook's events recorded between fromTime and toTime again (delivered, dead-lettered or pending alike): same ids and bodies, in order, "
             "header X-Ledger-Replay. Their retry window starts again.",
             ReplayWebhookInput, _replay, {200: ReplayWebhookOutput}, tags=TAG),
)
