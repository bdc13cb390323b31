"""Serializers for the body envelope every endpoint shares (spec: Shared request parts).

``StrictSerializer`` refuses keys it does not declare, so a misspelt field is a 400 that
names it instead of being silently ignored.
"""

from __future__ import annotations

import json
import re
import uuid
from decimal import Decimal

from rest_framework import serializers


class StrictBooleanField(serializers.BooleanField):
    """JSON true/false only (DRF also takes "yes", "on", 1, …)."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictIntegerField(serializers.IntegerField):
    """JSON integers only (DRF also takes "5", 5.0 and true)."""

    default_error_messages = {"invalid": "Must be an integer."}

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """JSON strings only (DRF also turns numbers into strings)."""

    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def _stored_numbers(value):
    """Free-form JSON as the database stores it: request numbers arrive as Decimal
    (ledger_project.api.parsers); metadata keeps them as JSON numbers (integers exact,
    others double precision — exact amounts belong in strings or Value objects)."""
    if isinstance(value, dict):
        return {key: _stored_numbers(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_stored_numbers(child) for child in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and value.as_tuple().exponent >= 0 else float(value)
    return value


class FreeFormObjectField(serializers.DictField):
    """A free-form JSON object (offchain metadata, newAlId, …) within documented limits:
    at most LEDGER_MAX_METADATA_KEYS keys in all (nested objects included) and
    LEDGER_MAX_METADATA_BYTES as compact JSON (docs/api.md, Limits)."""

    default_error_messages = {
        "too_many_keys": "At most {max_keys} keys (LEDGER_MAX_METADATA_KEYS).",
        "too_large": "At most {max_bytes} bytes as compact JSON (LEDGER_MAX_METADATA_BYTES).",
        "not_finite": "Numbers must be finite.",
    }

    def to_internal_value(self, data):
        from django.conf import settings

        value = super().to_internal_value(data)
        keys, stack = 0, [value]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                keys += len(node)
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
        if keys > settings.LEDGER_MAX_METADATA_KEYS:
            self.fail("too_many_keys", max_keys=settings.LEDGER_MAX_METADATA_KEYS)
        value = _stored_numbers(value)
        try:
            size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode())
        except ValueError:  # 1e999 became an infinite float
            self.fail("not_finite")
        if size > settings.LEDGER_MAX_METADATA_BYTES:
            self.fail("too_large", max_bytes=settings.LEDGER_MAX_METADATA_BYTES)
        return value


class StrictSerializer(serializers.Serializer):
    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: [serializers.ErrorDetail("Unknown field.", code="unknown_field")] for name in unknown})
        return super().to_internal_value(data)


class TenancyConfigSerializer(StrictSerializer):
    overrideOrganizationExternalId = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)


class EnvelopeSerializer(StrictSerializer):
    """Base of every request body: subclasses declare itemData (and svmTransactionConfig)."""

    tenancyConfig = TenancyConfigSerializer(required=False, allow_null=True)



def _is_address(value: str) -> bool:
    from solders.pubkey import Pubkey

    if not 32 <= len(value) <= 44:
        return False
    try:
        Pubkey.from_string(value)
    except ValueError:
        return False
    return True


_UUID_FORM = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def canonical_uuid(value) -> uuid.UUID | None:
    """The UUID of a string in the canonical 8-4-4-4-12 form (the OpenAPI's format uuid),
    else None: ``uuid.UUID`` also takes braces, ``urn:uuid:`` and bare hex."""
    if not isinstance(value, str) or not _UUID_FORM.fullmatch(value):
        return None
    return uuid.UUID(value)


class StrictUUIDField(serializers.UUIDField):
    """A UUID string in its canonical form only: DRF's UUIDField also takes integers (false
    became UUID 0), bare hex, braces and urn:uuid:, which the OpenAPI refuses."""

    def to_internal_value(self, data):
        value = canonical_uuid(data)
        if value is None:
            self.fail("invalid", value=data)
        return value


class AddressField(StrictCharField):
    """A base58 network address (32-byte public key)."""

    default_error_messages = {"invalid_address": "Not a valid base58 network address."}

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 44)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not _is_address(value):
            self.fail("invalid_address")
        return value


class OffchainReferencesSerializer(StrictSerializer):
    alId = StrictCharField(required=False, allow_null=True, max_length=32)
    organizationExternalId = StrictCharField(required=False, allow_null=True, max_length=64)
    accountNumber = StrictCharField(required=False, allow_null=True, max_length=64)
    code = StrictCharField(required=False, allow_null=True, max_length=64)
    type = StrictCharField(required=False, allow_null=True, max_length=40)
    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    newAlId = FreeFormObjectField(required=False, allow_null=True)


class LookupSerializer(StrictSerializer):
    """Spec "Lookup": a reference to an account, instrument, position, authority, …"""

    @classmethod
    def quick(cls, data):
        """The validated form of the most common lookup — one onchainId or offchainId —
        without building the serializer (DRF deep-copies every declared field per
        instance); None for anything else, which then takes the full path."""
        if not isinstance(data, dict) or len(data) != 1:
            return None
        (name, value), = data.items()
        if not isinstance(value, str):
            return None
        if name == "onchainId":
            return {"onchainId": value} if _is_address(value) else None
        if name == "offchainId":
            parsed = canonical_uuid(value)
            return {"offchainId": parsed} if parsed is not None else None
        return None

    onchainId = AddressField(required=False, allow_null=True)
    offchainId = StrictUUIDField(required=False, allow_null=True)
    offchainReferences = OffchainReferencesSerializer(required=False, allow_null=True)
    autoSign = StrictBooleanField(required=False, allow_null=True)
    otherTenantOrganizationExternalId = StrictCharField(required=False, allow_null=True, max_length=64)
    offPlatform = StrictBooleanField(required=False, allow_null=True)

    #: the offchainReferences that name a record (ledger_project/api/schema.py states the same)
    references = ("alId", "code", "accountNumber")
    #: given with another identifier, offchainReferences is empty or names the record too
    #: (accounts/lookup.py refuses narrowing by type alone; instruments/lookup.py ignores it)
    references_name_the_record = True

    def validate(self, attrs):
        """A lookup names a record, whether or not the operation ends up using it (a
        feePayer of a request that moves no lamports is still checked): 400 INVALID_LOOKUP,
        as the resolvers answer (docs/accounts.md, Lookups)."""
        refs = attrs.get("offchainReferences") or {}
        named = any(refs.get(name) for name in self.references)
        if not (attrs.get("onchainId") or attrs.get("offchainId") or named):
            raise serializers.ValidationError(
                f"A lookup needs onchainId, offchainId or offchainReferences naming the record ({', '.join(self.references)}).", code="INVALID_LOOKUP")
        if self.references_name_the_record and not named and any(value is not None for value in refs.values()):
            raise serializers.ValidationError(
                {"offchainReferences": [serializers.ErrorDetail(f"offchainReferences must name the record ({', '.join(self.references)}) or be empty.", code="INVALID_LOOKUP")]})
        return attrs


class OwnLookupSerializer(LookupSerializer):
    """A lookup of a record the request changes or signs with: it names a record of the
    acting organization (otherTenantOrganizationExternalId empty; schema only, the lookup
    resolves it with ``writable=True``)."""


class InstrumentLookupSerializer(LookupSerializer):
    """A lookup of a financial instrument: offchainReferences name it by alId or code
    (instruments/lookup.py)."""

    references = ("alId", "code")
    references_name_the_record = False


class OwnInstrumentLookupSerializer(InstrumentLookupSerializer):
    """An instrument the request changes: the acting organization's own (schema only)."""


class PriceEstimateSerializer(StrictSerializer):
    provider = serializers.ChoiceField(choices=["PARTNER_FEE_PROVIDER"], required=False)
    calculationStrategy = serializers.ChoiceField(choices=["DEFAULT"], required=False)
    priorityLevel = serializers.ChoiceField(choices=["RECOMMENDED"], required=False)


class ComputeUnitConfigSerializer(StrictSerializer):
    enable = StrictBooleanField(required=False, default=True)
    limit = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=1_400_000)
    price = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=10**12)
    priceEstimate = PriceEstimateSerializer(required=False, allow_null=True)


class CommitmentConfigSerializer(StrictSerializer):
    commitmentLevel = serializers.ChoiceField(choices=["processed", "confirmed", "finalized"])


class SvmTransactionConfigSerializer(StrictSerializer):
    """Spec "SVM transaction config" (+ addressLookupTables, durableNonceAccount: docs/transactions.md)."""

    feePayer = LookupSerializer(required=False, allow_null=True)
    computeUnitConfig = ComputeUnitConfigSerializer(required=False, allow_null=True)
    commitmentConfig = CommitmentConfigSerializer(required=False, allow_null=True)
    messageLifetimeStrategy = serializers.ChoiceField(choices=["RECENT_BLOCKHASH", "DURABLE_NONCE"], required=False, allow_null=True)
    transactionVersion = serializers.ChoiceField(choices=["V0", "LEGACY"], required=False, allow_null=True)
    addressLookupTables = serializers.ListField(child=AddressField(), required=False, allow_null=True, max_length=8)
    # Our extension too (docs/transactions.md, "Tenant durable nonce accounts"): the acting
    # organization's own nonce account a DURABLE_NONCE transaction must use.
    durableNonceAccount = OwnLookupSerializer(
        required=False, allow_null=True,
        help_text="One of your durable nonce accounts for this transaction (with messageLifetimeStrategy DURABLE_NONCE, else 400 CONFLICTING_FIELDS). "
                  "Absent: a free one of yours whose authority the service holds, else one of the platform's pool.",
    )
    # Our extension (docs/transactions.md, "Re-signing on expiry").
    resignOnExpiry = StrictBooleanField(
        required=False, allow_null=True,
        help_text="Default true: when a RECENT_BLOCKHASH transaction's blockhash expires before it landed (a provider dropped the send) and the service "
                  "made every one of its signatures, the service signs the same instructions again with a fresh blockhash (same offchainId, a new onchainId; "
                  "the old signature can then never land), at most LEDGER_RESIGN_MAX times. false: it ends EXPIRED instead.",
    )


class TransactionEnvelopeSerializer(EnvelopeSerializer):
    """Envelope of operations that build a network transaction."""

    svmTransactionConfig = SvmTransactionConfigSerializer(required=False, allow_null=True)


def validated(serializer_class, request_or_data) -> dict:
    """Validate a request body (or a dict) with ``serializer_class``; 400 naming every bad
    field otherwise."""
    from ledger_project.api.errors import ValidationFailed, flatten_validation

    data = request_or_data.data if hasattr(request_or_data, "data") else request_or_data
    quick = getattr(serializer_class, "quick", None)
    if quick is not None:
        result = quick(data)
        if result is not None:
            return result
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise ValidationFailed(flatten_validation(serializer.errors))
    return serializer.validated_data
