"""Changes to an open loan: Swap Collateral, Repay Loan, Refinance Loan and Close Loan
(spec, Loans 4–7; docs/loans.md).

Each reads the escrow as the chain holds it now (its items, in the program's order: the
feeds an LTV-checked instruction names follow it), builds the instructions, and records the
transaction under the loan's row lock with its in-flight marker set. The program judges:
the loan-to-value ratio after a withdrawal, what is owed, who signs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field as dc_field

from solders.pubkey import Pubkey

from accounts.lookup import OffPlatform, resolve_account
from accounts.signers import ensure_usable
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from positions import instructions as ix
from programs.lending import abi, client

from .. import onchain, operations
from ..locks import lock_loan
from ..models import Loan, LoanStatus
from .common import Debit, Holding, Plan, amount_of, borrower_config, build, debits_allowed, enough, fund_first, holding, no_funding_steps, open_loan, protocol, read_escrow, record
from .create import LoanResult, deposit, expected_values, lender_debit, pool_of, prepare_pledge, recorded_strategy

#: repayAll without a value: the most the borrower accepts to pay is the debt estimated this
#: long ahead (the program takes exactly what is owed when the transaction executes).
REPAY_ALL_MARGIN_SECONDS = 3600


@dataclass
class Escrow:
    """The loan as the chain holds it, and its items as they will be after each
    instruction appended so far (the order the program keeps: feeds follow it)."""

    loan: Loan
    state: object
    strategy: Pubkey
    strategy_state: object
    pledged: list[str] = dc_field(default_factory=list)
    held: dict[str, tuple[int, str]] = dc_field(default_factory=dict)  # mint → (amount, escrow token account)
    borrowed: list[str] = dc_field(default_factory=list)

    @property
    def program(self) -> Pubkey:
        return Pubkey.from_string(self.loan.program_address)

    @property
    def escrow(self) -> Pubkey:
        return Pubkey.from_string(self.loan.escrow_address)


def _escrow(cluster: str, loan: Loan) -> Escrow:
    state = read_escrow(cluster, loan)
    strategy = Pubkey.from_string(str(state.strategy))
    strategy_state = onchain.read_strategy(cluster, str(strategy), field="itemData.escrow")
    return Escrow(loan, state, strategy, strategy_state, pledged=[str(i.mint) for i in state.pledged],
                  held={str(i.mint): (int(i.amount), str(i.token_account)) for i in state.pledged}, borrowed=[str(i.mint) for i in state.borrowed])


def _plan(ctx: OperationContext, loan: Loan) -> Plan:
    return Plan(ctx, borrower_config(ctx.tenant, ctx.cluster, ctx.svm_config, loan.borrower), loan.borrower)


def _deposits(plan: Plan, e: Escrow, items: list[dict], prefix: str) -> None:
    existing = {i.token_account_address: i.position for i in e.loan.pledged_items.select_related("position")}
    for i, item in enumerate(items or []):
        source, amount = prepare_pledge(plan, escrow=e.escrow, item=item, field=f"{prefix}[{i}]")
        target = deposit(plan, program=e.program, escrow=e.escrow, escrow_account=e.loan.escrow_account, strategy=e.strategy, source=source, amount=amount,
                         existing=existing.get(str(ix.associated_address(e.escrow, source.instrument))))
        mint = source.instrument.address
        if mint not in e.pledged:
            e.pledged.append(mint)
        e.held[mint] = (e.held.get(mint, (0, target.address))[0] + amount, target.address)


def _releases(plan: Plan, e: Escrow, items: list[dict], prefix: str) -> None:
    """WithdrawCollateral per item to the borrower's position (created on the way): an item
    withdrawn in full leaves the escrow (its token account closed), and the feeds of each
    instruction follow the items as they are after it."""
    for i, item in enumerate(items or []):
        field = f"{prefix}[{i}]"
        no_funding_steps(item, field, "it names where released collateral goes")
        destination = holding(plan, item["positionLookup"], f"{field}.positionLookup", owner=plan.borrower, create=True, role="receive")
        instrument = destination.instrument
        mint = instrument.address
        if mint not in e.held:
            raise LedgerError("The loan holds no collateral of this financial instrument.", field=f"{field}.positionLookup", code="ITEM_NOT_FOUND")
        amount = amount_of(item["value"], instrument, f"{field}.value")
        held, token_account = e.held[mint]
        if amount <= held:
            e.held[mint] = (held - amount, token_account)
            if amount == held:
                e.pledged.remove(mint)
                del e.held[mint]
        feeds = onchain.feeds(e.strategy_state, e.pledged, e.borrowed, field=field)
        plan.instructions.append(client.withdraw_collateral(e.program, escrow=e.escrow, strategy=e.strategy, borrower=plan.borrower_key, mint=onchain.token_mint(instrument),
                                                            destination=Pubkey.from_string(destination.address), amount=amount, feeds=feeds))
        plan.for_item(field)


def _write(plan: Plan, prepared, funding, loan: Loan, *, statuses, submit: bool = True, **effects):
    with write_phase(on_abort=prepared.release):
        locked, tx = record(plan, prepared, funding, lock=lambda: open_loan(lock_loan(loan.pk, tenant=plan.tenant), statuses=statuses), key="loan",
                            submit=submit, **effects)
    return LoanResult(locked, tx)


def loan_swap_collateral(ctx: OperationContext, *, loan: Loan, data: dict) -> LoanResult:
    """Swap Collateral: DepositCollateral per itemsToDeposit, then WithdrawCollateral per
    itemsToWithdraw (the loan-to-value ratio must hold after each withdrawal)."""
    cluster = ctx.cluster
    protocol(data)
    statuses = (LoanStatus.ACTIVE,)
    open_loan(loan, statuses=statuses)
    if not (data.get("itemsToDeposit") or data.get("itemsToWithdraw")):
        raise LedgerError("Give itemsToDeposit and/or itemsToWithdraw.", field="itemData.itemsToDeposit", code="ITEMS_REQUIRED")
    e = _escrow(cluster, loan)
    plan = _plan(ctx, loan)
    _deposits(plan, e, data.get("itemsToDeposit"), "itemData.itemsToDeposit")
    _releases(plan, e, data.get("itemsToWithdraw"), "itemData.itemsToWithdraw")
    debits_allowed(plan)
    prepared, funding = build(plan, operations.SWAP_COLLATERAL)
    return _write(plan, prepared, funding, loan, statuses=statuses, strategies=[str(e.strategy)])


def _debt(e: Escrow, mint: str, at: int) -> int:
    return e.state.debt_at(Pubkey.from_string(mint), at)


def loan_repay(ctx: OperationContext, *, loan: Loan, data: dict) -> LoanResult:
    """Repay Loan: Repay per itemsToRepay from the borrower's positions (interest first;
    ``repayAll`` pays the whole debt of the mint), then WithdrawCollateral per
    itemsToRelease. The repaid transfers are debits of the borrower's positions to the
    strategy (positions/limits.py: over a limit the transaction is held PENDING_APPROVAL)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    statuses = (LoanStatus.ACTIVE, LoanStatus.REPAID)
    open_loan(loan, statuses=statuses)
    if not (data.get("itemsToRepay") or data.get("itemsToRelease")):
        raise LedgerError("Give itemsToRepay and/or itemsToRelease.", field="itemData.itemsToRepay", code="ITEMS_REQUIRED")
    e = _escrow(cluster, loan)
    plan = _plan(ctx, loan)
    mine = recorded_strategy(tenant, cluster, str(e.strategy))
    for i, item in enumerate(data.get("itemsToRepay") or []):
        field = f"itemData.itemsToRepay[{i}]"
        funded = bool(item.get("transferFrom") or item.get("mintAsset"))
        source = holding(plan, item["positionLookup"], f"{field}.positionLookup", owner=plan.borrower, create=funded)
        instrument = source.instrument
        mint = instrument.address
        if mint not in e.borrowed:
            raise LedgerError("The loan owes nothing in this financial instrument.", field=f"{field}.positionLookup", code="ITEM_NOT_FOUND")
        repay_all = bool(item.get("repayAll"))
        if item.get("value") is not None:
            amount = amount_of(item["value"], instrument, f"{field}.value")
        elif repay_all:
            amount = _debt(e, mint, int(time.time()) + REPAY_ALL_MARGIN_SECONDS)
        else:
            raise LedgerError("Give value, or repayAll.", field=f"{field}.value", code="VALUE_REQUIRED")
        if funded:
            fund_first(plan, source, item, amount, field)
        elif not repay_all or item.get("value") is not None:
            enough(source, amount, f"{field}.value")
        liquidity = ix.associated_address(e.strategy, instrument)
        plan.instructions.append(client.repay(e.program, escrow=e.escrow, strategy=e.strategy, repayer=plan.borrower_key, mint=onchain.token_mint(instrument),
                                              source=Pubkey.from_string(source.address), amount=amount, repay_all=repay_all))
        plan.for_item(field)
        plan.debits.append(Debit(plan.borrower, source.position, amount, pool_of(mine, mint) or str(liquidity), field))
    _releases(plan, e, data.get("itemsToRelease"), "itemData.itemsToRelease")
    debits_allowed(plan)
    prepared, funding = build(plan, operations.REPAY)
    return _write(plan, prepared, funding, loan, statuses=statuses, strategies=[str(e.strategy)])


def _lender_address(tenant, cluster: str, lookup: dict, field: str) -> str:
    resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
    return resolved.address


def loan_refinance(ctx: OperationContext, *, loan: Loan, data: dict) -> LoanResult:
    """Refinance Loan: the strategy at partnerLendingDetails.loanStrategyAddress (toLender's)
    pays off the loan's strategy (fromLender's) in every borrowed mint and the loan moves to
    it, on its terms — which must be the expected ones — from now (Refinance; the
    loan-to-value ratio is checked with the new strategy's feeds)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    p = "itemData"
    statuses = (LoanStatus.ACTIVE,)
    open_loan(loan, statuses=statuses)
    e = _escrow(cluster, loan)
    details = data["partnerLendingDetails"]
    new_field = f"{p}.partnerLendingDetails.loanStrategyAddress"
    new_key = Pubkey.from_string(details["loanStrategyAddress"])
    new_state = onchain.read_strategy(cluster, details["loanStrategyAddress"], field=new_field)
    current_lender, new_lender = str(e.strategy_state.lender), str(new_state.lender)
    if _lender_address(tenant, cluster, data["fromLender"], f"{p}.fromLender") != current_lender:
        raise LedgerError(f"fromLender is not the loan's lender ({current_lender}).", field=f"{p}.fromLender", code="LENDER_MISMATCH")
    if data.get("toLender"):
        if _lender_address(tenant, cluster, data["toLender"], f"{p}.toLender") != new_lender:
            raise LedgerError(f"toLender is not the lender of the strategy at loanStrategyAddress ({new_lender}).", field=f"{p}.toLender", code="LENDER_MISMATCH")
    elif new_lender != current_lender:
        raise LedgerError("toLender may be omitted only when the new strategy's lender is the loan's lender.", field=f"{p}.toLender", code="LENDER_REQUIRED")
    plan = _plan(ctx, loan)
    mine = recorded_strategy(tenant, cluster, details["loanStrategyAddress"])
    borrowed, at = [], int(time.time())
    for mint in e.borrowed:
        if onchain.strategy_mint(new_state, abi.ROLE_BORROW, mint) is None:
            raise LedgerError(f"The new strategy does not lend the mint {mint} the loan owes.", field=new_field, code="MINT_NOT_BORROWABLE")
        instrument = _instrument(e, mint)
        borrowed.append(onchain.token_mint(instrument))
        debit = lender_debit(mine, mint, _debt(e, mint, at + REPAY_ALL_MARGIN_SECONDS), str(ix.associated_address(e.strategy, instrument)), new_field)
        if debit is not None:
            plan.debits.append(debit)
    feeds = onchain.feeds(new_state, e.pledged, e.borrowed, field=new_field)
    plan.instructions.append(client.refinance(e.program, escrow=e.escrow, strategy=e.strategy, new_strategy=new_key, borrower=plan.borrower_key, borrowed=borrowed,
                                              feeds=feeds, **expected_values(details)))
    debits_allowed(plan)
    prepared, funding = build(plan, operations.REFINANCE)
    return _write(plan, prepared, funding, loan, statuses=statuses, strategies=[str(e.strategy), details["loanStrategyAddress"]])


def _instrument(e: Escrow, mint: str):
    return next(i.instrument for i in e.loan.borrowed_items.select_related("instrument") if i.mint_address == mint)


def loan_close(ctx: OperationContext, *, loan: Loan, data: dict) -> LoanResult:
    """Close Loan: CloseLoan — the loan owes nothing (DebtOutstanding otherwise); remaining
    collateral back to the borrower's positions (created on the way), the escrow and its
    token accounts closed, their rent to transferRentRefundTo (default: the borrower).
    ``submitTransaction`` false: built and signed, recorded SIGNED and not sent (Submit
    Transaction sends it)."""
    tenant, cluster = ctx.tenant, ctx.cluster
    protocol(data)
    p = "itemData"
    statuses = (LoanStatus.ACTIVE, LoanStatus.REPAID, LoanStatus.LIQUIDATED)
    open_loan(loan, statuses=statuses)
    borrower = loan.borrower
    config = dict(ctx.svm_config or {})
    if data.get("borrower"):
        named = resolve_account(tenant, cluster, data["borrower"], field=f"{p}.borrower")
        if named.address != loan.borrower_address:
            raise LedgerError("borrower is not the loan's borrower.", field=f"{p}.borrower", code="BORROWER_MISMATCH")
        ensure_usable(named, field=f"{p}.borrower")
        config.setdefault("feePayer", {"offchainId": str(borrower.offchain_id)})  # another fee payer is allowed here (spec, Close Loan)
    else:
        config = borrower_config(tenant, cluster, ctx.svm_config, borrower)
    e = _escrow(cluster, loan)
    plan = Plan(ctx, config, borrower)
    recipient = borrower.address
    if data.get("transferRentRefundTo"):
        resolved = resolve_account(tenant, cluster, data["transferRentRefundTo"], field=f"{p}.transferRentRefundTo", allow_off_platform=True)
        if not isinstance(resolved, OffPlatform):
            ensure_usable(resolved, field=f"{p}.transferRentRefundTo")
        recipient = resolved.address
    pledged = []
    for item in e.state.pledged:
        instrument = next(i.instrument for i in loan.pledged_items.select_related("instrument") if i.mint_address == str(item.mint))
        destination: Holding = holding(plan, {"owner": {"offchainId": str(borrower.offchain_id)}, "financialInstrument": {"offchainId": str(instrument.offchain_id)}},
                                       f"{p}.escrow", owner=borrower, create=True, instrument=instrument, role="receive")
        pledged.append((onchain.token_mint(instrument), Pubkey.from_string(destination.address)))
    plan.instructions.append(client.close_loan(e.program, escrow=e.escrow, borrower=plan.borrower_key, rent_recipient=Pubkey.from_string(recipient), pledged=pledged))
    submit = data.get("submitTransaction", True)
    prepared, funding = build(plan, operations.CLOSE)
    return _write(plan, prepared, funding, loan, statuses=statuses, submit=submit, rentRefundTo=recipient, strategies=[str(e.strategy)])
