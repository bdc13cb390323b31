"""Bodies and answers of the webhook registry (docs/webhooks.md, "Registry"), and the
payloads the service sends, for the OpenAPI's webhooks section.

Secrets (``keyValue``, ``clientSecret``, ``password``) are write-only: answers show
``********`` where one is set. The signing secret is never in these answers either (an
idempotent request's answer is stored): Fetch Webhook Signing Secret reveals it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator, URLValidator
from rest_framework import serializers

from ledger_project.api.envelope import EnvelopeSerializer, StrictBooleanField, StrictCharField, StrictIntegerField, StrictSerializer, StrictUUIDField
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer
from ledger_project.timestamps import timestamp_text

from transactions.serializers import TransactionResultOutput

from .models import SETTABLE_STATUSES, WebhookEventType, WebhookSource, WebhookStatus

HTTP_URL = URLValidator(schemes=["http", "https"])
#: an HTTP header field name (RFC 9110 token)
HEADER_NAME = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"
#: a header field value the service can send (RFC 9110 §5.5, ASCII only): visible characters,
#: spaces and tabs inside. CR or LF would split the request (HTTP clients refuse it, quoting
#: the value in their error: a write-only secret in clear in the attempt's error text),
#: other control characters and non-ASCII are refused by the client too.
HEADER_VALUE = r"^[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?$"


class _WholeValueRegex(RegexValidator):
    """The pattern must match the whole value: Python's ``$`` also matches before a final
    newline, the very character refused here. (The OpenAPI states the same pattern.)"""

    def __call__(self, value):
        if self.regex.fullmatch(str(value)) is None:
            raise DjangoValidationError(self.message, code=self.code, params={"value": value})


header_value = _WholeValueRegex(HEADER_VALUE, code="INVALID_HEADER_VALUE",
                                message="An HTTP header value: visible ASCII characters, with spaces or tabs only between them (no CR, LF or other control character).")


def outbound_url(value: str) -> None:
    """The service may call this URL: https, public addresses only (ledger_project/outbound.py;
    the delivery worker checks again before each call)."""
    from ledger_project.outbound import OutboundUrlRefused, check_outbound_url

    try:
        check_outbound_url(value)
    except OutboundUrlRefused as exc:
        raise serializers.ValidationError(exc.message, code="url_not_allowed") from None


def header_name(value: str) -> None:
    from .attempt import RESERVED_HEADERS, RESERVED_PREFIX

    if value.lower() in RESERVED_HEADERS or value.lower().startswith(RESERVED_PREFIX):
        raise serializers.ValidationError("The service sets this header itself; choose another name.", code="RESERVED_HEADER")


class WebhookApiKeyAuthInput(StrictSerializer):
    httpHeaderName = serializers.RegexField(HEADER_NAME, max_length=100, validators=[header_name], help_text="Header carrying the key (not one the service sets: Content-Type, Host, X-Ledger-…).")
    keyValue = StrictCharField(max_length=2000, trim_whitespace=False, validators=[header_value], help_text="Write-only: stored encrypted, never returned. Sent as the header's value: visible ASCII, spaces or tabs only between characters.")


class WebhookOAuth2AuthInput(StrictSerializer):
    accessTokenUrl = serializers.URLField(max_length=500, validators=[HTTP_URL, outbound_url])
    audience = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500)
    flowType = serializers.ChoiceField(choices=["CLIENT_CREDENTIALS"])
    clientId = StrictCharField(max_length=500)
    clientSecret = StrictCharField(max_length=2000, help_text="Write-only: stored encrypted, never returned.")
    userName = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500, help_text="Stored; not sent by the CLIENT_CREDENTIALS flow.")
    password = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2000, help_text="Write-only; stored encrypted; not sent by the CLIENT_CREDENTIALS flow.")



def one_auth_config(attrs: dict) -> dict:
    """A webhook's endpoint authenticates one way: apiKeyAuthConfig or oauth2AuthConfig, not
    both (the registry's webhooks and a financial instrument's alike)."""
    if attrs.get("apiKeyAuthConfig") and attrs.get("oauth2AuthConfig"):
        raise serializers.ValidationError({"oauth2AuthConfig": [serializers.ErrorDetail("Give one of apiKeyAuthConfig and oauth2AuthConfig, not both.", code="CONFLICTING_FIELDS")]})
    return attrs


class _WebhookFields(StrictSerializer):
    apiKeyAuthConfig = WebhookApiKeyAuthInput(required=False, allow_null=True)
    oauth2AuthConfig = WebhookOAuth2AuthInput(required=False, allow_null=True)
    timeout = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=120, help_text="Seconds one attempt may take (default LEDGER_WEBHOOK_TIMEOUT_SECONDS).")

    def validate(self, attrs):
        return one_auth_config(attrs)


class CreateWebhookItem(_WebhookFields):
    name = StrictCharField(max_length=200)
    endpointUrl = serializers.URLField(max_length=500, validators=[HTTP_URL, outbound_url])
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEventType.choices), min_length=1, max_length=4,
                                       help_text="transaction.pre_submit, transaction.post_submit, transaction.resigned (every transaction of the organization on the cluster), "
                                                 "account.network_event (its accounts with subscribeToNetworkEvents).")


class CreateWebhookInput(EnvelopeSerializer):
    itemData = CreateWebhookItem()


class WebhookIdentifier(StrictSerializer):
    offchainId = StrictUUIDField()


class UpdateWebhookItem(_WebhookFields):
    webhook = WebhookIdentifier()
    name = StrictCharField(required=False, max_length=200)
    endpointUrl = serializers.URLField(required=False, max_length=500, validators=[HTTP_URL, outbound_url])
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEventType.choices), required=False, min_length=1, max_length=4)
    status = serializers.ChoiceField(choices=SETTABLE_STATUSES, required=False, allow_null=True,
                                     help_text="DISABLED pauses delivery (no new events; pending ones wait); ACTIVE resumes it.")
    rotateSigningSecret = StrictBooleanField(required=False, allow_null=True, help_text="true: a new signing secret; the previous one also signs for LEDGER_WEBHOOK_SECRET_OVERLAP_SECONDS.")


class UpdateWebhookInput(EnvelopeSerializer):
    itemData = UpdateWebhookItem()


class WebhookLookupInput(EnvelopeSerializer):
    itemData = WebhookIdentifier()


class WebhookBulkInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


class ReplayWebhookItem(StrictSerializer):
    webhook = WebhookIdentifier()
    fromTime = serializers.DateTimeField(help_text="ISO 8601; events recorded at or after it.")
    toTime = serializers.DateTimeField(help_text="ISO 8601; events recorded at or before it.")
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEventType.choices), required=False, allow_null=True, min_length=1, max_length=4)


class ReplayWebhookInput(EnvelopeSerializer):
    itemData = ReplayWebhookItem()


# --- answers ---------------------------------------------------------------------------------


class WebhookApiKeyAuthOutput(serializers.Serializer):
    httpHeaderName = serializers.CharField()
    keyValue = serializers.CharField(help_text="Always ******** (write-only).")


class WebhookOAuth2AuthOutput(serializers.Serializer):
    accessTokenUrl = serializers.CharField()
    audience = serializers.CharField(required=False)
    flowType = serializers.CharField()
    clientId = serializers.CharField()
    clientSecret = serializers.CharField(help_text="Always ******** (write-only).")
    userName = serializers.CharField(required=False)
    password = serializers.CharField(required=False, help_text="******** when set (write-only).")


class RecordIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()


class WebhookOutput(serializers.Serializer):
    offchainId = serializers.UUIDField()
    name = serializers.CharField()
    endpointUrl = serializers.CharField()
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEventType.choices))
    status = serializers.ChoiceField(choices=WebhookStatus.choices)
    statusReason = serializers.CharField(allow_blank=True)
    source = serializers.ChoiceField(choices=WebhookSource.choices, help_text="REGISTRY, or FINANCIAL_INSTRUMENT: an instrument's postTransactionSubmitWebhooks entry.")
    financialInstrument = RecordIdentifiersOutput(allow_null=True)
    apiKeyAuthConfig = WebhookApiKeyAuthOutput(allow_null=True)
    oauth2AuthConfig = WebhookOAuth2AuthOutput(allow_null=True)
    timeout = serializers.IntegerField(allow_null=True)
    signingSecretRotatedAt = serializers.CharField(allow_null=True)
    previousSigningSecretValidUntil = serializers.CharField(allow_null=True)
    svmCluster = serializers.CharField()
    tenantOrganizationId = serializers.CharField()
    createdAt = serializers.CharField()
    updatedAt = serializers.CharField()


class WebhookCompactOutput(serializers.Serializer):
    offchainId = serializers.UUIDField()
    name = serializers.CharField()
    endpointUrl = serializers.CharField()
    eventTypes = serializers.ListField(child=serializers.ChoiceField(choices=WebhookEventType.choices))
    status = serializers.ChoiceField(choices=WebhookStatus.choices)
    source = serializers.ChoiceField(choices=WebhookSource.choices)


class WebhookIdentifiersOutput(serializers.Serializer):
    offchainId = serializers.UUIDField()


BulkWebhooksOutput = bulk_output("BulkWebhooksOutput", WebhookOutput)
BulkWebhooksCompactOutput = bulk_output("BulkWebhooksCompactOutput", WebhookCompactOutput)
BulkWebhooksIdentifiersOutput = bulk_output("BulkWebhooksIdentifiersOutput", WebhookIdentifiersOutput)


class CreateWebhookOutput(serializers.Serializer):
    newWebhook = WebhookOutput()


class UpdateWebhookOutput(serializers.Serializer):
    updatedWebhook = WebhookOutput()


class WebhookSigningSecretOutput(serializers.Serializer):
    webhook = WebhookIdentifiersOutput()
    signingSecret = serializers.CharField(help_text="HMAC-SHA256 key of X-Ledger-Signature (docs/webhooks.md, Signing).")
    previousSigningSecret = serializers.CharField(allow_null=True, help_text="Also signs until previousValidUntil (after a rotation).")
    previousValidUntil = serializers.CharField(allow_null=True)


class ReplayWebhookOutput(serializers.Serializer):
    webhook = WebhookIdentifiersOutput()
    scheduled = serializers.IntegerField(help_text="Events due again now (same ids and bodies, in order).")


# --- rendering -------------------------------------------------------------------------------


def render_webhook(sub, level: str = "detailed") -> dict:
    from .credentials import redacted_auth

    if level == "identifiers":
        return {"offchainId": str(sub.offchain_id)}
    compact = {"offchainId": str(sub.offchain_id), "name": sub.name, "endpointUrl": sub.endpoint_url, "eventTypes": sub.event_types, "status": sub.status, "source": sub.source}
    if level == "compact":
        return compact
    auth = redacted_auth(sub)
    return {
        **compact,
        "statusReason": sub.status_reason,
        "financialInstrument": {"onchainId": sub.instrument_address, "offchainId": str(sub.instrument_offchain_id)} if sub.instrument_offchain_id else None,
        "apiKeyAuthConfig": auth.get("apiKeyAuthConfig"),
        "oauth2AuthConfig": auth.get("oauth2AuthConfig"),
        "timeout": sub.timeout_seconds,
        "signingSecretRotatedAt": timestamp_text(sub.signing_secret_rotated_at),
        "previousSigningSecretValidUntil": timestamp_text(sub.previous_valid_until),
        "svmCluster": sub.cluster,
        "tenantOrganizationId": sub.tenant.external_id,
        "createdAt": timestamp_text(sub.created_at),
        "updatedAt": timestamp_text(sub.updated_at),
    }


# --- payloads (the OpenAPI's webhooks section) --------------------------------------------------


class _EventEnvelope(serializers.Serializer):
    id = serializers.UUIDField(help_text=(
        "The event's id: the same on every attempt and replay, and for every webhook it goes to. Deduplicate on the pair (X-Ledger-Webhook-Id, id): "
        "one change sent to two webhooks of one receiver carries the same id to both."))
    occurredAt = serializers.CharField(help_text="When the change happened (network events: the block time), ISO 8601 UTC with milliseconds.")
    tenantOrganizationId = serializers.CharField()
    svmCluster = serializers.CharField()


class TransactionEventData(serializers.Serializer):
    transaction = TransactionResultOutput()
    operation = serializers.CharField(help_text="The API operation that built it, e.g. positions.transfer.")
    slot = serializers.IntegerField(allow_null=True, help_text="The slot it landed in (null before it landed).")


class PreSubmitEvent(_EventEnvelope):
    type = serializers.ChoiceField(choices=[WebhookEventType.PRE_SUBMIT.value])
    data = TransactionEventData(help_text="status SIGNED: built and signed, due for submission.")


class PostSubmitEvent(_EventEnvelope):
    type = serializers.ChoiceField(choices=[WebhookEventType.POST_SUBMIT.value])
    data = TransactionEventData(help_text="status SUBMITTED when handed to the network; CONFIRMED (or FINALIZED) when it landed; FAILED or EXPIRED when it ended without effect.")


class ResignedEventData(TransactionEventData):
    previousOnchainId = serializers.CharField(help_text="The signature it had: its blockhash expired before it landed, so it can never land.")


class ResignedEvent(_EventEnvelope):
    type = serializers.ChoiceField(choices=[WebhookEventType.RESIGNED.value])
    data = ResignedEventData(help_text="status SIGNED: the same instructions and signers, signed again on a fresh blockhash; the new onchainId is due for submission.")


class BalanceChangeOutput(serializers.Serializer):
    before = serializers.IntegerField()
    after = serializers.IntegerField()
    change = serializers.IntegerField()


class TokenBalanceChangeOutput(BalanceChangeOutput):
    tokenAccount = serializers.CharField()
    mint = serializers.CharField()
    owner = serializers.CharField(allow_null=True)
    decimals = serializers.IntegerField()


class NetworkEventData(serializers.Serializer):
    account = RecordIdentifiersOutput(help_text="The subscribed account (onchainId, offchainId).")
    signature = serializers.CharField()
    slot = serializers.IntegerField()
    blockTime = serializers.CharField(allow_null=True)
    success = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)
    lamports = BalanceChangeOutput(allow_null=True, help_text="The account's lamports around the transaction.")
    tokenBalances = TokenBalanceChangeOutput(many=True, help_text="Token accounts that are, or are owned by, the account (base units).")


class NetworkEvent(_EventEnvelope):
    type = serializers.ChoiceField(choices=[WebhookEventType.NETWORK_EVENT.value])
    data = NetworkEventData()


def _openapi_webhook(event_type: str, payload, summary: str, description: str):
    from drf_spectacular.utils import OpenApiResponse, OpenApiWebhook, extend_schema

    headers = ("Headers: X-Ledger-Event-Id (the id), X-Ledger-Event-Type, X-Ledger-Webhook-Id, X-Ledger-Delivery-Attempt, X-Ledger-Replay (replays), "
               "X-Ledger-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 over \"<t>.\" + body> (two v1 during a secret rotation), and the webhook's "
               "API key header or Authorization: Bearer <OAuth access token>. docs/webhooks.md.")
    return OpenApiWebhook(name=str(event_type.value), decorator=extend_schema(
        summary=summary, description=f"{description} {headers}", request=payload, tags=["Webhooks"],
        responses={200: OpenApiResponse(description="Any 2xx: delivered. Anything else, or no answer within the webhook's timeout: retried with backoff for 24 h, then dead-lettered.")},
    ))


OPENAPI_PRE_SUBMIT = _openapi_webhook(WebhookEventType.PRE_SUBMIT, PreSubmitEvent, "Pre transaction submit",
                                      "A transaction of the organization (registry webhooks) or naming the instrument's mint (its postTransactionSubmitWebhooks) is built and signed, before any node sees it.")
OPENAPI_POST_SUBMIT = _openapi_webhook(WebhookEventType.POST_SUBMIT, PostSubmitEvent, "Post transaction submit",
                                       "The transaction was handed to the network (SUBMITTED), and again when it landed (CONFIRMED) or ended without effect (FAILED, EXPIRED).")
OPENAPI_RESIGNED = _openapi_webhook(WebhookEventType.RESIGNED, ResignedEvent, "Transaction signed again",
                                    "The transaction's blockhash expired before it landed (a send was dropped) and the service, holding every signer's key, signed the "
                                    "same instructions again on a fresh blockhash: same offchainId, a new onchainId; the previous one can never land.")
OPENAPI_NETWORK_EVENT = _openapi_webhook(WebhookEventType.NETWORK_EVENT, NetworkEvent, "Account network event",
                                         "A confirmed transaction touched an account with subscribeToNetworkEvents, whoever made it (detected from the cluster every LEDGER_NETWORK_EVENTS_POLL_SECONDS).")
