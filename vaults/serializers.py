"""Loan remittance vault API shapes (spec: "Loan remittance vaults"; docs/vaults.md).

The spec gives the operations and paths only; the bodies follow its conventions:
``itemData`` per operation with lookups, ``svmTransactionConfig`` and ``tenancyConfig``
beside it; mutating answers ``{<name>: {onchainId, offchainId}, svmTransactionResult}``.
"""

from __future__ import annotations

from rest_framework import serializers

from accounts.serializers import AccountReferencesSerializer, DebitLimitSerializer, ValueOutput
from ledger_project.api.envelope import (
    AddressField,
    EnvelopeSerializer,
    InstrumentLookupSerializer,
    LookupSerializer,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    StrictUUIDField,
    TransactionEnvelopeSerializer,
)
from positions.serializers import TokenValueSerializer
from programs.loan_vault.abi import MAX_CAPACITY
from transactions.serializers import TransactionResultOutput

from .models import VaultStatus

ACTIONS = ("ADD", "REMOVE")


class VaultLookupSerializer(StrictSerializer):
    """Names one of the organization's vaults: ``onchainId`` (the vault token account),
    ``offchainId``, or the pair ``loanFinancialInstrument`` + ``paymentFinancialInstrument``;
    several forms given must name the same vault (404 CONFLICTING_LOOKUP)."""

    onchainId = AddressField(required=False, allow_null=True, help_text="The vault's token account.")
    offchainId = StrictUUIDField(required=False, allow_null=True, help_text="The vault's offchainId (its position's).")
    loanFinancialInstrument = InstrumentLookupSerializer(required=False, allow_null=True)
    paymentFinancialInstrument = InstrumentLookupSerializer(required=False, allow_null=True)

    def validate(self, attrs):
        if bool(attrs.get("loanFinancialInstrument")) != bool(attrs.get("paymentFinancialInstrument")):
            missing = "paymentFinancialInstrument" if attrs.get("loanFinancialInstrument") else "loanFinancialInstrument"
            raise serializers.ValidationError({missing: [serializers.ErrorDetail("A vault's pair names both instruments.", code="required")]})
        if not (attrs.get("onchainId") or attrs.get("offchainId") or attrs.get("loanFinancialInstrument")):
            raise serializers.ValidationError("A vault is named by onchainId, offchainId, or loanFinancialInstrument and paymentFinancialInstrument.", code="INVALID_LOOKUP")
        return attrs


class VaultDestinationSerializer(StrictSerializer):
    """A token account of the vault's payment instrument: ``position`` (a position of the
    organization), or ``owner`` (an account of the organization, or any address as
    ``{onchainId, offPlatform: true}``: its associated token account). One of the two."""

    position = LookupSerializer(required=False, allow_null=True)
    owner = LookupSerializer(required=False, allow_null=True)

    def validate(self, attrs):
        if attrs.get("position") and attrs.get("owner"):
            raise serializers.ValidationError({"owner": [serializers.ErrorDetail("Name the destination by position or by owner, not both.", code="CONFLICTING_FIELDS")]})
        if not (attrs.get("position") or attrs.get("owner")):
            raise serializers.ValidationError({"position": [serializers.ErrorDetail("Name the destination by position or by owner.", code="required")]})
        return attrs


def _admin(**kwargs):
    return LookupSerializer(required=False, allow_null=True, help_text=(
        "Who signs as the vault's admin; default: the admin recorded at creation. The program checks it is the admin (400 PROGRAM_ERROR AdminMismatch). "
        "A key the organization may use signs here; otherwise the transaction waits PARTIALLY_SIGNED for Sign Transaction."), **kwargs)


class CreateVaultItem(StrictSerializer):
    loanFinancialInstrument = InstrumentLookupSerializer(help_text="The loan: an instrument of type LOAN, CORPORATE_LOAN, MUNI_LOAN, AUTO_LOAN or BROKER_CD (400 NOT_A_LOAN_INSTRUMENT).")
    paymentFinancialInstrument = InstrumentLookupSerializer(help_text="What repayments are paid in (SPL or Token-2022, transfer-hook mints included).")
    admin = LookupSerializer(help_text="Recorded on chain as the vault's admin: an account of the organization (managed: signs on platform) or any address {onchainId, offPlatform: true} (signs off platform).")
    loanMintAuthority = LookupSerializer(required=False, allow_null=True, help_text=(
        "The loan mint's mint authority, which signs the creation (only the issuer opens a loan's vault); default: the instrument's recorded one "
        "(400 AUTHORITY_MISMATCH when another)."))
    capacity = StrictIntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_CAPACITY, help_text="Whitelist entries the vault holds (fixed at creation; its rent grows with it). Default 16.")
    offchainReferences = AccountReferencesSerializer(required=False, allow_null=True, help_text="References of the vault's position (its type is FUNDS_TOKEN_ACCOUNT).")
    tokenDebitLimits = serializers.ListField(child=DebitLimitSerializer(), required=False, allow_null=True, max_length=20, help_text="Limits of repayments out of the vault (default: the token defaults, docs/positions.md).")
    tokenDebitApiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=100, help_text="API keys that may request repayments (needs PLATFORM_UPDATE_DEBIT_API_KEYS).")


class CreateVaultInput(TransactionEnvelopeSerializer):
    itemData = CreateVaultItem()


class UpdateWhitelistItem(StrictSerializer):
    vault = VaultLookupSerializer()
    action = serializers.ChoiceField(choices=ACTIONS, help_text="ADD or REMOVE one destination.")
    destination = VaultDestinationSerializer()
    admin = _admin()


class UpdateWhitelistInput(TransactionEnvelopeSerializer):
    itemData = UpdateWhitelistItem()


class RepaymentItem(StrictSerializer):
    vault = VaultLookupSerializer()
    destination = VaultDestinationSerializer(help_text="A whitelisted destination (the program refuses others: PROGRAM_ERROR DestinationNotWhitelisted).")
    value = TokenValueSerializer(help_text="Value of the payment instrument moved out of the vault.")
    admin = _admin()


class RepaymentInput(TransactionEnvelopeSerializer):
    itemData = RepaymentItem()


class CloseVaultItem(StrictSerializer):
    vault = VaultLookupSerializer()
    refundDestination = LookupSerializer(required=False, allow_null=True, help_text="Receives the rent of the token account and the whitelist (may be off platform); default: the account that paid it.")
    admin = _admin()


class CloseVaultInput(TransactionEnvelopeSerializer):
    itemData = CloseVaultItem()


class VaultDetailsInput(EnvelopeSerializer):
    itemData = VaultLookupSerializer()


# --- answers -------------------------------------------------------------------------------


class VaultIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField(help_text="The vault's token account.")
    offchainId = serializers.UUIDField(help_text="The vault's offchainId (its position's).")


class VaultRecordOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True)


class VaultAddressOutput(serializers.Serializer):
    onchainId = serializers.CharField()


class VaultInstrumentOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    alId = serializers.CharField()


class VaultTransactionOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()


class VaultOutput(serializers.Serializer):
    """Fetch Vault Details."""

    vault = VaultIdentifiersOutput()
    vaultAuthority = VaultRecordOutput(help_text="The PDA [\"vault-authority\", loan mint, payment mint] of the program: owns the token account, signs its transfers.")
    whitelistAccount = VaultAddressOutput(help_text="The program-owned state: admin, whitelist, last sequence.")
    program = VaultAddressOutput()
    loanFinancialInstrument = VaultInstrumentOutput()
    paymentFinancialInstrument = VaultInstrumentOutput()
    admin = VaultRecordOutput(help_text="offchainId: the organization's account, when the admin is one.")
    status = serializers.ChoiceField(choices=VaultStatus.choices)
    capacity = serializers.IntegerField()
    whitelist = VaultRecordOutput(many=True, help_text="The destinations as the chain holds them after the last confirmed change (offchainId: the organization's position there).")
    lastSequence = serializers.IntegerField(help_text="The last repayment sequence on chain, as of the last confirmed change.")
    balance = ValueOutput(help_text="The vault position's offchain balance.")
    createdAt = serializers.CharField()
    closedAt = serializers.CharField(allow_null=True)
    creationTransaction = VaultTransactionOutput(allow_null=True)
    lastTransaction = VaultTransactionOutput(allow_null=True)


def _mutation_output(component: str, **fields):
    return type(component, (serializers.Serializer,), {**fields, "svmTransactionResult": TransactionResultOutput(), "__module__": __name__})


CreateVaultOutput = _mutation_output("CreateVaultOutput", newVault=VaultIdentifiersOutput())
UpdateWhitelistOutput = _mutation_output("UpdateWhitelistOutput", updatedVault=VaultIdentifiersOutput(), destination=VaultRecordOutput())
RepaymentOutput = _mutation_output("RepaymentOutput", vault=VaultIdentifiersOutput(), destination=VaultRecordOutput(),
                                   sequence=serializers.IntegerField(help_text="The repayment's sequence (handed out per vault, in order)."))
CloseVaultOutput = _mutation_output("CloseVaultOutput", closedVault=VaultIdentifiersOutput())
