"""Loans API shapes (spec: "Loans", "Loan response"; docs/loans.md).

The spec gives Create Loan's, Fetch Loan Details', Swap Collateral's, Repay Loan's and Close
Loan's request bodies and Close's answer; the rest follows its conventions: ``itemData``
per operation, ``svmTransactionConfig`` and ``tenancyConfig`` beside it, mutating answers
``{<name>: {onchainId, offchainId}, svmTransaction}``. Ratios and APYs are integers in basis
points everywhere (expectedApy, expectedLqt, the responses). Loan strategies are this
service's own endpoints (docs/loans.md, "Loan strategies").
"""

from __future__ import annotations

from rest_framework import serializers

from accounts.serializers import IdentifiersOut, ValueOutput, account_or_unrecorded
from ledger_project.api.envelope import (
    AddressField,
    EnvelopeSerializer,
    InstrumentLookupSerializer,
    LookupSerializer,
    OwnLookupSerializer,
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
    StrictUUIDField,
    TransactionEnvelopeSerializer,
)
from ledger_project.api.outputs import bulk_output
from ledger_project.api.query import ItemQuerySerializer
from positions.serializers import TokenValueSerializer
from programs.lending import abi
from transactions.serializers import TransactionResultOutput

from .models import DEFI_PROTOCOL, LiquidationMode, LoanStatus, StrategyStatus

_PROTOCOL = {"choices": [DEFI_PROTOCOL], "help_text": "The lending protocol: PARTNER_LENDING."}


def _protocol(**kwargs):
    return serializers.ChoiceField(**_PROTOCOL, **kwargs)


class LoanPositionLookupSerializer(StrictSerializer):
    """Spec "Position lookup" as loans use it: ``position``, or ``owner`` +
    ``financialInstrument`` (the owner's associated position; where the operation creates it
    on the way, it need not exist yet)."""

    position = LookupSerializer(required=False, allow_null=True)
    owner = LookupSerializer(required=False, allow_null=True)
    financialInstrument = InstrumentLookupSerializer(required=False, allow_null=True)


class EscrowLookupSerializer(StrictSerializer):
    """A loan, named by its escrow: ``onchainId`` (the escrow account) and/or ``offchainId``
    (the loan's)."""

    onchainId = AddressField(required=False, allow_null=True)
    offchainId = StrictUUIDField(required=False, allow_null=True)

    def validate(self, attrs):
        if not (attrs.get("onchainId") or attrs.get("offchainId")):
            raise serializers.ValidationError("A loan is named by its escrow's onchainId or its offchainId.", code="INVALID_LOOKUP")
        return attrs


class StrategyLookupSerializer(EscrowLookupSerializer):
    """A loan strategy of the organization: ``onchainId`` (the strategy account, the spec's
    loanStrategyAddress) and/or ``offchainId``."""

    def validate(self, attrs):
        if not (attrs.get("onchainId") or attrs.get("offchainId")):
            raise serializers.ValidationError("A loan strategy is named by its onchainId or its offchainId.", code="INVALID_LOOKUP")
        return attrs


class ExpectedLoanValuesSerializer(StrictSerializer):
    expectedApy = StrictIntegerField(min_value=0, max_value=abi.MAX_APY_BPS, help_text="The strategy's APY in basis points (500 = 5 %); the program refuses another (PROGRAM_ERROR ApyMismatch).")
    expectedLqt = serializers.ListField(child=StrictIntegerField(min_value=1, max_value=abi.BPS), min_length=2, max_length=2,
                                        help_text="[loan-to-value ratio, liquidation ratio] in basis points; the program refuses others (PROGRAM_ERROR RatiosMismatch).")


class PartnerLendingDetailsSerializer(StrictSerializer):
    loanStrategyAddress = AddressField(help_text="The lender's loan strategy (created beforehand: POST /api/v1/loans/strategies, or any strategy of the lending program).")
    expectedLoanValues = ExpectedLoanValuesSerializer()


class PledgeItemSerializer(StrictSerializer):
    positionLookup = LoanPositionLookupSerializer(help_text="The borrower's position the item moves from or to.")
    value = TokenValueSerializer()
    transferFrom = LoanPositionLookupSerializer(required=False, allow_null=True, help_text="Pull the value from this position (another wallet's) into positionLookup first, in the same transaction.")
    mintAsset = StrictBooleanField(required=False, default=False, help_text="Mint the value first (into transferFrom's position when given, else positionLookup's), signed by the instrument's mint authority.")


class ReleaseItemSerializer(PledgeItemSerializer):
    """Collateral released to the borrower's position (created on the way):
    transferFrom and mintAsset do not apply (400 NOT_APPLICABLE)."""


class RepayItemSerializer(PledgeItemSerializer):
    value = TokenValueSerializer(required=False, allow_null=True, help_text="What to pay; with repayAll, the most the borrower accepts to pay (default: the debt estimated an hour ahead).")
    repayAll = StrictBooleanField(required=False, default=False, help_text="Pay the whole debt of the instrument (interest, then principal), exactly as owed when the transaction executes.")


class BorrowItemSerializer(StrictSerializer):
    positionLookup = LoanPositionLookupSerializer(help_text="The borrower's position in the borrowed instrument (created on the way).")
    value = TokenValueSerializer()
    transferTo = LoanPositionLookupSerializer(required=False, allow_null=True, help_text="Where the borrowed tokens go instead (a position of the organization, created on the way).")


class CreateLoanItem(StrictSerializer):
    defiProtocol = _protocol()
    partnerLendingDetails = PartnerLendingDetailsSerializer()
    itemsToBorrow = serializers.ListField(child=BorrowItemSerializer(), min_length=1, max_length=abi.MAX_BORROWED_ITEMS)
    itemsToPledge = serializers.ListField(child=PledgeItemSerializer(), min_length=1, max_length=abi.MAX_PLEDGED_ITEMS)


class CreateLoanInput(TransactionEnvelopeSerializer):
    itemData = CreateLoanItem()


class LoanDetailsItem(StrictSerializer):
    escrow = EscrowLookupSerializer()
    computeEstimatedInterestUntil = serializers.DateTimeField(required=False, allow_null=True, help_text="estimatedInterest is the interest owed at this time (default: the chain's clock now).")


class LoanDetailsInput(EnvelopeSerializer):
    itemData = LoanDetailsItem()


class BulkLoansInput(EnvelopeSerializer):
    itemQuery = ItemQuerySerializer(required=False, allow_null=True)


class SwapCollateralItem(StrictSerializer):
    defiProtocol = _protocol()
    escrow = EscrowLookupSerializer()
    itemsToDeposit = serializers.ListField(child=PledgeItemSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGED_ITEMS)
    itemsToWithdraw = serializers.ListField(child=ReleaseItemSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGED_ITEMS)


class SwapCollateralInput(TransactionEnvelopeSerializer):
    itemData = SwapCollateralItem()


class RepayLoanItem(StrictSerializer):
    defiProtocol = _protocol()
    escrow = EscrowLookupSerializer()
    itemsToRepay = serializers.ListField(child=RepayItemSerializer(), required=False, allow_null=True, max_length=abi.MAX_BORROWED_ITEMS)
    itemsToRelease = serializers.ListField(child=ReleaseItemSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGED_ITEMS)


class RepayLoanInput(TransactionEnvelopeSerializer):
    itemData = RepayLoanItem()


class CloseLoanItem(StrictSerializer):
    defiProtocol = _protocol()
    escrow = EscrowLookupSerializer()
    borrower = LookupSerializer(required=False, allow_null=True, help_text="The loan's borrower, when it is not the fee payer (it signs).")
    transferRentRefundTo = LookupSerializer(required=False, allow_null=True, help_text="Receives the rent of the escrow and its token accounts (default: the borrower); may be off platform.")
    submitTransaction = StrictBooleanField(required=False, default=True, help_text="false: the transaction is built and signed, answered and not sent (Submit Transaction sends it).")


class CloseLoanInput(TransactionEnvelopeSerializer):
    itemData = CloseLoanItem()


class RefinanceLoanItem(StrictSerializer):
    defiProtocol = _protocol()
    escrow = EscrowLookupSerializer()
    fromLender = LookupSerializer(help_text="The loan's lender now (an account of the organization, or {onchainId, offPlatform: true}).")
    toLender = LookupSerializer(required=False, allow_null=True, help_text="The new strategy's lender; omit when it is fromLender.")
    partnerLendingDetails = PartnerLendingDetailsSerializer(help_text="The strategy that takes the loan over, and its expected terms.")


class RefinanceLoanInput(TransactionEnvelopeSerializer):
    itemData = RefinanceLoanItem()


# --- strategies -------------------------------------------------------------------------------


class DurationSerializer(StrictSerializer):
    code = serializers.ChoiceField(choices=["DAYS"])
    unit = StrictIntegerField(min_value=1, max_value=abi.MAX_DURATION_DAYS)


class TermsSerializer(StrictSerializer):
    apy = StrictIntegerField(min_value=0, max_value=abi.MAX_APY_BPS, help_text="Basis points a year, simple interest on the outstanding principal.")
    loanToValueRatio = StrictIntegerField(min_value=1, max_value=abi.BPS - 1, help_text="Basis points: debt may be at most this share of the collateral's value when lending or releasing.")
    liquidationRatio = StrictIntegerField(min_value=2, max_value=abi.BPS, help_text="Basis points: beyond it the loan may be liquidated.")
    duration = DurationSerializer()

    def validate(self, attrs):
        if attrs.get("loanToValueRatio") is not None and attrs.get("liquidationRatio") is not None and attrs["loanToValueRatio"] >= attrs["liquidationRatio"]:
            raise serializers.ValidationError({"liquidationRatio": [serializers.ErrorDetail("The liquidation ratio must be above the loan-to-value ratio.", code="RATIOS_OUT_OF_ORDER")]})
        return attrs


class TermsUpdateSerializer(TermsSerializer):
    apy = StrictIntegerField(required=False, min_value=0, max_value=abi.MAX_APY_BPS)
    loanToValueRatio = StrictIntegerField(required=False, min_value=1, max_value=abi.BPS - 1)
    liquidationRatio = StrictIntegerField(required=False, min_value=2, max_value=abi.BPS)
    duration = DurationSerializer(required=False)


class FeedLookupSerializer(StrictSerializer):
    onchainId = AddressField(help_text="A feed account of the price_feed program pricing the instrument.")


class StrategyMintSerializer(StrictSerializer):
    financialInstrument = InstrumentLookupSerializer()
    dataSource = FeedLookupSerializer(help_text="The price feed the strategy values the instrument with.")
    maxAgeSeconds = StrictIntegerField(min_value=1, max_value=abi.MAX_FEED_AGE, help_text="The oldest observation the program accepts from the feed.")


class StrategyReferencesSerializer(StrictSerializer):
    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=200)
    code = StrictCharField(required=False, allow_null=True, max_length=64)


class CreateStrategyItem(StrictSerializer):
    defiProtocol = _protocol(required=False)
    lender = OwnLookupSerializer(help_text="The lender: an account of the organization; it signs every change of the strategy and pays its token accounts' rent.")
    strategyId = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=2**63 - 1, help_text="Seeds the strategy's address with the lender's (default: random).")
    terms = TermsSerializer()
    pledgeInstruments = serializers.ListField(child=StrategyMintSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGE_MINTS)
    borrowInstruments = serializers.ListField(child=StrategyMintSerializer(), required=False, allow_null=True, max_length=abi.MAX_BORROW_MINTS)
    liquidationMode = serializers.ChoiceField(choices=LiquidationMode.choices, required=False, allow_null=True, help_text="What the keeper does with a loan beyond the liquidation ratio or overdue: FLAG (default) or LIQUIDATE.")
    offchainReferences = StrategyReferencesSerializer(required=False, allow_null=True)


class CreateStrategyInput(TransactionEnvelopeSerializer):
    itemData = CreateStrategyItem()


class UpdateStrategyItem(StrictSerializer):
    defiProtocol = _protocol(required=False)
    loanStrategy = StrategyLookupSerializer()
    terms = TermsUpdateSerializer(required=False, allow_null=True, help_text="New terms for new loans and refinancings (existing loans keep theirs).")
    addPledgeInstruments = serializers.ListField(child=StrategyMintSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGE_MINTS)
    addBorrowInstruments = serializers.ListField(child=StrategyMintSerializer(), required=False, allow_null=True, max_length=abi.MAX_BORROW_MINTS)
    removePledgeInstruments = serializers.ListField(child=InstrumentLookupSerializer(), required=False, allow_null=True, max_length=abi.MAX_PLEDGE_MINTS)
    removeBorrowInstruments = serializers.ListField(child=InstrumentLookupSerializer(), required=False, allow_null=True, max_length=abi.MAX_BORROW_MINTS)
    liquidationMode = serializers.ChoiceField(choices=LiquidationMode.choices, required=False, allow_null=True)


class UpdateStrategyInput(TransactionEnvelopeSerializer):
    itemData = UpdateStrategyItem()


class StrategyLiquidityItem(StrictSerializer):
    loanStrategy = StrategyLookupSerializer()
    action = serializers.ChoiceField(choices=["DEPOSIT", "WITHDRAW"])
    financialInstrument = InstrumentLookupSerializer()
    value = TokenValueSerializer()
    source = LoanPositionLookupSerializer(required=False, allow_null=True, help_text="DEPOSIT: the position paying in (default: the lender's).")
    destination = LoanPositionLookupSerializer(required=False, allow_null=True, help_text="WITHDRAW: the position receiving (default: the lender's, created on the way).")


class StrategyLiquidityInput(TransactionEnvelopeSerializer):
    itemData = StrategyLiquidityItem()


class StrategyDetailsItem(StrictSerializer):
    loanStrategy = StrategyLookupSerializer()


class StrategyDetailsInput(EnvelopeSerializer):
    itemData = StrategyDetailsItem()


# --- answers ---------------------------------------------------------------------------------


class ItemInstrumentOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()


class DurationOutput(serializers.Serializer):
    code = serializers.CharField()
    unit = serializers.IntegerField()


class PledgedItemOutput(serializers.Serializer):
    pledgedAmount = serializers.DecimalField(max_digits=40, decimal_places=18, coerce_to_string=False)
    accountDetails = account_or_unrecorded("LoanAccountDetails", help_text="The escrow's token account holding the collateral.")
    financialInstrument = ItemInstrumentOutput()


class BorrowedItemOutput(serializers.Serializer):
    apy = serializers.IntegerField(help_text="Basis points a year.")
    loanToValueRatio = serializers.IntegerField(help_text="Basis points.")
    liquidationRatio = serializers.IntegerField(help_text="Basis points.")
    duration = DurationOutput()
    principalDue = serializers.DecimalField(max_digits=40, decimal_places=18, coerce_to_string=False)
    principalRepaid = serializers.DecimalField(max_digits=40, decimal_places=18, coerce_to_string=False)
    interestPerSecond = serializers.DecimalField(max_digits=80, decimal_places=60, coerce_to_string=False, help_text="Displayed units a second on the outstanding principal.")
    interestOutstanding = serializers.DecimalField(max_digits=40, decimal_places=18, coerce_to_string=False, help_text="Owed as of lastInterestUpdateTime.")
    estimatedInterest = serializers.DecimalField(max_digits=40, decimal_places=18, coerce_to_string=False, help_text="Owed at computeEstimatedInterestUntil (default: now).")
    lastInterestUpdateTime = serializers.DateTimeField(allow_null=True)
    accountDetails = account_or_unrecorded("LoanBorrowedAccountDetails", allow_null=True, help_text="The position the borrowed tokens went to.")
    financialInstrument = ItemInstrumentOutput()


class MarketOnchainOutput(serializers.Serializer):
    id = serializers.CharField()
    lastTransactionId = serializers.CharField(allow_null=True)
    lastTransactionAt = serializers.DateTimeField(allow_null=True)


class MarketInstrumentOutput(serializers.Serializer):
    onchain = MarketOnchainOutput()
    offchain = serializers.JSONField(allow_null=True, help_text="The offchain part of the mint account's response.")


class MarketDataOutput(serializers.Serializer):
    financialInstrument = MarketInstrumentOutput()
    alId = serializers.CharField()
    dataSource = serializers.JSONField(help_text="{onchainId}: the strategy's price feed of the instrument.")
    price = serializers.DecimalField(max_digits=60, decimal_places=30, coerce_to_string=False, allow_null=True, help_text="Quote units per whole token (null: no reading).")
    observedAt = serializers.DateTimeField(allow_null=True)
    round = serializers.IntegerField()
    fresh = serializers.BooleanField(help_text="Within the strategy's maximum age by the chain's clock (the program refuses stale feeds).")
    maxAgeSeconds = serializers.IntegerField(allow_null=True)


class ValuationOutput(serializers.Serializer):
    collateralValue = serializers.DecimalField(max_digits=60, decimal_places=30, coerce_to_string=False, allow_null=True)
    debtValue = serializers.DecimalField(max_digits=60, decimal_places=30, coerce_to_string=False, allow_null=True)
    loanToValueRatio = serializers.DecimalField(max_digits=30, decimal_places=2, coerce_to_string=False, allow_null=True, help_text="Basis points now (null: a feed is stale or missing).")
    liquidatable = serializers.BooleanField()


class TransactionIdsOutput(serializers.Serializer):
    onchainId = serializers.CharField(allow_null=True)
    offchainId = serializers.UUIDField()


class LoanOutput(serializers.Serializer):
    """Spec "Loan response", then what the service adds (docs/loans.md)."""

    status = serializers.ChoiceField(choices=LoanStatus.choices)
    escrow = account_or_unrecorded("LoanEscrowAccount")
    borrower = account_or_unrecorded("LoanBorrowerAccount")
    lender = account_or_unrecorded("LoanLenderAccount")
    pledgedItems = PledgedItemOutput(many=True)
    borrowedItems = BorrowedItemOutput(many=True)
    marketData = MarketDataOutput(many=True)
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    defiProtocol = serializers.CharField()
    loanStrategy = IdentifiersOut()
    startTime = serializers.DateTimeField(allow_null=True)
    dueTime = serializers.DateTimeField(allow_null=True)
    closedAt = serializers.DateTimeField(allow_null=True)
    estimatedInterestUntil = serializers.DateTimeField(allow_null=True)
    valuation = ValuationOutput()
    flaggedAt = serializers.DateTimeField(allow_null=True)
    flagReason = serializers.CharField(allow_null=True)
    lastTransaction = TransactionIdsOutput(allow_null=True)


BulkLoansOutput = bulk_output("BulkLoansOutput", LoanOutput)


class StrategyMintOutput(serializers.Serializer):
    financialInstrument = serializers.JSONField(help_text="{onchainId, offchainId, alId}")
    dataSource = serializers.JSONField(help_text="{onchainId}")
    maxAgeSeconds = serializers.IntegerField()
    liquidity = account_or_unrecorded("LoanStrategyLiquidityAccount", help_text="The strategy's token account of the instrument.")
    balance = ValueOutput(allow_null=True)


class TermsOutput(serializers.Serializer):
    apy = serializers.IntegerField()
    loanToValueRatio = serializers.IntegerField()
    liquidationRatio = serializers.IntegerField()
    duration = DurationOutput()


class StrategyOutput(serializers.Serializer):
    onchainId = serializers.CharField()
    offchainId = serializers.UUIDField()
    defiProtocol = serializers.CharField()
    status = serializers.ChoiceField(choices=StrategyStatus.choices)
    strategyId = serializers.IntegerField()
    lender = account_or_unrecorded("LoanStrategyLender")
    program = serializers.JSONField()
    oracleProgram = serializers.JSONField()
    terms = TermsOutput()
    expectedLoanValues = serializers.JSONField(help_text="What Create Loan's partnerLendingDetails.expectedLoanValues must say for this strategy.")
    pledgeInstruments = StrategyMintOutput(many=True)
    borrowInstruments = StrategyMintOutput(many=True)
    liquidationMode = serializers.ChoiceField(choices=LiquidationMode.choices)
    createdAt = serializers.DateTimeField()
    creationTransaction = TransactionIdsOutput(allow_null=True)
    lastTransaction = TransactionIdsOutput(allow_null=True)


def _mutation(component: str, name: str, nullable: bool = False):
    return type(component, (serializers.Serializer,), {name: IdentifiersOut(), "svmTransaction": TransactionResultOutput(allow_null=nullable), "__module__": __name__})


CreateLoanOutput = _mutation("CreateLoanOutput", "newLoan")
SwapCollateralOutput = _mutation("SwapCollateralOutput", "updatedLoan")
RepayLoanOutput = _mutation("RepayLoanOutput", "repaidLoan")
RefinanceLoanOutput = _mutation("RefinanceLoanOutput", "refinancedLoan")
CreateStrategyOutput = _mutation("CreateLoanStrategyOutput", "newLoanStrategy")
UpdateStrategyOutput = _mutation("UpdateLoanStrategyOutput", "updatedLoanStrategy", nullable=True)
StrategyLiquidityOutput = _mutation("LoanStrategyLiquidityOutput", "loanStrategy")
