"""Webhook registry endpoints (issue 13; docs/webhooks.md, "Registry"). The spec names
webhooks and their auth (Events 1-4, Authentication 5) but no registry: these paths are
additions, shaped like the spec's other operations (docs/api.md, "Additions to the spec")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent, write_phase
from tenancy.permissions import require_role
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from ledger_project.timestamps import timestamp_text
from tenancy.roles import Role

from . import services
from .models import WebhookSubscription
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

TAG = ["Webhooks"]
LEVELS = ("detailed", "compact", "identifiers")


class WebhookViewSet(TenantScopedViewSet):
    model = WebhookSubscription

    def _subscription(self, ident: dict, field: str) -> WebhookSubscription:
        return services.webhook_get(queryset=self.get_queryset().select_related("tenant"), offchain_id=ident["offchainId"], field=field)

    @extend_schema(
        operation_id="createWebhook", summary="Create Webhook",
        description="Registers an endpoint for the organization's events on the cluster: transaction.pre_submit, transaction.post_submit, account.network_event. "
                    "Credentials are write-only. Every delivery is signed (X-Ledger-Signature); the signing secret is read with Fetch Webhook Signing Secret.",
        request=CreateWebhookInput, responses=api_responses({201: CreateWebhookOutput}, mutation=True), parameters=operation_parameters(), tags=TAG,
    )
    @idempotent
    def create(self, request):
        data = validated(CreateWebhookInput, request)["itemData"]
        with write_phase():
            sub = services.webhook_create(tenant=self.tenant, cluster=self.cluster, data=data)
        sub.tenant = self.tenant
        return Response({"newWebhook": render_webhook(sub)}, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="updateWebhook", summary="Update Webhook",
        description="Patch semantics: only fields present change. status DISABLED pauses delivery, ACTIVE resumes it; rotateSigningSecret makes a new signing secret "
                    "(the previous one also signs for a day). A financial instrument's webhook takes status and rotateSigningSecret only (400 MANAGED_BY_INSTRUMENT).",
        request=UpdateWebhookInput, responses=api_responses({200: UpdateWebhookOutput}, mutation=True), parameters=operation_parameters(), tags=TAG,
    )
    @idempotent
    def update(self, request):
        data = validated(UpdateWebhookInput, request)["itemData"]
        raw = request.data.get("itemData") or {}
        changes = {k: v for k, v in data.items() if k in raw and k != "webhook"}
        sub = self._subscription(data["webhook"], "itemData.webhook")
        with write_phase():
            sub = services.webhook_update(tenant=self.tenant, subscription=sub, changes=changes)
        sub.tenant = self.tenant
        return Response({"updatedWebhook": render_webhook(sub)})

    @extend_schema(operation_id="fetchWebhookDetails", summary="Fetch Webhook Details", description="Creates no transaction. Credentials show as ********.",
                   request=WebhookLookupInput, responses=api_responses({200: WebhookOutput}), parameters=operation_parameters(), tags=TAG)
    def details(self, request):
        ident = validated(WebhookLookupInput, request)["itemData"]
        return Response(render_webhook(self._subscription(ident, "itemData")))

    @extend_schema(
        operation_id="fetchWebhookSigningSecret", summary="Fetch Webhook Signing Secret",
        description="Creates no transaction. The HMAC key of the webhook's X-Ledger-Signature (and the previous one during a rotation). Needs role PLATFORM_SENSITIVE_DATA_ACCESS.",
        request=WebhookLookupInput, responses=api_responses({200: WebhookSigningSecretOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def signing_secret(self, request):
        require_role(self.api_key, Role.PLATFORM_SENSITIVE_DATA_ACCESS, why="read a webhook's signing secret")
        ident = validated(WebhookLookupInput, request)["itemData"]
        sub = self._subscription(ident, "itemData")
        secret = services.webhook_signing_secret(subscription=sub)
        response = Response({"webhook": {"offchainId": str(sub.offchain_id)}, **secret, "previousValidUntil": timestamp_text(secret["previousValidUntil"])})
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(
        operation_id=item_query("fetchWebhooks", services.WEBHOOK_QUERY), summary="Fetch Webhooks",
        description="Creates no transaction. The organization's webhooks on the cluster, registry and financial instruments' alike. detail-level: detailed, compact, identifiers.",
        request=WebhookBulkInput, responses=bulk_responses("BulkWebhooksPage", BulkWebhooksOutput, BulkWebhooksCompactOutput, BulkWebhooksIdentifiersOutput),
        parameters=[DETAIL_LEVEL, *operation_parameters()], tags=TAG,
    )
    def bulk(self, request, detail_level: str):
        if detail_level not in LEVELS:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(WebhookBulkInput, request)
        items, count = services.webhook_list(queryset=self.get_queryset().filter(cluster=self.cluster).select_related("tenant"), item_query=body.get("itemQuery"))
        return Response({"count": count, "items": [render_webhook(sub, detail_level) for sub in items]})

    @extend_schema(
        operation_id="replayWebhookEvents", summary="Replay Webhook Events",
        description="Sends the webhook's events recorded between fromTime and toTime again (delivered, dead-lettered or pending alike): same ids and bodies, in order, "
                    "header X-Ledger-Replay. Their retry window starts again.",
        request=ReplayWebhookInput, responses=api_responses({200: ReplayWebhookOutput}, mutation=True), parameters=operation_parameters(), tags=TAG,
    )
    @idempotent
    def replay(self, request):
        data = validated(ReplayWebhookInput, request)["itemData"]
        sub = self._subscription(data["webhook"], "itemData.webhook")
        with write_phase():
            count = services.webhook_replay(tenant=self.tenant, subscription=sub, since=data["fromTime"], until=data["toTime"], event_types=data.get("eventTypes"))
        return Response({"webhook": {"offchainId": str(sub.offchain_id)}, "scheduled": count})
