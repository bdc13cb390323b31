"""Financial instruments: request and response shapes with the spec's names.

Inputs validate types only; the rules between fields live in services.py. Outputs are the
documented schema of what render.py builds (a test keeps them in step).
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.core.validators import URLValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.serializers import AccountReferencesSerializer, IdentifiersOut, LookupInput, NewAccountSerializer, ValueOutput, account_or_unrecorded
from ledger_project.api.envelope import (
    EnvelopeSerializer,
    FreeFormObjectField,
    LookupSerializer,
    InstrumentLookupSerializer,
    OwnInstrumentLookupSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    TransactionEnvelopeSerializer,
)
from ledger_project.api.outputs import bulk_output
from transactions.serializers import TransactionResultOutput
from webhooks.serializers import HEADER_NAME, header_name, header_value, one_auth_config

from .models import InstrumentStatus, PositionState, TokenVersion
from .token2022.constants import API_EXTENSIONS


HTTP_URL = URLValidator(schemes=["http", "https"])


def outbound_url(value: str) -> None:
    """The service may call this URL: https, public addresses only (SSRF; the delivery
    worker checks again before each call — ledger_project/outbound.py)."""
    from ledger_project.outbound import OutboundUrlRefused, check_outbound_url

    try:
        check_outbound_url(value)
    except OutboundUrlRefused as exc:
        raise serializers.ValidationError(exc.message, code="url_not_allowed") from None


class StrictNumberField(serializers.FloatField):
    """A JSON number (not a string, not a boolean), finite."""

    default_error_messages = {"invalid": "Must be a number."}

    def to_internal_value(self, data):
        # Request numbers arrive as Decimal (ledger_project.api.parsers); a multiplier is
        # an f64 on chain, not money, so float is its exact type here.
        if isinstance(data, bool) or not isinstance(data, (int, float, Decimal)) or not math.isfinite(data):
            self.fail("invalid")
        return float(data)


def _instrument_type_names() -> list[str]:
    from .alid import CATEGORIES

    return sorted({name for _, types in CATEGORIES.values() for name in types} | {code for _, types in CATEGORIES.values() for code in types.values()})


@extend_schema_field({"type": "string", "enum": _instrument_type_names(), "description": "A financialInstrumentType by name (CORPORATE_BOND) or code (CBD); instruments/alid.py."})
class InstrumentTypeField(StrictCharField):
    """Schema only: the known types (alid.kind_for_type answers 400 INVALID_INSTRUMENT_TYPE for others)."""


class NewAlIdSerializer(StrictSerializer):
    financialInstrumentType = InstrumentTypeField(max_length=40)
    financialInstrumentCategory = StrictCharField(required=False, allow_null=True, max_length=40)


class InstrumentReferencesSerializer(StrictSerializer):
    newAlId = NewAlIdSerializer(required=False, allow_null=True)


class MetadataMap(serializers.DictField):
    """simpleCustomMetadata: string keys → string values (null removes a key on update)."""

    def __init__(self, *, allow_null_values: bool = False, **kwargs):
        kwargs.setdefault("child", StrictCharField(allow_blank=True, allow_null=allow_null_values, max_length=200))
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        for key in value:
            if not key or len(key) > 64:
                raise serializers.ValidationError("Keys are 1 to 64 characters.")
        if len(value) > 32:
            raise serializers.ValidationError("At most 32 keys.")
        return value


class OnchainDataSerializer(StrictSerializer):
    symbol = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=32)
    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    uri = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    decimals = StrictIntegerField(required=False, min_value=0, max_value=18)
    simpleCustomMetadata = MetadataMap(required=False, allow_null=True)


class UpdateOnchainDataSerializer(OnchainDataSerializer):
    simpleCustomMetadata = MetadataMap(required=False, allow_null=True, allow_null_values=True)


class LogoSerializer(StrictSerializer):
    copyFromUri = StrictCharField(required=False, allow_null=True, max_length=500)
    fileName = StrictCharField(required=False, allow_null=True, max_length=200)
    contentType = StrictCharField(required=False, allow_null=True, max_length=100)
    type = serializers.ChoiceField(choices=["LOGO"], required=False, allow_null=True)


class OffchainDataSerializer(StrictSerializer):
    description = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=5000)
    simpleCustomMetadata = FreeFormObjectField(required=False, allow_null=True)
    complexCustomMetadata = FreeFormObjectField(required=False, allow_null=True)
    logo = LogoSerializer(required=False, allow_null=True)


class ConfidentialTransferSerializer(StrictSerializer):
    autoApproveNewPositions = StrictBooleanField(required=False, default=False)
    auditorElgamalPubkey = StrictCharField(required=False, allow_null=True, max_length=64)


class ConfidentialMintBurnSerializer(StrictSerializer):
    supplyElgamalPubkey = StrictCharField(max_length=64)
    decryptableSupply = StrictCharField(max_length=64)


class InstrumentLookupInput(LookupInput):
    """Fetches of one instrument (LookupInput's quick path included)."""

    itemData = InstrumentLookupSerializer()


class WebhookApiKeySerializer(StrictSerializer):
    """The registry's rules (webhooks/serializers.py): these become webhook
    subscriptions, delivered by the same code."""

    httpHeaderName = serializers.RegexField(HEADER_NAME, max_length=100, validators=[header_name])
    keyValue = StrictCharField(max_length=2000, trim_whitespace=False, validators=[header_value], help_text="Write-only. Sent as the header's value: visible ASCII, spaces or tabs only between characters.")


class WebhookOAuth2Serializer(StrictSerializer):
    accessTokenUrl = serializers.URLField(max_length=500, validators=[HTTP_URL, outbound_url])
    audience = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500)
    flowType = serializers.ChoiceField(choices=["CLIENT_CREDENTIALS"])
    clientId = StrictCharField(max_length=500)
    clientSecret = StrictCharField(max_length=2000)
    userName = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=500)
    password = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=2000)


class WebhookSerializer(StrictSerializer):
    endpointUrl = serializers.URLField(max_length=500, validators=[HTTP_URL, outbound_url])
    name = StrictCharField(max_length=200)
    apiKeyAuthConfig = WebhookApiKeySerializer(required=False, allow_null=True)
    oauth2AuthConfig = WebhookOAuth2Serializer(required=False, allow_null=True)
    timeout = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=120, help_text="Seconds.")

    def validate(self, attrs):
        return one_auth_config(attrs)


class CreateInstrumentItem(StrictSerializer):
    mintAccount = NewAccountSerializer(required=False, allow_null=True)
    existingMintAccount = LookupSerializer(required=False, allow_null=True)
    mintAuthority = LookupSerializer(required=False, allow_null=True)
    updateAuthority = LookupSerializer(required=False, allow_null=True)
    freezeAuthority = LookupSerializer(required=False, allow_null=True)
    permanentDelegateAuthority = LookupSerializer(required=False, allow_null=True)
    closingAuthority = LookupSerializer(required=False, allow_null=True)
    pausableAuthority = LookupSerializer(required=False, allow_null=True)
    version = serializers.ChoiceField(choices=TokenVersion.choices, required=False, allow_null=True)
    alreadyOnChain = StrictBooleanField(required=False)
    alreadyOnchain = StrictBooleanField(required=False)
    onchainData = OnchainDataSerializer(required=False, allow_null=True)
    offchainData = OffchainDataSerializer(required=False, allow_null=True)
    defaultPositionState = serializers.ChoiceField(choices=PositionState.choices, required=False, allow_null=True)
    offchainReferences = InstrumentReferencesSerializer(required=False, allow_null=True)
    # Beyond the spec's list (docs/instruments.md): the other extensions' settings.
    scaledUiAmountAuthority = LookupSerializer(required=False, allow_null=True)
    scaledUiAmountMultiplier = StrictNumberField(required=False, allow_null=True)
    transferHookAuthority = LookupSerializer(required=False, allow_null=True)
    transferHookProgram = LookupSerializer(required=False, allow_null=True)
    allowListCapacity = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=256, help_text="With the allow-list hook program: owners its allow-list holds (default 256).")
    allowListAuthority = LookupSerializer(required=False, allow_null=True, help_text="With the allow-list hook program: who manages its allow-list (default: transferHookAuthority, else mintAuthority).")
    confidentialTransfer = ConfidentialTransferSerializer(required=False, allow_null=True)
    confidentialTransferAuthority = LookupSerializer(required=False, allow_null=True)
    confidentialMintBurn = ConfidentialMintBurnSerializer(required=False, allow_null=True)
    confidentialMintBurnAuthority = LookupSerializer(required=False, allow_null=True)
    # Also at creation (docs/webhooks.md): the creation's own transaction events reach them.
    postTransactionSubmitWebhooks = serializers.ListField(child=WebhookSerializer(), required=False, allow_null=True, max_length=10)


class CreateInstrumentInput(TransactionEnvelopeSerializer):
    itemData = CreateInstrumentItem()


class UpdateInstrumentItem(StrictSerializer):
    mintAccount = OwnInstrumentLookupSerializer()
    updateAuthority = LookupSerializer(required=False, allow_null=True)
    freezeAuthority = LookupSerializer(required=False, allow_null=True)
    mintAccountOffchainReferences = AccountReferencesSerializer(required=False, allow_null=True)
    onchainData = UpdateOnchainDataSerializer(required=False, allow_null=True)
    offchainData = OffchainDataSerializer(required=False, allow_null=True)
    defaultPositionState = serializers.ChoiceField(choices=PositionState.choices, required=False, allow_null=True)
    paused = StrictBooleanField(required=False, allow_null=True)
    newClosingAuthority = LookupSerializer(required=False, allow_null=True)
    currentClosingAuthority = LookupSerializer(required=False, allow_null=True)
    newPausableAuthority = LookupSerializer(required=False, allow_null=True)
    currentPausableAuthority = LookupSerializer(required=False, allow_null=True)
    newScaledUiAmountAuthority = LookupSerializer(required=False, allow_null=True)
    currentScaledUiAmountAuthority = LookupSerializer(required=False, allow_null=True)
    transferHookProgram = LookupSerializer(required=False, allow_null=True)
    newTransferHookAuthority = LookupSerializer(required=False, allow_null=True)
    currentTransferHookAuthority = LookupSerializer(required=False, allow_null=True)
    scaledUiAmountMultiplier = StrictNumberField(required=False, allow_null=True)
    reconcileCirculatingSupply = StrictBooleanField(required=False, allow_null=True)
    postTransactionSubmitWebhooks = serializers.ListField(child=WebhookSerializer(), required=False, allow_null=True, max_length=10)


class UpdateInstrumentInput(TransactionEnvelopeSerializer):
    itemData = UpdateInstrumentItem()


class PauseItem(StrictSerializer):
    financialInstrument = OwnInstrumentLookupSerializer()
    pausableAuthority = LookupSerializer(required=False, allow_null=True)


class PauseInput(TransactionEnvelopeSerializer):
    itemData = PauseItem()


class CloseItem(StrictSerializer):
    financialInstrumentToClose = OwnInstrumentLookupSerializer()
    refundDestination = LookupSerializer(required=False, allow_null=True)
    closeAuthority = LookupSerializer(required=False, allow_null=True)


class CloseInput(TransactionEnvelopeSerializer):
    itemData = CloseItem()


class CalculatorMetadataSerializer(StrictSerializer):
    name = StrictCharField(required=False, allow_blank=True, max_length=200)
    symbol = StrictCharField(required=False, allow_blank=True, max_length=32)
    uri = StrictCharField(required=False, allow_blank=True, max_length=200)
    simpleCustomMetadata = MetadataMap(required=False, allow_null=True)


class CalculatorInput(EnvelopeSerializer):
    extensions = serializers.ListField(child=serializers.ChoiceField(choices=sorted(API_EXTENSIONS)), max_length=len(API_EXTENSIONS))
    metadata = CalculatorMetadataSerializer(required=False, allow_null=True)


# --- outputs ------------------------------------------------------------------------------


class InstrumentOnchainOutput(serializers.Serializer):
    id = serializers.CharField()
    lastTransactionId = serializers.CharField(allow_null=True)
    lastTransactionAt = serializers.DateTimeField(allow_null=True)
    creationTransactionId = serializers.CharField(allow_null=True)
    creationTransactionAt = serializers.DateTimeField(allow_null=True)


class InstrumentOffchainOutput(serializers.Serializer):
    id = serializers.UUIDField()
    alId = serializers.CharField()
    category = serializers.CharField()
    type = serializers.CharField()
    lastTransactionId = serializers.UUIDField(allow_null=True)
    creationTransactionId = serializers.UUIDField(allow_null=True)


class OnchainDataOutput(serializers.Serializer):
    symbol = serializers.CharField()
    name = serializers.CharField()
    decimals = serializers.IntegerField()
    uri = serializers.CharField()
    simpleCustomMetadata = serializers.DictField(child=serializers.CharField())


class InstrumentOutput(serializers.Serializer):
    """Spec "Financial instrument response" (+ fields documented in docs/instruments.md).
    Authorities the service has no record of show their address only (offchain null)."""

    onchain = InstrumentOnchainOutput()
    offchain = InstrumentOffchainOutput()
    alId = serializers.CharField()
    mintAccount = account_or_unrecorded("InstrumentMintAccount")
    version = serializers.ChoiceField(choices=TokenVersion.choices)
    mintAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    updateAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    freezeAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    permanentDelegateAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    closingAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    pausableAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    scaledUiAmountAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    transferHookAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    confidentialTransferAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    confidentialMintBurnAuthority = account_or_unrecorded("InstrumentAuthorityAccount", allow_null=True)
    onchainData = OnchainDataOutput()
    offchainData = serializers.DictField()
    defaultPositionState = serializers.ChoiceField(choices=PositionState.choices)
    extensions = serializers.ListField(child=serializers.ChoiceField(choices=sorted(API_EXTENSIONS)))
    paused = serializers.BooleanField(allow_null=True)
    scaledUiAmountMultiplier = serializers.FloatField(allow_null=True)
    transferHookProgram = IdentifiersOut(allow_null=True)
    circulatingSupply = ValueOutput()
    status = serializers.ChoiceField(choices=InstrumentStatus.choices)
    managed = serializers.BooleanField()
    wasAlreadyOnchain = serializers.BooleanField()
    sharedAcrossTenants = serializers.BooleanField()
    comments = serializers.CharField()
    tenantOrganizationId = serializers.CharField()
    mintAccountSize = serializers.IntegerField()


BulkInstrumentsOutput = bulk_output("BulkInstrumentsOutput", InstrumentOutput, "Detail level `detailed`.")


class InstrumentCompactOnchainOutput(serializers.Serializer):
    id = serializers.CharField()


class InstrumentCompactOffchainOutput(serializers.Serializer):
    id = serializers.UUIDField()
    alId = serializers.CharField()


class InstrumentCompactOnchainDataOutput(serializers.Serializer):
    symbol = serializers.CharField()
    name = serializers.CharField()
    decimals = serializers.IntegerField()


class InstrumentCompactOutput(serializers.Serializer):
    """Detail level `compact` (render.instrument_compact)."""

    onchain = InstrumentCompactOnchainOutput()
    offchain = InstrumentCompactOffchainOutput()
    version = serializers.ChoiceField(choices=TokenVersion.choices)
    onchainData = InstrumentCompactOnchainDataOutput()
    status = serializers.ChoiceField(choices=InstrumentStatus.choices)
    managed = serializers.BooleanField()
    paused = serializers.BooleanField(allow_null=True)
    tenantOrganizationId = serializers.CharField()


BulkInstrumentsCompactOutput = bulk_output("BulkInstrumentsCompactOutput", InstrumentCompactOutput)
BulkInstrumentsIdentifiersOutput = bulk_output("BulkInstrumentsIdentifiersOutput", IdentifiersOut)


class CreateInstrumentOutput(serializers.Serializer):
    newFinancialInstrument = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class UpdateInstrumentOutput(serializers.Serializer):
    updatedFinancialInstrument = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class CloseInstrumentOutput(serializers.Serializer):
    closedFinancialInstrument = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class PauseInstrumentOutput(serializers.Serializer):
    pausedFinancialInstrument = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class UnpauseInstrumentOutput(serializers.Serializer):
    unpausedFinancialInstrument = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class CirculatingSupplyOutput(serializers.Serializer):
    financialInstrument = IdentifiersOut()
    onchain = ValueOutput()
    offchain = ValueOutput()
    inAgreement = serializers.BooleanField()
    decimals = serializers.IntegerField()
    at = serializers.DateTimeField()


class EstimatedRentOutput(serializers.Serializer):
    amount = serializers.FloatField()
    lamports = serializers.IntegerField()


class CalculatorOutput(serializers.Serializer):
    mintAccountSize = serializers.IntegerField()
    estimatedRent = EstimatedRentOutput()
    estimatedRentAmount = serializers.FloatField(help_text="Older variant of estimatedRent.amount.")
