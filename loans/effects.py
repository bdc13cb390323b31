"""What confirmed (or failed) loan and strategy transactions change in the records
(docs/loans.md, "Records follow the chain").

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``. Every loan
transaction's prefetch reads the escrow and the strategies it names (``needs_accounts``);
the handlers copy what the program holds — status, terms, times, items — unless the read
is older than the one the record reflects (``synced_slot``). Token and lamport balances of
the escrow's, the strategy's and the borrower's positions follow every confirmed
transaction already (positions/balances.py, accounts/effects.py). The keeper
(loans/services/keeper.py) copies the chain the same way when it finds a loan changed by
a transaction the service did not send.
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from accounts.models import Account, AccountStatus
from instruments.models import FinancialInstrument
from ledger_project.api.envelope import canonical_uuid
from positions.effects import positions_created, positions_not_created
from positions.models import Position, PositionStatus
from positions.values import display
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts

from . import onchain, operations
from .models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStatus, LoanStrategy, LoanStrategyMint, MintRole, StrategyStatus



def _loan(tx) -> Loan | None:
    return Loan.unscoped.filter(offchain_id=tx.effects.get("loan")).select_related("escrow_account").first() if tx.effects.get("loan") else None


def _strategy(tx) -> LoanStrategy | None:
    return LoanStrategy.unscoped.filter(offchain_id=tx.effects.get("strategy")).first() if tx.effects.get("strategy") else None


@needs_accounts
def loan_accounts(named) -> dict[int, list[str]]:
    """The escrow and the strategies a loan transaction names; a strategy transaction's
    strategy."""
    out: dict[int, list[str]] = {}
    loans = {tx.pk: tx.effects.get("loan") for tx, _ in named if tx.operation in operations.LOAN}
    strategies = {tx.pk: tx.effects.get("strategy") for tx, _ in named if tx.operation in operations.STRATEGY}
    escrows = dict(Loan.unscoped.filter(offchain_id__in=[v for v in loans.values() if v]).values_list("offchain_id", "escrow_address"))
    addresses = dict(LoanStrategy.unscoped.filter(offchain_id__in=[v for v in strategies.values() if v]).values_list("offchain_id", "address"))
    for tx, _ in named:
        if tx.pk in loans and loans[tx.pk]:
            escrow = escrows.get(canonical_uuid(loans[tx.pk]))
            if escrow:
                out[tx.pk] = [escrow, *(tx.effects.get("strategies") or [])]
        elif tx.pk in strategies and strategies[tx.pk]:
            address = addresses.get(canonical_uuid(strategies[tx.pk]))
            if address:
                out[tx.pk] = [address]
    return out


def _instrument(tenant_id: int, cluster: str, mint: str, known: dict[str, FinancialInstrument]) -> FinancialInstrument | None:
    if mint not in known:
        rows = FinancialInstrument.unscoped.filter(Q(tenant_id=tenant_id) | Q(shared_across_tenants=True), cluster=cluster, address=mint)
        known[mint] = sorted(rows, key=lambda i: i.tenant_id != tenant_id)[0] if rows else None
    return known[mint]


def _close_positions(addresses: list[str], tenant_id: int, cluster: str, tx) -> None:
    """Token accounts the program closed: their positions and records INACTIVE."""
    if not addresses:
        return
    at = (tx.confirmed_at if tx is not None else None) or timezone.now()
    positions = Position.unscoped.filter(tenant_id=tenant_id, cluster=cluster, address__in=addresses, status=PositionStatus.ACTIVE)
    accounts = list(positions.values_list("account_id", flat=True))
    positions.update(status=PositionStatus.INACTIVE, frozen=False, delegate_address="", delegated_amount=0, last_transaction_at=at)
    Account.unscoped.filter(pk__in=accounts).update(status=AccountStatus.INACTIVE, token_balance=0, lamports_balance=0)


def _feed(strategy, role: int, mint: str, old) -> tuple[str, int | None]:
    entry = onchain.strategy_mint(strategy, role, mint) if strategy is not None else None
    if entry is not None:
        return str(entry.feed), int(entry.max_age)
    return (old.feed_address, old.max_age_seconds) if old is not None else ("", None)


def sync_loan(loan: Loan, state, *, slot: int | None, tx=None, strategy=None) -> None:
    """Copy the escrow as the chain holds it (``state``; None: closed) into the loan's
    records, unless ``slot`` is older than the one the loan reflects; ``strategy``: the
    loan's strategy as read with it (its lender, the feeds of the loan's mints)."""
    lender = str(strategy.lender) if strategy is not None else None
    if slot is not None and loan.synced_slot is not None and slot < loan.synced_slot:
        return
    now = timezone.now()
    updates: dict = {"synced_slot": slot, "updated_at": now}
    if tx is not None:
        updates["last_transaction"] = tx
    old_pledged = {i.mint_address: i for i in LoanPledgedItem.objects.filter(loan=loan)}
    old_borrowed = {i.mint_address: i for i in LoanBorrowedItem.objects.filter(loan=loan)}
    if state is None:
        updates.update(status=LoanStatus.CLOSED, closed_at=(tx.confirmed_at if tx is not None else None) or now, flagged_at=None, flag_reason="")
        _close_positions([i.token_account_address for i in old_pledged.values()], loan.tenant_id, loan.cluster, tx)
        LoanPledgedItem.objects.filter(loan=loan).delete()
        Account.unscoped.filter(pk=loan.escrow_account_id).update(status=AccountStatus.INACTIVE, lamports_balance=0)
        Loan.unscoped.filter(pk=loan.pk).update(**updates)
        return
    status = state.status
    terms = state.terms
    updates.update(
        status=status, apy_bps=terms.apy_bps, ltv_bps=terms.ltv_bps, liquidation_bps=terms.liquidation_bps,
        duration_code=state.duration_code, duration_unit=terms.duration_unit, start_time=onchain.moment(state.start_time),
        due_time=onchain.moment(state.due_time), last_interest_update_time=onchain.moment(state.last_interest_update_time), strategy_address=str(state.strategy),
    )
    if status != LoanStatus.ACTIVE:
        updates.update(flagged_at=None, flag_reason="")
    if str(state.strategy) != loan.strategy_address:
        updates["strategy"] = LoanStrategy.unscoped.filter(tenant_id=loan.tenant_id, cluster=loan.cluster, address=str(state.strategy)).first()
    if lender is not None and lender != loan.lender_address:
        updates["lender_address"] = lender
        updates["lender"] = Account.unscoped.filter(tenant_id=loan.tenant_id, cluster=loan.cluster, address=lender).first()
    known: dict[str, FinancialInstrument] = {i.mint_address: i.instrument for i in [*old_pledged.values(), *old_borrowed.values()]}
    kept = {str(i.token_account) for i in state.pledged}
    _close_positions([i.token_account_address for i in old_pledged.values() if i.token_account_address not in kept], loan.tenant_id, loan.cluster, tx)
    positions = {p.address: p for p in Position.unscoped.filter(tenant_id=loan.tenant_id, cluster=loan.cluster, address__in=list(kept))}
    pledged, borrowed = [], []
    for index, item in enumerate(state.pledged):
        instrument = _instrument(loan.tenant_id, loan.cluster, str(item.mint), known)
        if instrument is not None:
            feed, max_age = _feed(strategy, onchain.ROLE_PLEDGE, str(item.mint), old_pledged.get(str(item.mint)))
            pledged.append(LoanPledgedItem(loan=loan, index=index, mint_address=str(item.mint), instrument=instrument, token_account_address=str(item.token_account),
                                           position=positions.get(str(item.token_account)), amount=item.amount, pledged_amount=display(item.amount, instrument),
                                           feed_address=feed, max_age_seconds=max_age))
    borrowed_to = (tx.effects.get("borrowedTo") or {}) if tx is not None else {}
    destinations = {str(p.offchain_id): p for p in Position.unscoped.filter(offchain_id__in=[canonical_uuid(v) for v in borrowed_to.values()])} if borrowed_to else {}
    for index, item in enumerate(state.borrowed):
        mint = str(item.mint)
        instrument = _instrument(loan.tenant_id, loan.cluster, mint, known)
        if instrument is None:
            continue
        old = old_borrowed.get(mint)
        position = old.position if old is not None and old.position_id else destinations.get(borrowed_to.get(mint))
        feed, max_age = _feed(strategy, onchain.ROLE_BORROW, mint, old)
        borrowed.append(LoanBorrowedItem(feed_address=feed, max_age_seconds=max_age, 
            loan=loan, index=index, mint_address=mint, instrument=instrument, position=position, principal=item.principal, principal_repaid=item.principal_repaid,
            interest_accrued=item.interest_accrued, interest_remainder=item.interest_remainder, interest_repaid=item.interest_repaid,
            due_amount=display(item.principal - item.principal_repaid, instrument),
        ))
    LoanPledgedItem.objects.filter(loan=loan).delete()
    LoanBorrowedItem.objects.filter(loan=loan).delete()
    LoanPledgedItem.objects.bulk_create(pledged)
    LoanBorrowedItem.objects.bulk_create(borrowed)
    Loan.unscoped.filter(pk=loan.pk).update(**updates)


def _sync_from(tx, facts: ConfirmationFacts) -> None:
    loan = _loan(tx)
    if loan is None:
        return
    if not facts.accounts or loan.escrow_address not in facts.accounts:
        Loan.unscoped.filter(pk=loan.pk).update(last_transaction=tx, updated_at=timezone.now())
        return
    state = onchain.decode_loan(facts.accounts[loan.escrow_address], loan.program_address)
    strategy = onchain.decode_strategy(facts.accounts.get(str(state.strategy)), loan.program_address) if state is not None else None
    sync_loan(loan, state, slot=facts.accounts_slot, tx=tx, strategy=strategy)


def _thawed(tx) -> None:
    """Escrow token accounts this transaction unfroze (frozen-by-default instruments)."""
    if tx.effects.get("thawed"):
        Position.unscoped.filter(tenant_id=tx.tenant_id, cluster=tx.cluster, address__in=tx.effects["thawed"]).update(frozen=False)


def _created(tx) -> list[Position]:
    return list(Position.unscoped.filter(offchain_id__in=[canonical_uuid(v) for v in tx.effects.get("created") or []]))


@effect_handler(operations.CREATE)
def loan_created(tx, facts: ConfirmationFacts) -> None:
    loan = _loan(tx)
    if loan is None:
        return
    positions_created(tx, _created(tx))
    at = tx.confirmed_at or timezone.now()
    Account.unscoped.filter(pk=loan.escrow_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)
    _thawed(tx)
    _sync_from(tx, facts)


@failure_handler(operations.CREATE)
def loan_not_created(tx) -> None:
    loan = _loan(tx)
    positions_not_created(tx, _created(tx))
    if loan is not None:
        Loan.unscoped.filter(pk=loan.pk, status=LoanStatus.PENDING).update(status=LoanStatus.FAILED, pending_transaction=None)
        Account.unscoped.filter(pk=loan.escrow_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)


def _changed(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, _created(tx))
    _thawed(tx)
    _sync_from(tx, facts)


def _not_changed(tx) -> None:
    positions_not_created(tx, _created(tx))
    Loan.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)
    LoanStrategy.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


for _operation in operations.LOAN[1:]:
    effect_handler(_operation)(_changed)
    failure_handler(_operation)(_not_changed)


# --- strategies ----------------------------------------------------------------------------------


def sync_strategy(strategy: LoanStrategy, state, *, slot: int | None, tx=None) -> None:
    """Copy the strategy as the chain holds it (terms, mints) into its records."""
    if state is None or (slot is not None and strategy.synced_slot is not None and slot < strategy.synced_slot):
        return
    terms = state.terms
    updates = {"apy_bps": terms.apy_bps, "ltv_bps": terms.ltv_bps, "liquidation_bps": terms.liquidation_bps, "duration_unit": terms.duration_unit,
               "duration_code": onchain.DURATION_CODES.get(terms.duration_code, "DAYS"), "synced_slot": slot, "updated_at": timezone.now()}
    if tx is not None:
        updates["last_transaction"] = tx
    known: dict[str, FinancialInstrument] = {m.mint_address: m.instrument for m in LoanStrategyMint.objects.filter(strategy=strategy) if m.instrument_id}
    entries = [(MintRole.PLEDGE, m) for m in state.pledge_mints] + [(MintRole.BORROW, m) for m in state.borrow_mints]
    positions = {p.address: p for p in Position.unscoped.filter(tenant_id=strategy.tenant_id, cluster=strategy.cluster, address__in=[str(m.token_account) for _, m in entries])}
    rows, counters = [], {MintRole.PLEDGE: 0, MintRole.BORROW: 0}
    for role, m in entries:
        rows.append(LoanStrategyMint(strategy=strategy, role=role, index=counters[role], mint_address=str(m.mint), instrument=_instrument(strategy.tenant_id, strategy.cluster, str(m.mint), known),
                                     feed_address=str(m.feed), max_age_seconds=m.max_age, token_account_address=str(m.token_account), token_program=str(m.token_program),
                                     decimals=m.decimals, position=positions.get(str(m.token_account))))
        counters[role] += 1
    LoanStrategyMint.objects.filter(strategy=strategy).delete()
    LoanStrategyMint.objects.bulk_create(rows)
    LoanStrategy.unscoped.filter(pk=strategy.pk).update(**updates)


def _strategy_changed(tx, facts: ConfirmationFacts) -> None:
    strategy = _strategy(tx)
    if strategy is None:
        return
    positions_created(tx, _created(tx))
    if tx.operation == operations.STRATEGY_CREATE:
        at = tx.confirmed_at or timezone.now()
        LoanStrategy.unscoped.filter(pk=strategy.pk, status=StrategyStatus.PENDING).update(status=StrategyStatus.ACTIVE)
        Account.unscoped.filter(pk=strategy.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)
    if facts.accounts and strategy.address in facts.accounts:
        sync_strategy(strategy, onchain.decode_strategy(facts.accounts[strategy.address], strategy.program_address), slot=facts.accounts_slot, tx=tx)


@failure_handler(operations.STRATEGY_CREATE)
def strategy_not_created(tx) -> None:
    strategy = _strategy(tx)
    positions_not_created(tx, _created(tx))
    if strategy is not None:
        LoanStrategy.unscoped.filter(pk=strategy.pk, status=StrategyStatus.PENDING).update(status=StrategyStatus.FAILED, pending_transaction=None)
        Account.unscoped.filter(pk=strategy.account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)


for _operation in operations.STRATEGY:
    effect_handler(_operation)(_strategy_changed)
for _operation in operations.STRATEGY[1:]:
    failure_handler(_operation)(_not_changed)


marks_in_flight(Loan, LoanStrategy)  # their in-flight marks end when the transaction confirms (the engine)
