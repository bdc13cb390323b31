"""Offchain token balances of positions, from each confirmed transaction's own record.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``. Kept apart from
positions/effects.py (per-operation handlers): this hook runs for every confirmed
transaction, whatever moved the tokens."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import OuterRef, Subquery
from django.utils import timezone

from accounts.effects import last_transaction_slots, moves_last_transaction
from accounts.models import Account
from ledger_project.bulk import bulk_set
from transactions.effects import moves_balance, on_confirmations, records_balances

from .models import Position, PositionBalanceSnapshot, PositionStatus


def _latest(field: str) -> Subquery:
    """The position's latest balance entry from a transaction (index pos_balance_slot)."""
    entries = PositionBalanceSnapshot.objects.filter(position=OuterRef("pk"), slot__isnull=False).order_by("-slot", "-at", "-pk")
    return Subquery(entries.values(field)[:1])


@records_balances
def recorded_token_accounts(cluster: str, addresses: list[str]) -> list[str]:
    return list(Position.unscoped.filter(cluster=cluster, address__in=addresses).values_list("address", flat=True).distinct())


@on_confirmations
def token_balances_after(confirmed) -> None:
    """Offchain token balances and their history from each transaction's own pre/post token
    balances (facts.transaction.tokens), exactly once per transaction and in slot order —
    the same rule as lamports (accounts/effects.balances_after): the current balance only
    moves to a transaction that comes after the one it reflects (a later slot, or later in
    the same slot: transactions.effects.moves_balance); an earlier one only adds its history entry.
    A position is any tenant's: the transaction's record names token accounts, not tenants.

    Set-based for the transactions confirmed together: their positions are locked and read
    with each one's latest entry in one query (pk order), the transactions are taken in the
    order given, each seeing what the ones before it left, and the balances and new entries
    are written in one UPDATE per table and one INSERT.
    """
    facts_of = {tx.pk: facts for tx, facts in confirmed}
    confirmed = [(tx, facts.transaction) for tx, facts in confirmed if facts.transaction is not None and facts.transaction.tokens]
    if not confirmed:
        return
    wanted = {(tx.cluster, address) for tx, found in confirmed for address in found.tokens}
    # The positions only (OF self): their token-account rows were locked first, with every
    # account the chunk names (accounts.effects.accounts_named_first), and the instrument
    # row is shared by every transfer of the instrument.
    locked = (
        Position.unscoped.select_for_update(of=("self",))
        .filter(cluster__in={c for c, _ in wanted}, address__in=list({a for _, a in wanted}))
        .exclude(status=PositionStatus.FAILED)
        .select_related("account", "instrument")
        .annotate(latest_transaction=_latest("transaction_id"), latest_slot=_latest("slot"), latest_signature=_latest("transaction__onchain_id"))
        .order_by("pk")
    )
    positions: dict[tuple[str, str], list[Position]] = {}
    for position in locked:
        positions.setdefault((position.cluster, position.address), []).append(position)
    latest: dict[int, tuple[int, int, str | None] | None] = {p.pk: (p.latest_transaction, p.latest_slot, p.latest_signature) if p.latest_slot is not None else None for ps in positions.values() for p in ps}
    account_slots = last_transaction_slots(p.account for ps in positions.values() for p in ps)
    position_slots = last_transaction_slots(p for ps in positions.values() for p in ps)
    snapshots: list[PositionBalanceSnapshot] = []
    dirty_accounts: dict[int, Account] = {}
    dirty_positions: dict[int, Position] = {}
    now = timezone.now()
    for tx, found in confirmed:
        at = tx.confirmed_at or now
        named = sorted((p for address in found.tokens for p in positions.get((tx.cluster, address), ())), key=lambda p: p.pk)
        for position in named:
            balance = found.tokens[position.address]
            if balance.mint != position.instrument.address:
                continue  # an address reused for another mint after a close: not this position
            account = position.account
            current = int(account.token_balance or 0)
            last = latest[position.pk]
            if last is not None and last[0] == tx.pk:
                continue  # already recorded
            if moves_balance(facts_of[tx.pk], position.address, last, signature=tx.onchain_id, pre=balance.pre, post=balance.post, current=current):
                account.token_balance = balance.post
                if moves_last_transaction(account_slots, account.pk, found.slot):
                    account.last_transaction = tx
                    account.last_transaction_at = at
                account.updated_at = now
                dirty_accounts[account.pk] = account
                if moves_last_transaction(position_slots, position.pk, found.slot):
                    position.last_transaction = tx
                    position.last_transaction_at = at
                position.updated_at = now
                dirty_positions[position.pk] = position
                snapshots.append(PositionBalanceSnapshot(position=position, amount=balance.post, transaction=tx, slot=found.slot, at=at))
                latest[position.pk] = (tx.pk, found.slot, tx.onchain_id)
            elif balance.pre != balance.post:
                PositionBalanceSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True)  # the entries before this one, for the placement below
                snapshots = []
                later = PositionBalanceSnapshot.objects.filter(position=position, slot__gte=found.slot).exclude(transaction=tx).order_by("at", "pk").first()
                snapshots.append(PositionBalanceSnapshot(position=position, amount=balance.post, transaction=tx, slot=found.slot, at=min(at, later.at - timedelta(microseconds=1)) if later else at))
    bulk_set(Account, dirty_accounts.values(), ["token_balance", "last_transaction", "last_transaction_at", "updated_at"])
    bulk_set(Position, dirty_positions.values(), ["last_transaction", "last_transaction_at", "updated_at"])
    PositionBalanceSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True)
