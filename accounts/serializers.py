"""Accounts API shapes, with the spec's field names (misspellings included)."""

from __future__ import annotations

import uuid
from decimal import Decimal

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from ledger_project.api.envelope import (
    AddressField,
    EnvelopeSerializer,
    FreeFormObjectField,
    LookupSerializer,
    OwnLookupSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    TransactionEnvelopeSerializer,
)
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer
from ledger_project.api.renderers import display_amount
from ledger_project.timestamps import timestamp_text
from transactions.serializers import TransactionResultOutput

from custody.models import KeyLocation

from .models import AccountType
from .mpc.serializers import DkgSessionConfigSerializer, DkgSessionOutput, MpcPlayerCodeField

LAMPORTS_PER_SOL = 10**9
U64_MAX = 2**64 - 1


class ValueSerializer(StrictSerializer):
    """Spec "Value": {amount (network currency units), lamports}. lamports wins when both
    are given and they must agree; amount alone must be a whole number of lamports."""

    amount = serializers.DecimalField(max_digits=30, decimal_places=9, required=False, allow_null=True, min_value=Decimal(0))
    lamports = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=U64_MAX)

    def validate(self, attrs):
        amount, lamports = attrs.get("amount"), attrs.get("lamports")
        if amount is None and lamports is None:
            raise serializers.ValidationError({"lamports": [serializers.ErrorDetail("Give lamports or amount.", code="required")]})
        from_amount = None
        if amount is not None:
            scaled = amount * LAMPORTS_PER_SOL
            if scaled != scaled.to_integral_value():
                raise serializers.ValidationError({"amount": [serializers.ErrorDetail("amount has more than 9 decimals.", code="invalid")]})
            from_amount = int(scaled)
        if lamports is not None and from_amount is not None and lamports != from_amount:
            # A rule the schema cannot state (both fields are optional): its own code, documented.
            raise serializers.ValidationError({"amount": [serializers.ErrorDetail(f"amount ({amount} SOL = {from_amount} lamports) and lamports ({lamports}) disagree: give one, or both equal.", code="VALUE_MISMATCH")]})
        value = lamports if lamports is not None else from_amount
        if value > U64_MAX:
            raise serializers.ValidationError({"amount": [serializers.ErrorDetail("Too large.", code="max_value")]})
        return value


def value_output(lamports) -> dict:
    """``amount`` is an exact Decimal (rendered as an exact JSON number by
    ledger_project.api.renderers), never a float: u64 lamports keep every digit."""
    lamports = int(lamports or 0)
    return {"amount": display_amount(lamports, 9), "lamports": lamports}


class AccountReferencesSerializer(StrictSerializer):
    alId = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=32)
    organizationExternalId = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)
    accountNumber = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)
    code = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64)
    type = serializers.ChoiceField(choices=AccountType.choices, required=False, allow_null=True)
    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    newAlId = FreeFormObjectField(required=False, allow_null=True)


class DkgKeySerializer(StrictSerializer):
    """A threshold key made by distributed key generation (docs/threshold-signing.md)."""

    keyUsage = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=64, help_text="Recorded as given.")
    useBackendPlayersCodes = serializers.ListField(child=MpcPlayerCodeField(), required=False, allow_null=True, max_length=64,
                                                   help_text="The service's own players (LEDGER_MPC_BACKEND_PLAYERS; 400 UNKNOWN_MPC_PLAYER otherwise).")
    isDefault = StrictBooleanField(required=False, allow_null=True, help_text="Recorded as given.")
    session = DkgSessionConfigSerializer()


@extend_schema_field({"type": "string", "format": "base58-secret-key", "description": "A private key: base58 of the 64-byte secret key or the 32-byte seed, or a JSON array of its bytes."})
class PrivateKeyField(StrictCharField):
    """Schema only: custody/services.py parses and checks the key (400 INVALID_PRIVATE_KEY)."""


class PrivateKeyDetailsSerializer(StrictSerializer):
    location = serializers.ListField(child=serializers.ChoiceField(choices=KeyLocation.choices), required=False, allow_null=True, max_length=2)
    publickKey = AddressField(required=False, allow_null=True)  # spelling as in the spec
    privateKey = PrivateKeyField(required=False, allow_null=True, max_length=400, trim_whitespace=True)
    dkgKeys = serializers.ListField(child=DkgKeySerializer(), required=False, allow_null=True, max_length=1,
                                    help_text="One threshold key: its group key is the account's address (an account has one key).")


class DebitLimitSerializer(StrictSerializer):
    destinationType = serializers.ChoiceField(choices=["OFF_PLATFORM", "NON_MANAGED", "MANAGED"])
    limitType = serializers.ChoiceField(choices=["PER_TRANSACTION", "DURATION"])
    maxAmountWithoutApproval = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=U64_MAX, help_text="Base units (lamports or token base units); null = unlimited.")
    durationHours = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=24 * 366)

    def validate(self, attrs):
        if attrs["limitType"] == "DURATION" and not attrs.get("durationHours"):
            attrs["durationHours"] = 24
        if attrs["limitType"] == "PER_TRANSACTION" and attrs.get("durationHours"):
            raise serializers.ValidationError({"durationHours": [serializers.ErrorDetail("Only DURATION limits have a duration.", code="invalid")]})
        return attrs


class DebitSettingsSerializer(StrictSerializer):
    """Debit API keys (role-gated) and debit limits: shared by create and update."""

    networkCurrencyDebitApiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=100)
    tokenDebitApiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=100)
    networkCurrencyDebitLimits = serializers.ListField(child=DebitLimitSerializer(), required=False, allow_null=True, max_length=20)
    tokenDebitLimits = serializers.ListField(child=DebitLimitSerializer(), required=False, allow_null=True, max_length=20)


class NewAccountSerializer(DebitSettingsSerializer):
    """Spec "New account definition"."""

    managed = StrictBooleanField(required=False, default=True)
    alreadyOnchain = StrictBooleanField(required=False, default=False)
    onchainId = AddressField(required=False, allow_null=True)
    offchainReferences = AccountReferencesSerializer(required=False, allow_null=True)
    privateKeyDetails = PrivateKeyDetailsSerializer(required=False, allow_null=True)
    dataLength = StrictIntegerField(required=False, default=0, min_value=0, max_value=10 * 1024 * 1024)
    seed = ValueSerializer(required=False, allow_null=True)
    subscribeToNetworkEvents = StrictBooleanField(required=False, default=False)
    orgsAllowedToSignWithPrivateKey = serializers.ListField(child=StrictCharField(max_length=64), required=False, default=list, max_length=100)
    shareAcrossTenants = StrictBooleanField(required=False, default=False)
    tokenVersion = serializers.ChoiceField(choices=["SPL", "TOKEN_2022"], required=False, allow_null=True)
    comments = StrictCharField(required=False, allow_blank=True, default="", max_length=2000)
    isGenesis = StrictBooleanField(required=False, default=False)
    domain = StrictCharField(required=False, allow_blank=True, default="", max_length=200)
    skipBlockchainExistenceVerification = StrictBooleanField(required=False, default=False)


class CreateAccountInput(TransactionEnvelopeSerializer):
    itemData = NewAccountSerializer()


class LookupInput(EnvelopeSerializer):
    itemData = LookupSerializer()

    @classmethod
    def quick(cls, data):
        """``{"itemData": <one-identifier lookup>}`` validated without the serializer
        (ledger_project.api.envelope.validated); None → the full path."""
        if isinstance(data, dict) and len(data) == 1 and "itemData" in data:
            item = LookupSerializer.quick(data["itemData"])
            return {"itemData": item} if item is not None else None
        return None


class OwnLookupInput(LookupInput):
    """Fetch Account Private Key: the account must be the acting organization's."""

    itemData = OwnLookupSerializer()


class BalanceItem(StrictSerializer):
    account = LookupSerializer()
    at = serializers.DateTimeField(required=False, allow_null=True)


class BalanceInput(EnvelopeSerializer):
    itemData = BalanceItem()


class BulkInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


class UpdateAccountItem(DebitSettingsSerializer):
    """Patch: only the fields present change."""

    account = OwnLookupSerializer()
    offchainReferences = AccountReferencesSerializer(required=False)
    comments = StrictCharField(required=False, allow_blank=True, max_length=2000)
    domain = StrictCharField(required=False, allow_blank=True, max_length=200)
    subscribeToNetworkEvents = StrictBooleanField(required=False)
    shareAcrossTenants = StrictBooleanField(required=False)
    isGenesis = StrictBooleanField(required=False)
    orgsAllowedToSignWithPrivateKey = serializers.ListField(child=StrictCharField(max_length=64), required=False, max_length=100)


class UpdateAccountInput(EnvelopeSerializer):
    itemData = UpdateAccountItem()


class InactivateItem(StrictSerializer):
    account = OwnLookupSerializer()
    refundDestination = LookupSerializer(required=False, allow_null=True)


class InactivateInput(TransactionEnvelopeSerializer):
    itemData = InactivateItem()


# --- output -------------------------------------------------------------------------------


class AccountOnchainOutput(serializers.Serializer):
    id = serializers.CharField(source="address")
    lastTransactionId = serializers.SerializerMethodField()
    lastTransactionAt = serializers.SerializerMethodField()
    creationTransactionId = serializers.SerializerMethodField()
    creationTransactionAt = serializers.SerializerMethodField()

    def get_lastTransactionId(self, a) -> str | None:
        return a.last_transaction.onchain_id if a.last_transaction_id else None

    def get_lastTransactionAt(self, a) -> str | None:
        return timestamp_text(a.last_transaction_at)

    def get_creationTransactionId(self, a) -> str | None:
        return a.creation_transaction.onchain_id if a.creation_transaction_id else None

    def get_creationTransactionAt(self, a) -> str | None:
        return timestamp_text(a.creation_transaction_at)


class AccountOffchainOutput(serializers.Serializer):
    id = serializers.UUIDField(source="offchain_id")
    type = serializers.CharField()
    code = serializers.CharField()
    alId = serializers.CharField(source="al_id")
    organizationExternalId = serializers.CharField(source="organization_external_id")
    accountNumber = serializers.CharField(source="account_number")
    name = serializers.CharField()
    lamportsBalance = serializers.IntegerField(source="lamports_balance")
    tokenBalance = serializers.IntegerField(source="token_balance", allow_null=True)
    tokenDecimals = serializers.IntegerField(source="token_decimals", allow_null=True)
    lastTransactionId = serializers.SerializerMethodField()
    creationTransactionId = serializers.SerializerMethodField()

    def get_lastTransactionId(self, a) -> str | None:
        return str(a.last_transaction.offchain_id) if a.last_transaction_id else None

    def get_creationTransactionId(self, a) -> str | None:
        return str(a.creation_transaction.offchain_id) if a.creation_transaction_id else None


class AccountOutput(serializers.Serializer):
    """Spec "Account response" (detail level `detailed`)."""

    onchain = AccountOnchainOutput(source="*")
    offchain = AccountOffchainOutput(source="*")
    managed = serializers.BooleanField()
    status = serializers.CharField()
    privateKeyLocation = serializers.ListField(source="private_key_location", child=serializers.CharField())
    isDerived = serializers.BooleanField(source="is_derived")
    comments = serializers.CharField()
    subscribeToNetworkEvents = serializers.BooleanField(source="subscribe_to_network_events")
    sharedAcrossTenants = serializers.BooleanField(source="shared_across_tenants")
    wasOnchainAlready = serializers.BooleanField(source="was_onchain_already")
    canPayFees = serializers.BooleanField(source="can_pay_fees")
    globalFeePayerForOrgs = serializers.ListField(source="global_fee_payer_for_orgs", child=serializers.CharField())
    solDebitApiKeys = serializers.ListField(source="network_currency_debit_api_keys", child=serializers.CharField())
    tokenDebitApiKeys = serializers.ListField(source="token_debit_api_keys", child=serializers.CharField())
    domain = serializers.CharField()
    tenantOrganizationId = serializers.CharField(source="tenant.external_id")
    # Beyond the spec's table (docs/accounts.md): what the service enforces.
    networkCurrencyDebitLimits = serializers.SerializerMethodField()
    tokenDebitLimits = serializers.SerializerMethodField()
    orgsAllowedToSignWithPrivateKey = serializers.ListField(source="orgs_allowed_to_sign", child=serializers.CharField())
    dataLength = serializers.IntegerField(source="data_length")

    def get_networkCurrencyDebitLimits(self, a) -> list:
        from .limits import effective_limits

        return effective_limits(a, "networkCurrency")

    def get_tokenDebitLimits(self, a) -> list | None:
        """null: not configured, so each position's token defaults apply (docs/positions.md)."""
        from .limits import effective_limits

        return effective_limits(a, "token")


class AccountCompactOnchainOutput(serializers.Serializer):
    id = serializers.CharField(source="address")


class AccountCompactOffchainOutput(serializers.Serializer):
    id = serializers.UUIDField(source="offchain_id")
    type = serializers.CharField()
    code = serializers.CharField()
    alId = serializers.CharField(source="al_id")
    accountNumber = serializers.CharField(source="account_number")
    name = serializers.CharField()
    lamportsBalance = serializers.IntegerField(source="lamports_balance")


class AccountCompactOutput(serializers.Serializer):
    """Detail level `compact`: identity, kind and state (docs/accounts.md)."""

    onchain = AccountCompactOnchainOutput(source="*")
    offchain = AccountCompactOffchainOutput(source="*")
    managed = serializers.BooleanField()
    status = serializers.CharField()
    tenantOrganizationId = serializers.CharField(source="tenant.external_id")


class AccountIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(source="address")
    offchainId = serializers.UUIDField(source="offchain_id")


class IdentifiersOut(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()


class CreateAccountOutput(serializers.Serializer):
    newAccount = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)
    dkgSession = DkgSessionOutput(required=False, help_text="With dkgKeys: the key generation (docs/threshold-signing.md); onchainId is null until it completes.")


class UpdateAccountOutput(serializers.Serializer):
    updatedAccount = IdentifiersOut()


class InactivateAccountOutput(serializers.Serializer):
    inactivatedAccount = IdentifiersOut()
    svmTransaction = TransactionResultOutput(allow_null=True)


class ValueOutput(serializers.Serializer):
    amount = serializers.FloatField()
    lamports = serializers.IntegerField()


class BalanceOutput(serializers.Serializer):
    account = IdentifiersOut()
    at = serializers.CharField(allow_null=True)
    offchain = ValueOutput()
    onchain = ValueOutput(allow_null=True)


class PrivateKeyOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    privateKey = serializers.CharField()
    encoding = serializers.CharField()


class TenantInfoOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    tenantOrganizationId = serializers.CharField()
    tenantOrganizationName = serializers.CharField()
    sharedAcrossTenants = serializers.BooleanField()
    managed = serializers.BooleanField()
    isOwnOrganization = serializers.BooleanField()


BulkAccountsOutput = bulk_output("BulkAccountsOutput", AccountOutput, "Detail level `detailed`.")
BulkAccountsCompactOutput = bulk_output("BulkAccountsCompactOutput", AccountCompactOutput)
BulkAccountsIdentifiersOutput = bulk_output("BulkAccountsIdentifiersOutput", AccountIdentifiersOutput)


# --- durable nonce accounts (accounts/nonces.py; docs/transactions.md) ---------------------


class NewDurableNonceAccountsItem(StrictSerializer):
    count = StrictIntegerField(min_value=1, max_value=20, help_text="How many nonce accounts to create (1 to 20, accounts.nonces.MAX_NONCE_ACCOUNTS_PER_REQUEST); as few transactions as fit carry them.")
    nonceAuthority = OwnLookupSerializer(
        required=False, allow_null=True,
        help_text="An account of yours that becomes every new account's nonce authority (it signs each use). Absent: a new key the service holds, one per account.",
    )


class CreateDurableNonceAccountsInput(TransactionEnvelopeSerializer):
    itemData = NewDurableNonceAccountsItem()


class DurableNonceAccountItem(StrictSerializer):
    durableNonceAccount = OwnLookupSerializer()


class DurableNonceAccountInput(EnvelopeSerializer):
    itemData = DurableNonceAccountItem()


class CreateDurableNonceAccountsOutput(serializers.Serializer):
    newDurableNonceAccounts = IdentifiersOut(many=True)
    svmTransactions = TransactionResultOutput(many=True, help_text="The creation transactions, in order; each creates a consecutive run of newDurableNonceAccounts.")


class NonceAuthorityOutput(serializers.Serializer):
    onchainId = serializers.CharField(source="authority")
    offchainId = serializers.UUIDField(source="authority_offchain_id", allow_null=True, help_text="The account of yours named as nonceAuthority; null for a key the service generated.")
    managed = serializers.SerializerMethodField(help_text="Whether the service holds the authority's key (it signs on platform); false: it signs off platform (Sign Transaction).")

    def get_managed(self, row) -> bool:
        return row.authority_held is not None


def _leased_by(row) -> str | None:
    return str(uuid.UUID(str(row.leased_by))) if row.leased_by else None


class DurableNonceAccountIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(source="address")
    offchainId = serializers.UUIDField(source="offchain_id")


class DurableNonceAccountCompactOutput(DurableNonceAccountIdentifiersOutput):
    state = serializers.CharField(source="nonce_state", help_text="CREATING, READY, LEASED or FAILED.")
    leasedBy = serializers.SerializerMethodField(help_text="offchainId of the transaction holding the lease (null while a request is still building it, and when free).")

    def get_leasedBy(self, row) -> str | None:
        return _leased_by(row)


class DurableNonceAccountOutput(DurableNonceAccountCompactOutput):
    authority = NonceAuthorityOutput(source="*")
    nonce = serializers.CharField(allow_null=True, help_text="The nonce value the account holds on chain now (read at confirmed); null while none is initialized.")
    createdAt = serializers.SerializerMethodField()
    creationTransactionId = serializers.SerializerMethodField(help_text="offchainId of the transaction that creates it.")

    def get_createdAt(self, row) -> str:
        return timestamp_text(row.created_at)

    def get_creationTransactionId(self, row) -> str | None:
        return str(uuid.UUID(str(row.creation_transaction_offchain_id))) if row.creation_transaction_offchain_id else None


BulkDurableNonceAccountsOutput = bulk_output("BulkDurableNonceAccountsOutput", DurableNonceAccountOutput)
BulkDurableNonceAccountsCompactOutput = bulk_output("BulkDurableNonceAccountsCompactOutput", DurableNonceAccountCompactOutput)
BulkDurableNonceAccountsIdentifiersOutput = bulk_output("BulkDurableNonceAccountsIdentifiersOutput", DurableNonceAccountIdentifiersOutput)


class UnrecordedAccountOutput(serializers.Serializer):
    """An account the organization has no record of: its address, nothing offchain."""

    onchain = AccountOnchainOutput()
    offchain = serializers.JSONField(allow_null=True, help_text="null")
    managed = serializers.BooleanField()
    status = serializers.CharField(allow_null=True)


def account_or_unrecorded(name: str, **kwargs) -> PolymorphicProxySerializer:
    """An account field whose account may be one the organization has no record of (an
    authority, a counterparty): AccountOutput, or UnrecordedAccountOutput (address only)."""
    return PolymorphicProxySerializer(component_name=name, serializers=[AccountOutput, UnrecordedAccountOutput], resource_type_field_name=None, **kwargs)
