"""Loan endpoints (spec: "Loans" 1–7; docs/loans.md) and the service's loan strategy
endpoints (docs/loans.md, "Loan strategies": not in the spec)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from tenancy.idempotency import idempotent
from ledger_project.api.schema import api_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from transactions.responses import attach_wait, mutation_response, transaction_result

from . import selectors, services
from .lookup import resolve_loan, resolve_strategy
from .models import Loan, LoanStrategy
from .render import identifiers, strategy_identifiers
from .serializers import (
    BulkLoansInput,
    BulkLoansOutput,
    CloseLoanInput,
    CreateLoanInput,
    CreateLoanOutput,
    CreateStrategyInput,
    CreateStrategyOutput,
    LoanDetailsInput,
    LoanOutput,
    RefinanceLoanInput,
    RefinanceLoanOutput,
    RepayLoanInput,
    RepayLoanOutput,
    StrategyDetailsInput,
    StrategyLiquidityInput,
    StrategyLiquidityOutput,
    StrategyOutput,
    SwapCollateralInput,
    SwapCollateralOutput,
    UpdateStrategyInput,
    UpdateStrategyOutput,
)
from transactions.serializers import TransactionResultOutput

TAG = ["Loans"]
PROGRAM_RULES = (" The lending program judges the loan's rules (terms, loan-to-value against fresh feeds, what is owed, who signs): its refusal in simulation is a "
                 "400 PROGRAM_ERROR naming the program's error and the field it is about (docs/loans.md, \"Errors\"); nothing is recorded then. One change of a loan "
                 "at a time: 409 OPERATION_IN_PROGRESS while another of its transactions is in flight.")
FEE_PAYER = " The borrower is svmTransactionConfig.feePayer (default: the loan's borrower; another account: 400 FEE_PAYER_NOT_BORROWER)."


class LoanViewSet(TenantScopedViewSet):
    model = Loan

    def _loan(self, data: dict):
        return resolve_loan(self.tenant, self.cluster, data["escrow"], field="itemData.escrow")

    def _change(self, request, serializer, service):
        """A change of an existing loan: validate, resolve the escrow, call ``service``."""
        ctx, body = self.operation(serializer)
        data = body["itemData"]
        return service(ctx, loan=self._loan(data), data=data)

    @extend_schema(
        operation_id="createLoan", summary="Create Loan",
        description=(
            "Creates a loan with a new onchain escrow: pledged items go into the escrow and borrowed items move from the lender's strategy to the borrower "
            "(or transferTo), in one transaction. The borrower is svmTransactionConfig.feePayer (required) and the owner of every positionLookup (400 OWNER_MISMATCH); "
            "it pays the escrow's rent. itemsToPledge may pull from another wallet first (transferFrom) and/or mint first (mintAsset); for a frozen-by-default "
            "instrument the escrow's token account is unfrozen in the same transaction and transferFrom / mintAsset do not apply. Borrowed transfers from a strategy "
            "the organization records are debits of the lender's position (debit limits: held PENDING_APPROVAL over a limit)." + PROGRAM_RULES
        ),
        request=CreateLoanInput, responses=api_responses({201: CreateLoanOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateLoanInput)
        result = services.loan_create(ctx, data=body["itemData"])
        return mutation_response(request, "newLoan", identifiers(result.loan), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="fetchLoanDetails", summary="Fetch Loan Details",
        description="Creates no transaction. The loan response: the records as the last confirmed change left them, valued with the feeds as the chain holds them now; "
                    "estimatedInterest is the interest owed at computeEstimatedInterestUntil (default: the chain's clock now).",
        request=LoanDetailsInput, responses=api_responses({200: LoanOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def details(self, request):
        data = validated(LoanDetailsInput, request)["itemData"]
        return Response(selectors.loan_details(tenant=self.tenant, cluster=self.cluster, lookup=data["escrow"], until=data.get("computeEstimatedInterestUntil")))

    @extend_schema(
        operation_id=item_query("fetchLoans", selectors.LOAN_QUERY), summary="Fetch Loans",
        description="Creates no transaction. The organization's loans on the cluster, default sort status ASC (then newest first); item fieldNames hold when one of "
                    "the loan's items matches and do not sort.",
        request=BulkLoansInput, responses=api_responses({200: BulkLoansOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def bulk(self, request):
        body = validated(BulkLoansInput, request)
        items, count = selectors.loan_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"))
        return Response({"count": count, "items": items})

    @extend_schema(
        operation_id="swapCollateral", summary="Swap Collateral",
        description="Deposits itemsToDeposit into the escrow, then releases itemsToWithdraw to the borrower's positions (created on the way); the loan-to-value ratio "
                    "must hold after each withdrawal (PROGRAM_ERROR LtvExceeded)." + FEE_PAYER + PROGRAM_RULES,
        request=SwapCollateralInput, responses=api_responses({200: SwapCollateralOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def swap_collateral(self, request):
        result = self._change(request, SwapCollateralInput, services.loan_swap_collateral)
        return mutation_response(request, "updatedLoan", identifiers(result.loan), result.transaction)

    @extend_schema(
        operation_id="repayLoan", summary="Repay Loan",
        description="Pays debt from the borrower's positions (interest first; repayAll pays the whole debt of the instrument), then releases itemsToRelease. Repaid "
                    "transfers are debits of the borrower's positions (debit keys: 403 DEBIT_NOT_ALLOWED; over a limit: held PENDING_APPROVAL). The loan is REPAID once "
                    "it owes nothing." + FEE_PAYER + PROGRAM_RULES,
        request=RepayLoanInput, responses=api_responses({200: RepayLoanOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def repay(self, request):
        result = self._change(request, RepayLoanInput, services.loan_repay)
        return mutation_response(request, "repaidLoan", identifiers(result.loan), result.transaction)

    @extend_schema(
        operation_id="closeLoan", summary="Close Loan",
        description="Closes a loan that owes nothing (PROGRAM_ERROR DebtOutstanding otherwise): remaining collateral back to the borrower, the escrow and its token "
                    "accounts closed, their rent to transferRentRefundTo (default: the borrower). Answers the transaction result; submitTransaction false: built and "
                    "signed, not sent (Submit Transaction sends it). borrower names the loan's borrower when another account is the fee payer." + PROGRAM_RULES,
        request=CloseLoanInput, responses=api_responses({200: TransactionResultOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def close(self, request):
        result = self._change(request, CloseLoanInput, services.loan_close)
        response = Response(transaction_result(result.transaction))
        attach_wait(response, request, result.transaction, transaction_result)
        return response

    @extend_schema(
        operation_id="refinanceLoan", summary="Refinance Loan",
        description="Moves the loan from fromLender's strategy to the strategy at partnerLendingDetails.loanStrategyAddress (toLender's; omit toLender when it is "
                    "fromLender): the new strategy pays off everything owed and the loan continues on its terms, which must be the expected ones, from now." + FEE_PAYER
                    + PROGRAM_RULES,
        request=RefinanceLoanInput, responses=api_responses({200: RefinanceLoanOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def refinance(self, request):
        result = self._change(request, RefinanceLoanInput, services.loan_refinance)
        return mutation_response(request, "refinancedLoan", identifiers(result.loan), result.transaction)


STRATEGY_TAG = ["Loan strategies"]
NOT_IN_SPEC = " Not an endpoint of the spec: how this service prepares the spec's loanStrategyAddress (docs/loans.md, \"Loan strategies\")."


class LoanStrategyViewSet(TenantScopedViewSet):
    model = LoanStrategy

    def _strategy(self, data: dict):
        return resolve_strategy(self.tenant, self.cluster, data["loanStrategy"], field="itemData.loanStrategy")

    @extend_schema(
        operation_id="createLoanStrategy", summary="Create Loan Strategy",
        description="Creates a lender's loan strategy on chain: its terms, the instruments it accepts as pledges and lends, each with its price feed and maximum feed "
                    "age; signed by the lender. Its rent from svmTransactionConfig.feePayer, its token accounts' from the lender. PENDING until the transaction "
                    "confirms; 409 STRATEGY_EXISTS for the lender's strategyId taken." + NOT_IN_SPEC,
        request=CreateStrategyInput, responses=api_responses({201: CreateStrategyOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=STRATEGY_TAG,
    )
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateStrategyInput)
        result = services.strategy_create(ctx, data=body["itemData"])
        return mutation_response(request, "newLoanStrategy", strategy_identifiers(result.strategy), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="updateLoanStrategy", summary="Update Loan Strategy",
        description="New terms (for new loans and refinancings), instruments added (or their feed changed) or removed, signed by the lender; liquidationMode alone "
                    "changes no chain state (svmTransaction null)." + NOT_IN_SPEC,
        request=UpdateStrategyInput, responses=api_responses({200: UpdateStrategyOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=STRATEGY_TAG,
    )
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdateStrategyInput)
        data = body["itemData"]
        result = services.strategy_update(ctx, strategy=self._strategy(data), data=data)
        return mutation_response(request, "updatedLoanStrategy", strategy_identifiers(result.strategy), result.transaction)

    @extend_schema(
        operation_id="loanStrategyLiquidity", summary="Loan Strategy Liquidity",
        description="DEPOSIT moves the lender's tokens into the strategy's token account of a listed instrument; WITHDRAW moves tokens out of the strategy's token "
                    "account of an instrument (liquidity, repayments, liquidated collateral) to the lender's position or destination. Signed by the lender; debit "
                    "limits apply." + NOT_IN_SPEC,
        request=StrategyLiquidityInput, responses=api_responses({200: StrategyLiquidityOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=STRATEGY_TAG,
    )
    @idempotent
    def liquidity(self, request):
        ctx, body = self.operation(StrategyLiquidityInput)
        data = body["itemData"]
        result = services.strategy_liquidity(ctx, strategy=self._strategy(data), data=data)
        return mutation_response(request, "loanStrategy", strategy_identifiers(result.strategy), result.transaction)

    @extend_schema(
        operation_id="fetchLoanStrategyDetails", summary="Fetch Loan Strategy Details",
        description="Creates no transaction. One of the organization's loan strategies as of its last confirmed change, with what Create Loan's "
                    "expectedLoanValues must say." + NOT_IN_SPEC,
        request=StrategyDetailsInput, responses=api_responses({200: StrategyOutput}), parameters=operation_parameters(), tags=STRATEGY_TAG,
    )
    def details(self, request):
        data = validated(StrategyDetailsInput, request)["itemData"]
        return Response(selectors.strategy_details(tenant=self.tenant, cluster=self.cluster, lookup=data["loanStrategy"]))
