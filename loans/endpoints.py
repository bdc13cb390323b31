"""Loans' API: one declaration per operation (spec: "Loans" 1–7; docs/loans.md) and the
service's loan strategy operations (docs/loans.md, "Loan strategies": not in the spec);
tenancy/endpoints.py says what a row holds. The view sets and routes are made from
``TABLE`` (loans/urls.py)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.schema import item_query
from tenancy.endpoints import Endpoint
from transactions.responses import attach_wait, mutation_response, transaction_result
from transactions.serializers import TransactionResultOutput

from . import selectors, services
from .lookup import resolve_loan, resolve_strategy
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

TAG = ("Loans",)
STRATEGY_TAG = ("Loan strategies",)
PROGRAM_RULES = (" The lending program judges the loan's rules (terms, loan-to-value against fresh feeds, what is owed, who signs): its refusal in simulation is a "
                 "400 PROGRAM_ERROR naming the program's error and the field it is about (docs/loans.md, \"Errors\"); nothing is recorded then. One change of a loan "
                 "at a time: 409 OPERATION_IN_PROGRESS while another of its transactions is in flight.")
FEE_PAYER = " The borrower is svmTransactionConfig.feePayer (default: the loan's borrower; another account: 400 FEE_PAYER_NOT_BORROWER)."
NOT_IN_SPEC = " Not an endpoint of the spec: how this service prepares the spec's loanStrategyAddress (docs/loans.md, \"Loan strategies\")."
_L, _S = "LoanViewSet", "LoanStrategyViewSet"


def _create(door, ctx, body):
    result = services.loan_create(ctx, data=body["itemData"])
    return mutation_response(door.request, "newLoan", identifiers(result.loan), result.transaction, status=status.HTTP_201_CREATED)


def _details(door, ctx, body):
    data = body["itemData"]
    return Response(selectors.loan_details(tenant=door.tenant, cluster=door.cluster, lookup=data["escrow"], until=data.get("computeEstimatedInterestUntil")))


def _bulk(door, ctx, body):
    items, count = selectors.loan_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=body.get("itemQuery"))
    return Response({"count": count, "items": items})


def _change(service, answer: str):
    """A change of an existing loan: the escrow resolved, ``service`` called, answered as ``answer``."""
    def run(door, ctx, body):
        data = body["itemData"]
        result = service(ctx, loan=resolve_loan(door.tenant, door.cluster, data["escrow"], field="itemData.escrow"), data=data)
        return mutation_response(door.request, answer, identifiers(result.loan), result.transaction)
    return run


def _close(door, ctx, body):
    data = body["itemData"]
    result = services.loan_close(ctx, loan=resolve_loan(door.tenant, door.cluster, data["escrow"], field="itemData.escrow"), data=data)
    response = Response(transaction_result(result.transaction))
    attach_wait(response, door.request, result.transaction, transaction_result)
    return response


def _strategy(door, data: dict):
    return resolve_strategy(door.tenant, door.cluster, data["loanStrategy"], field="itemData.loanStrategy")


def _strategy_create(door, ctx, body):
    result = services.strategy_create(ctx, data=body["itemData"])
    return mutation_response(door.request, "newLoanStrategy", strategy_identifiers(result.strategy), result.transaction, status=status.HTTP_201_CREATED)


def _strategy_change(service, answer: str):
    def run(door, ctx, body):
        data = body["itemData"]
        result = service(ctx, strategy=_strategy(door, data), data=data)
        return mutation_response(door.request, answer, strategy_identifiers(result.strategy), result.transaction)
    return run


def _strategy_details(door, ctx, body):
    return Response(selectors.strategy_details(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"]["loanStrategy"]))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_L, "create", "loans", "post", "loan-create", "createLoan", "Create Loan",
             "Creates a loan with a new onchain escrow: pledged items go into the escrow and borrowed items move from the lender's strategy to the borrower "
             "(or transferTo), in one transaction. The borrower is svmTransactionConfig.feePayer (required) and the owner of every positionLookup (400 OWNER_MISMATCH); "
             "it pays the escrow's rent. itemsToPledge may pull from another wallet first (transferFrom) and/or mint first (mintAsset); for a frozen-by-default "
             "instrument the escrow's token account is unfrozen in the same transaction and transferFrom / mintAsset do not apply. Borrowed transfers from a strategy "
             "the organization records are debits of the lender's position (debit limits: held PENDING_APPROVAL over a limit)." + PROGRAM_RULES,
             CreateLoanInput, _create, {201: CreateLoanOutput}, wait=True, tags=TAG),
    Endpoint(_L, "details", "loans/single", "post", "loan-details", "fetchLoanDetails", "Fetch Loan Details",
             "Creates no transaction. The loan response: the records as the last confirmed change left them, valued with the feeds as the chain holds them now; "
             "estimatedInterest is the interest owed at computeEstimatedInterestUntil (default: the chain's clock now).",
             LoanDetailsInput, _details, {200: LoanOutput}, mutation=False, tags=TAG),
    Endpoint(_L, "bulk", "loans/bulk", "post", "loan-bulk", item_query("fetchLoans", selectors.LOAN_QUERY), "Fetch Loans",
             "Creates no transaction. The organization's loans on the cluster, default sort status ASC (then newest first); item fieldNames hold when one of "
             "the loan's items matches and do not sort.",
             BulkLoansInput, _bulk, {200: BulkLoansOutput}, mutation=False, tags=TAG),
    Endpoint(_L, "swap_collateral", "loans/swap-collateral", "patch", "loan-swap-collateral", "swapCollateral", "Swap Collateral",
             "Deposits itemsToDeposit into the escrow, then releases itemsToWithdraw to the borrower's positions (created on the way); the loan-to-value ratio "
             "must hold after each withdrawal (PROGRAM_ERROR LtvExceeded)." + FEE_PAYER + PROGRAM_RULES,
             SwapCollateralInput, _change(services.loan_swap_collateral, "updatedLoan"), {200: SwapCollateralOutput}, wait=True, tags=TAG),
    Endpoint(_L, "repay", "loans/repay", "patch", "loan-repay", "repayLoan", "Repay Loan",
             "Pays debt from the borrower's positions (interest first; repayAll pays the whole debt of the instrument), then releases itemsToRelease. Repaid "
             "transfers are debits of the borrower's positions (debit keys: 403 DEBIT_NOT_ALLOWED; over a limit: held PENDING_APPROVAL). The loan is REPAID once "
             "it owes nothing." + FEE_PAYER + PROGRAM_RULES,
             RepayLoanInput, _change(services.loan_repay, "repaidLoan"), {200: RepayLoanOutput}, wait=True, tags=TAG),
    Endpoint(_L, "close", "loans/close", "patch", "loan-close", "closeLoan", "Close Loan",
             "Closes a loan that owes nothing (PROGRAM_ERROR DebtOutstanding otherwise): remaining collateral back to the borrower, the escrow and its token "
             "accounts closed, their rent to transferRentRefundTo (default: the borrower). Answers the transaction result; submitTransaction false: built and "
             "signed, not sent (Submit Transaction sends it). borrower names the loan's borrower when another account is the fee payer." + PROGRAM_RULES,
             CloseLoanInput, _close, {200: TransactionResultOutput}, wait=True, tags=TAG),
    Endpoint(_L, "refinance", "loans/refinance", "patch", "loan-refinance", "refinanceLoan", "Refinance Loan",
             "Moves the loan from fromLender's strategy to the strategy at partnerLendingDetails.loanStrategyAddress (toLender's; omit toLender when it is "
             "fromLender): the new strategy pays off everything owed and the loan continues on its terms, which must be the expected ones, from now." + FEE_PAYER
             + PROGRAM_RULES,
             RefinanceLoanInput, _change(services.loan_refinance, "refinancedLoan"), {200: RefinanceLoanOutput}, wait=True, tags=TAG),
    # Not in the spec (docs/loans.md, "Loan strategies"): how a loanStrategyAddress is prepared.
    Endpoint(_S, "create", "loans/strategies", "post", "loan-strategy", "createLoanStrategy", "Create Loan Strategy",
             "Creates a lender's loan strategy on chain: its terms, the instruments it accepts as pledges and lends, each with its price feed and maximum feed "
             "age; signed by the lender. Its rent from svmTransactionConfig.feePayer, its token accounts' from the lender. PENDING until the transaction "
             "confirms; 409 STRATEGY_EXISTS for the lender's strategyId taken." + NOT_IN_SPEC,
             CreateStrategyInput, _strategy_create, {201: CreateStrategyOutput}, wait=True, tags=STRATEGY_TAG),
    Endpoint(_S, "update", "loans/strategies", "patch", "loan-strategy", "updateLoanStrategy", "Update Loan Strategy",
             "New terms (for new loans and refinancings), instruments added (or their feed changed) or removed, signed by the lender; liquidationMode alone "
             "changes no chain state (svmTransaction null)." + NOT_IN_SPEC,
             UpdateStrategyInput, _strategy_change(services.strategy_update, "updatedLoanStrategy"), {200: UpdateStrategyOutput}, wait=True, tags=STRATEGY_TAG),
    Endpoint(_S, "details", "loans/strategies/single", "post", "loan-strategy-details", "fetchLoanStrategyDetails", "Fetch Loan Strategy Details",
             "Creates no transaction. One of the organization's loan strategies as of its last confirmed change, with what Create Loan's "
             "expectedLoanValues must say." + NOT_IN_SPEC,
             StrategyDetailsInput, _strategy_details, {200: StrategyOutput}, mutation=False, tags=STRATEGY_TAG),
    Endpoint(_S, "liquidity", "loans/strategies/liquidity", "patch", "loan-strategy-liquidity", "loanStrategyLiquidity", "Loan Strategy Liquidity",
             "DEPOSIT moves the lender's tokens into the strategy's token account of a listed instrument; WITHDRAW moves tokens out of the strategy's token "
             "account of an instrument (liquidity, repayments, liquidated collateral) to the lender's position or destination. Signed by the lender; debit "
             "limits apply." + NOT_IN_SPEC,
             StrategyLiquidityInput, _strategy_change(services.strategy_liquidity, "loanStrategy"), {200: StrategyLiquidityOutput}, wait=True, tags=STRATEGY_TAG),
)
