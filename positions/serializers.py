"""Positions API shapes (spec: Positions, Position lookup, Value; docs/positions.md).

The spec names the operations and definition schemas but not their bodies; these follow
its conventions: ``itemData`` per operation, ``svmTransactionConfig`` and
``tenancyConfig`` beside it, results ``{<resultName>: {onchainId, offchainId},
svmTransaction}``.
"""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.serializers import AccountCompactOutput, AccountOutput, AccountReferencesSerializer, DebitLimitSerializer, IdentifiersOut, U64_MAX, ValueOutput
from ledger_project.api.envelope import (
    EnvelopeSerializer,
    InstrumentLookupSerializer,
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
from transactions.serializers import TransactionResultOutput

from instruments.models import PositionState, TokenVersion

from .models import PositionStatus


class PositionLookupSerializer(StrictSerializer):
    """Spec "Position lookup": by ``position``, or by ``owner`` + ``financialInstrument``;
    ``mintAuthority``/``freezeAuthority`` name the signing authority where one signs."""

    position = LookupSerializer(required=False, allow_null=True)
    owner = LookupSerializer(required=False, allow_null=True)
    financialInstrument = InstrumentLookupSerializer(required=False, allow_null=True)
    mintAuthority = OwnLookupSerializer(required=False, allow_null=True)
    freezeAuthority = OwnLookupSerializer(required=False, allow_null=True)


class TokenValueSerializer(StrictSerializer):
    """Spec "Value" for tokens: ``amount`` in display units (the instrument's decimals and,
    for Scaled UI Amount mints, its multiplier), ``lamports`` in base units. Either; both
    must agree (positions/values.py checks against the instrument)."""

    amount = serializers.DecimalField(max_digits=40, decimal_places=18, required=False, allow_null=True, min_value=Decimal(0))
    lamports = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=U64_MAX)

    def validate(self, attrs):
        if attrs.get("amount") is None and attrs.get("lamports") is None:
            raise serializers.ValidationError({"lamports": [serializers.ErrorDetail("Give amount or lamports.", code="required")]})
        return attrs


class NetworkValueSerializer(TokenValueSerializer):
    """Spec "Value" for network currency: ``amount`` in SOL (9 decimals), ``lamports``."""


class PositionReferencesSerializer(AccountReferencesSerializer):
    """offchainReferences of the position's token account (type follows the instrument)."""


class InitializePositionItem(StrictSerializer):
    owner = LookupSerializer()
    financialInstrument = InstrumentLookupSerializer()
    offchainReferences = PositionReferencesSerializer(required=False, allow_null=True)
    associated = StrictBooleanField(required=False, default=True, help_text="false: a token account of its own managed key instead of the owner's associated token account.")
    alreadyOnchain = StrictBooleanField(required=False, default=False, help_text="Onboard the owner's existing associated token account: no transaction.")
    tokenDebitLimits = serializers.ListField(child=DebitLimitSerializer(), required=False, allow_null=True, max_length=20)
    tokenDebitApiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=100)


class InitializePositionInput(TransactionEnvelopeSerializer):
    itemData = InitializePositionItem()


class PositionLookupInput(EnvelopeSerializer):
    itemData = PositionLookupSerializer()


class PositionBalanceItem(PositionLookupSerializer):
    at = serializers.DateTimeField(required=False, allow_null=True, help_text="The offchain balance at this past time.")


class PositionBalanceInput(EnvelopeSerializer):
    itemData = PositionBalanceItem()


class PositionBalanceOutput(serializers.Serializer):
    """Fetch Position Balance: the offchain balance (as of the last confirmed transaction,
    or at ``at``) and, for the current balance, the chain's, in the instrument's display
    units and base units."""

    position = IdentifiersOut()
    financialInstrument = IdentifiersOut()
    at = serializers.DateTimeField(allow_null=True)
    offchain = ValueOutput()
    onchain = ValueOutput(allow_null=True, help_text="null for a past balance (at) or a token account no longer on the network.")
    inAgreement = serializers.BooleanField(allow_null=True, help_text="offchain equals onchain (null for a past balance).")


class BulkPositionsInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


# --- output --------------------------------------------------------------------------------


class PositionInstrumentOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    alId = serializers.CharField()
    version = serializers.ChoiceField(choices=TokenVersion.choices)
    symbol = serializers.CharField()
    decimals = serializers.IntegerField()
    paused = serializers.BooleanField(allow_null=True)


class DelegateOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    delegatedAmount = ValueOutput()


class PositionOutput(serializers.Serializer):
    """Position response (docs/positions.md): the token account, its owner and instrument,
    state, balance (instrument display units and base units) and debit settings."""

    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    account = AccountOutput()
    owner = AccountCompactOutput()
    financialInstrument = PositionInstrumentOutput()
    status = serializers.ChoiceField(choices=PositionStatus.choices)
    state = serializers.ChoiceField(choices=PositionState.choices)
    isAssociated = serializers.BooleanField()
    wasOnchainAlready = serializers.BooleanField()
    balance = ValueOutput()
    delegate = DelegateOutput(allow_null=True)
    tokenDebitLimits = DebitLimitSerializer(many=True, allow_null=True, help_text="As configured on the position; null: the owner's, else the token defaults (docs/positions.md).")
    tokenDebitApiKeys = serializers.ListField(child=serializers.CharField())
    lastTransactionAt = serializers.DateTimeField(allow_null=True)
    createdAt = serializers.DateTimeField()


def mutation_output(result_name: str, component: str):
    """``{<result_name>: {onchainId, offchainId}, svmTransaction}`` as a named schema."""
    return type(component, (serializers.Serializer,), {result_name: IdentifiersOut(), "svmTransaction": TransactionResultOutput(allow_null=True), "__module__": __name__})


InitializePositionOutput = mutation_output("newPosition", "InitializePositionOutput")


# --- Transfer Network Currency (positions/transfers.py) ---------------------------------------


class TransferNetworkCurrencyItem(StrictSerializer):
    """Spec "Transfer Network Currency Definition" (body decided here: docs/positions.md)."""

    source = LookupSerializer(help_text="The account debited: it signs (managed and usable by the organization; else the transaction waits PARTIALLY_SIGNED).")
    destination = LookupSerializer(help_text="The account credited, or {onchainId, offPlatform: true} for an address the service does not know.")
    value = NetworkValueSerializer(help_text="amount in SOL (at most 9 decimals) or lamports; both must agree.")


class TransferNetworkCurrencyInput(TransactionEnvelopeSerializer):
    itemData = TransferNetworkCurrencyItem()


class DestinationAccountIdentifiers(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True, help_text="null for an off-platform destination.")


class TransferNetworkCurrencyOutput(serializers.Serializer):
    destinationAccount = DestinationAccountIdentifiers()
    svmTransaction = TransactionResultOutput(help_text="status PENDING_APPROVAL when a debit limit holds it for approval (errorMessage says which).")
# --- lifecycle: Update, Inactivate, Freeze, Unfreeze (positions/lifecycle.py) ----------------


class DelegateSerializer(StrictSerializer):
    """A delegate to approve (ApproveChecked): it may then transfer or burn up to ``value``
    from the position."""

    account = LookupSerializer(help_text="The delegate: an account lookup, or {onchainId, offPlatform: true} for an address the service does not know.")
    value = TokenValueSerializer(help_text="How much the delegate may move (more than 0; the instrument's display units or base units).")


class UpdatePositionItem(StrictSerializer):
    """Patch: only the fields present change."""

    position = PositionLookupSerializer()
    offchainReferences = PositionReferencesSerializer(required=False, allow_null=True, help_text="Of the position's token account; its type cannot change.")
    tokenDebitLimits = serializers.ListField(child=DebitLimitSerializer(), required=False, allow_null=True, max_length=20, help_text="Positions of wallet owners only; null: the owner's, else the token defaults; []: no limits.")
    tokenDebitApiKeys = serializers.ListField(child=StrictCharField(max_length=64), required=False, allow_null=True, max_length=100, help_text="Role PLATFORM_UPDATE_DEBIT_API_KEYS; null or []: every key may debit.")
    delegate = DelegateSerializer(required=False, allow_null=True, help_text="Approve this delegate (a network transaction the owner signs); null revokes the current delegate.")


class UpdatePositionInput(TransactionEnvelopeSerializer):
    itemData = UpdatePositionItem()


class PositionStateItem(StrictSerializer):
    position = PositionLookupSerializer(help_text="The position; its freezeAuthority, when given, must be the mint's freeze authority (it signs).")


class FreezePositionInput(TransactionEnvelopeSerializer):
    itemData = PositionStateItem()


class InactivatePositionItem(StrictSerializer):
    position = PositionLookupSerializer()
    refundDestination = LookupSerializer(required=False, allow_null=True, help_text="Receives the token account's rent (default: the owner); {onchainId, offPlatform: true} for an address the service does not know.")


class InactivatePositionInput(TransactionEnvelopeSerializer):
    itemData = InactivatePositionItem()


UpdatePositionOutput = mutation_output("updatedPosition", "UpdatePositionOutput")
InactivatePositionOutput = mutation_output("inactivatedPosition", "InactivatePositionOutput")
FreezePositionOutput = mutation_output("frozenPosition", "FreezePositionOutput")
UnfreezePositionOutput = mutation_output("unfrozenPosition", "UnfreezePositionOutput")


# --- Fetch Positions (positions/selectors.py POSITION_QUERY) ----------------------------------


class PositionOwnerIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()


class PositionCompactInstrumentOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    alId = serializers.CharField()


class PositionCompactOutput(serializers.Serializer):
    """Detail level `compact` (render.position_compact)."""

    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    owner = PositionOwnerIdentifiersOutput()
    financialInstrument = PositionCompactInstrumentOutput()
    status = serializers.ChoiceField(choices=PositionStatus.choices)
    state = serializers.ChoiceField(choices=PositionState.choices)
    balance = ValueOutput()


class PositionIdentifiersOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()


BulkPositionsOutput = bulk_output("BulkPositionsOutput", PositionOutput, "Detail level `detailed`.")
BulkPositionsCompactOutput = bulk_output("BulkPositionsCompactOutput", PositionCompactOutput)
BulkPositionsIdentifiersOutput = bulk_output("BulkPositionsIdentifiersOutput", PositionIdentifiersOutput)
# --- Mint, Burn, Transfer Financial Instrument, Trade (positions/movement.py) -------------


class MintPositionLookupSerializer(PositionLookupSerializer):
    """The receiving position of a Mint: mintAuthority may name the signing mint authority;
    freezeAuthority does not apply (400 NOT_APPLICABLE)."""


class MovingPositionLookupSerializer(PositionLookupSerializer):
    """A position that sends or receives in a burn, transfer or trade: mintAuthority and
    freezeAuthority do not apply (400 NOT_APPLICABLE)."""


class MintItem(StrictSerializer):
    position = MintPositionLookupSerializer(help_text="The receiving position; mintAuthority may name the signing mint authority (it must be the mint's).")
    value = TokenValueSerializer()
    createIfMissing = StrictBooleanField(required=False, default=False, help_text="With an owner + financialInstrument lookup: create the owner's associated position in the same transaction when it does not exist (answer 201).")


class MintInput(TransactionEnvelopeSerializer):
    itemData = MintItem()


class BurnItem(StrictSerializer):
    position = MovingPositionLookupSerializer()
    value = TokenValueSerializer()
    authority = LookupSerializer(required=False, allow_null=True, help_text="Who signs: the position's owner (default), its delegate, or the instrument's permanent delegate (any position of the instrument).")


class BurnInput(TransactionEnvelopeSerializer):
    itemData = BurnItem()


class TransferItem(StrictSerializer):
    source = MovingPositionLookupSerializer()
    destination = MovingPositionLookupSerializer(help_text=(
        "A position; or owner + financialInstrument, whose associated position is created on the way when missing; or owner {onchainId, offPlatform: true}: "
        "that address's associated token account (created when missing, never recorded)."))
    value = TokenValueSerializer()
    authority = LookupSerializer(required=False, allow_null=True, help_text="Who signs: the source's owner (default), its delegate, or the instrument's permanent delegate.")


class TransferInput(TransactionEnvelopeSerializer):
    itemData = TransferItem()


class TradeLegSerializer(TransferItem):
    """One leg of a trade: a transfer of one instrument from one position to another."""


class TradeItem(StrictSerializer):
    legs = serializers.ListField(child=TradeLegSerializer(), min_length=2, max_length=10, help_text="Settled atomically in one transaction: every leg or none.")


class TradeInput(TransactionEnvelopeSerializer):
    itemData = TradeItem()


class MovedPositionOut(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField(allow_null=True, help_text="null for an off-platform owner's token account (not recorded).")


MintPositionOutput = mutation_output("mintedPosition", "MintPositionOutput")
BurnPositionOutput = mutation_output("burnedPosition", "BurnPositionOutput")
TransferPositionOutput = type("TransferPositionOutput", (serializers.Serializer,), {"destinationPosition": MovedPositionOut(), "svmTransaction": TransactionResultOutput(), "__module__": __name__})
TradeOutput = mutation_output("trade", "TradeOutput")


# --- Batch payouts (beyond the spec: positions/batches.py, docs/positions.md) -----------------


@extend_schema_field(TransferItem(many=True))
class TransferItemsField(serializers.ListField):
    """Up to 1,000 Transfer Financial Instrument itemData objects. Each is validated on its
    own (positions/batches.py): a bad item gets its own error in the result, the others go on.
    An object each, kept as parsed (amounts stay Decimal: a JSONField would re-encode them)."""

    child = serializers.DictField()


class TransferBatchItem(StrictSerializer):
    items = TransferItemsField(min_length=1, max_length=1000, help_text="Each shaped like Transfer Financial Instrument's itemData.")


class TransferBatchInput(TransactionEnvelopeSerializer):
    itemData = TransferBatchItem()


class BatchReferenceSerializer(StrictSerializer):
    offchainId = serializers.UUIDField()


class BatchLookupItem(StrictSerializer):
    batch = BatchReferenceSerializer()


class BatchLookupInput(EnvelopeSerializer):
    itemData = BatchLookupItem()


class BatchErrorOutput(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(allow_null=True)


class BatchItemTransactionOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True, help_text="null while held for approval (PENDING_APPROVAL).")
    offchainId = serializers.UUIDField()
    status = serializers.CharField()
    errorMessage = serializers.CharField(allow_blank=True, help_text="Why it failed on chain, or why it is held.")


class BatchItemOutput(serializers.Serializer):
    index = serializers.IntegerField(help_text="The item's position in itemData.items.")
    status = serializers.CharField(help_text="REJECTED (never sent: errors, httpStatus), RETRYING (its packed transaction failed on chain: built again alone), else its transaction's status.")
    httpStatus = serializers.IntegerField(allow_null=True, help_text="A rejected item: the status a single Transfer Financial Instrument would have answered.")
    errors = BatchErrorOutput(many=True, allow_null=True)
    destination = DestinationAccountIdentifiers(allow_null=True, help_text="The receiving position (a transfer of tokens) or account (network currency); offchainId null off platform.")
    svmTransaction = BatchItemTransactionOutput(allow_null=True, help_text="The transaction that carries the item (shared with the items packed with it).")
    firstTransaction = serializers.UUIDField(allow_null=True, help_text="The packed transaction that failed on chain, when the item was built again alone.")


class BatchOutputBody(serializers.Serializer):
    offchainId = serializers.UUIDField()
    kind = serializers.CharField()
    itemCount = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Items by status.")
    items = BatchItemOutput(many=True)


class BatchOutput(serializers.Serializer):
    batch = BatchOutputBody()


@extend_schema_field(TransferNetworkCurrencyItem(many=True))
class TransferNetworkCurrencyItemsField(serializers.ListField):
    """Up to 1,000 Transfer Network Currency itemData objects, each validated on its own."""

    child = serializers.DictField()


class TransferNetworkCurrencyBatchItem(StrictSerializer):
    items = TransferNetworkCurrencyItemsField(min_length=1, max_length=1000, help_text="Each shaped like Transfer Network Currency's itemData.")


class TransferNetworkCurrencyBatchInput(TransactionEnvelopeSerializer):
    itemData = TransferNetworkCurrencyBatchItem()
