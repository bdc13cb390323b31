"""Create Loan (spec, Loans 1; docs/loans.md, "Create Loan").

One transaction: the steps before each pledge (transferFrom, mintAsset; or, for a
frozen-by-default instrument, the escrow's token account created and unfrozen), CreateLoan
on the strategy's terms — which must be the expected ones — DepositCollateral per pledged
item into the new escrow and Borrow per borrowed item from the strategy to the borrower
(or transferTo), each Borrow checking the loan-to-value ratio against fresh feeds. The
borrower is the fee payer and signs; it pays the escrow's rent and its token accounts'.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from solders.pubkey import Pubkey

from accounts.lookup import resolve_account
from accounts.models import Account, AccountStatus, AccountType
from accounts.services import account_save
from accounts.signers import ensure_usable
from instruments.models import PositionState
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from programs.lending import abi, client
from chain.rpc import rpc_for
from transactions.models import Transaction

from .. import onchain, operations
from ..models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStatus, LoanStrategy, StrategyStatus
from .common import (
    FEE_PAYER,
    Debit,
    Holding,
    Plan,
    amount_of,
    borrower_config,
    enough,
    build,
    debits_allowed,
    escrow_holding,
    fund_first,
    holding,
    no_funding_steps,
    protocol,
    record,
    thaw_escrow_account,
)

_MAX_NONCE = 2**63 - 1


@dataclass
class LoanResult:
    loan: Loan
    transaction: Transaction | None


def expected_values(details: dict) -> dict:
    """partnerLendingDetails.expectedLoanValues → the program's expected terms: expectedApy
    and expectedLqt [loan-to-value, liquidation], all in basis points."""
    expected = details["expectedLoanValues"]
    return {"expected_apy": expected["expectedApy"], "expected_lqt": list(expected["expectedLqt"])}


def recorded_strategy(tenant, cluster: str, address: str) -> LoanStrategy | None:
    """The organization's own record of a strategy (its liquidity positions, its lender)."""
    return LoanStrategy.objects.for_tenant(tenant).filter(cluster=cluster, address=address, status=StrategyStatus.ACTIVE).select_related("lender").first()


def pool_of(strategy: LoanStrategy | None, mint: str):
    """The recorded strategy's liquidity position of ``mint`` (debit limits judge what it lends)."""
    if strategy is None:
        return None
    entry = strategy.mints.filter(mint_address=mint, position__isnull=False).select_related("position", "position__instrument").first()
    return entry.position if entry is not None else None


def lender_debit(strategy: LoanStrategy | None, mint: str, amount: int, destination, field: str) -> Debit | None:
    """Tokens leaving a strategy the organization records are a debit of its lender's
    liquidity position (positions/limits.py: the position's, else the lender's, token limits
    and debit keys). A strategy of another organization consented by being published."""
    pool = pool_of(strategy, mint)
    return Debit(strategy.lender, pool, amount, destination, field) if pool is not None else None


def prepare_pledge(plan: Plan, *, escrow: Pubkey, item: dict, field: str) -> tuple[Holding, int]:
    """One item to pledge: its source (the borrower's position) and amount, with what must
    happen first in the transaction — mintAsset / transferFrom into the source, or for a
    frozen-by-default instrument the escrow's token account created and unfrozen."""
    funded = bool(item.get("transferFrom") or item.get("mintAsset"))
    source = holding(plan, item["positionLookup"], f"{field}.positionLookup", owner=plan.borrower, create=funded)
    instrument = source.instrument
    amount = amount_of(item["value"], instrument, f"{field}.value")
    if instrument.default_position_state == PositionState.FROZEN:
        no_funding_steps(item, field, "the instrument's positions start frozen (prefund the position with the position movement endpoints)")
        thaw_escrow_account(plan, escrow, instrument, field)
    elif funded:
        fund_first(plan, source, item, amount, field)
    if not funded:
        enough(source, amount, f"{field}.value")
    return source, amount


def deposit(plan: Plan, *, program: Pubkey, escrow: Pubkey, escrow_account: Account, strategy: Pubkey, source: Holding, amount: int, existing=None) -> Holding:
    """DepositCollateral of ``amount`` from ``source`` into the escrow's token account (its
    position drafted when the instruction creates it)."""
    instrument = source.instrument
    target = escrow_holding(plan, escrow_account, instrument, existing)
    plan.instructions.append(client.deposit_collateral(program, escrow=escrow, strategy=strategy, borrower=plan.borrower_key, source=Pubkey.from_string(source.address),
                                                       mint=onchain.token_mint(instrument), amount=amount))
    return target


def loan_create(ctx: OperationContext, *, data: dict) -> LoanResult:
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    p = "itemData"
    if not (ctx.svm_config or {}).get("feePayer"):
        raise LedgerError("Name the borrower as svmTransactionConfig.feePayer (the fee payer is the loan's borrower).", field=FEE_PAYER, code="BORROWER_REQUIRED")
    borrower = resolve_account(tenant, cluster, ctx.svm_config["feePayer"], field=FEE_PAYER, writable=True)
    ensure_usable(borrower, field=FEE_PAYER)
    details = data["partnerLendingDetails"]
    strategy_field = f"{p}.partnerLendingDetails.loanStrategyAddress"
    strategy_state = onchain.read_strategy(cluster, details["loanStrategyAddress"], field=strategy_field)
    strategy_key = Pubkey.from_string(details["loanStrategyAddress"])
    expected = expected_values(details)
    program = onchain.program_id(cluster)
    nonce = secrets.randbelow(_MAX_NONCE)
    escrow = client.escrow_address(program, Pubkey.from_string(borrower.address), nonce)[0]
    escrow_account = Account(tenant=tenant, cluster=cluster, address=str(escrow), managed=False, type=AccountType.LOAN_ESCROW, status=AccountStatus.PENDING,
                             name=f"Loan escrow of {borrower.name or borrower.address}"[:200])
    plan = Plan(ctx, borrower_config(tenant, cluster, ctx.svm_config, borrower), borrower)
    mine = recorded_strategy(tenant, cluster, details["loanStrategyAddress"])

    # What must happen before the pledges, then CreateLoan, then the pledges and the borrows.
    pledges = [prepare_pledge(plan, escrow=escrow, item=item, field=f"{p}.itemsToPledge[{i}]") for i, item in enumerate(data["itemsToPledge"])]
    plan.instructions.append(client.create_loan(program, borrower=plan.borrower_key, nonce=nonce, strategy=strategy_key, **expected))
    plan.rent += rpc_for(cluster).minimum_balance_for_rent_exemption(abi.ESCROW_SIZE)
    pledged: list[str] = []
    intent_pledged: dict[str, list] = {}
    for source, amount in pledges:
        target = deposit(plan, program=program, escrow=escrow, escrow_account=escrow_account, strategy=strategy_key, source=source, amount=amount)
        mint = source.instrument.address
        if mint not in pledged:
            pledged.append(mint)
            intent_pledged[mint] = [source.instrument, target, 0]
        intent_pledged[mint][2] += amount

    borrowed: list[str] = []
    intent_borrowed: dict[str, list] = {}
    for i, item in enumerate(data["itemsToBorrow"]):
        field = f"{p}.itemsToBorrow[{i}]"
        own = holding(plan, item["positionLookup"], f"{field}.positionLookup", owner=borrower, create=True, role="receive")
        instrument = own.instrument
        destination = own if not item.get("transferTo") else holding(plan, item["transferTo"], f"{field}.transferTo", owner=None, create=True, instrument=instrument, role="receive")
        amount = amount_of(item["value"], instrument, f"{field}.value")
        entry = onchain.strategy_mint(strategy_state, abi.ROLE_BORROW, instrument.address)
        if entry is None:
            raise LedgerError("The loan strategy does not lend this financial instrument.", field=f"{field}.positionLookup", code="MINT_NOT_BORROWABLE")
        if instrument.address not in borrowed:
            borrowed.append(instrument.address)
            intent_borrowed[instrument.address] = [instrument, destination, 0]
        intent_borrowed[instrument.address][2] += amount
        feeds = onchain.feeds(strategy_state, pledged, borrowed, field=field)
        plan.instructions.append(client.borrow(program, escrow=escrow, strategy=strategy_key, borrower=plan.borrower_key, mint=onchain.token_mint(instrument),
                                               destination=Pubkey.from_string(destination.address), amount=amount, feeds=feeds))
        plan.for_item(field)
        debit = lender_debit(mine, instrument.address, amount, destination.position or borrower, field)
        if debit is not None:
            plan.debits.append(debit)
    debits_allowed(plan)
    prepared, funding = build(plan, operations.CREATE)

    with write_phase(on_abort=prepared.release):
        account_save(escrow_account)  # a new row: the escrow's positions are owned by it
        lender = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=str(strategy_state.lender)).first()

        def new_loan() -> Loan:
            return Loan.objects.for_tenant(tenant).create(
                tenant=tenant, cluster=cluster, offchain_id=escrow_account.offchain_id, escrow_address=str(escrow), program_address=str(program), nonce=nonce,
                escrow_account=escrow_account, borrower=borrower, borrower_address=borrower.address, strategy_address=details["loanStrategyAddress"], strategy=mine,
                lender_address=str(strategy_state.lender), lender=lender, status=LoanStatus.PENDING, apy_bps=strategy_state.terms.apy_bps,
                ltv_bps=strategy_state.terms.ltv_bps, liquidation_bps=strategy_state.terms.liquidation_bps,
                duration_code=onchain.DURATION_CODES.get(strategy_state.terms.duration_code, "DAYS"), duration_unit=strategy_state.terms.duration_unit,
                rent_payer_address=borrower.address,
            )

        loan, tx = record(plan, prepared, funding, lock=new_loan, key="loan", strategies=[details["loanStrategyAddress"]],
                          borrowedTo={mint: str(h.position.offchain_id) for mint, (_, h, _) in intent_borrowed.items() if h.position is not None})
        loan.creation_transaction = tx
        loan.save(update_fields=["creation_transaction", "updated_at"])
        Account.objects.for_tenant(tenant).filter(pk=escrow_account.pk).update(creation_transaction=tx, last_transaction=tx)
        _intent(loan, strategy_state, intent_pledged, intent_borrowed)
    return LoanResult(loan, tx)


def _intent(loan: Loan, strategy_state, pledged: dict, borrowed: dict) -> None:
    """The items as the request asked, until the confirmation copies the chain's."""
    from positions.values import display

    def feed(role: int, mint: str) -> dict:
        entry = onchain.strategy_mint(strategy_state, role, mint)
        return {"feed_address": str(entry.feed), "max_age_seconds": int(entry.max_age)} if entry is not None else {}

    LoanPledgedItem.objects.bulk_create([
        LoanPledgedItem(loan=loan, index=i, mint_address=mint, instrument=instrument, token_account_address=target.address, position=target.position,
                        amount=amount, pledged_amount=display(amount, instrument), **feed(abi.ROLE_PLEDGE, mint))
        for i, (mint, (instrument, target, amount)) in enumerate(pledged.items())
    ])
    LoanBorrowedItem.objects.bulk_create([
        LoanBorrowedItem(loan=loan, index=i, mint_address=mint, instrument=instrument, position=destination.position, principal=amount,
                         due_amount=display(amount, instrument), **feed(abi.ROLE_BORROW, mint))
        for i, (mint, (instrument, destination, amount)) in enumerate(borrowed.items())
    ])
