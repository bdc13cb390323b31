"""Offchain token balances of positions, from each confirmed transaction's own record.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``. Kept apart from
positions/effects.py (per-operation handlers): this hook runs for every confirmed
transaction, whatever moved the tokens."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import Account
from transactions.effects import ConfirmationFacts, on_every_confirmation

from .models import Position, PositionBalanceSnapshot, PositionStatus
@on_every_confirmation
def token_balances_after(tx, facts: ConfirmationFacts) -> None:
    """Offchain token balances and their history from the transaction's own pre/post token
    balances (facts.transaction.tokens), exactly once per transaction and in slot order —
    the same rule as lamports (accounts/effects.balances_after): the current balance only
    moves to a transaction that comes after the one it reflects (a later slot, or the same
    slot starting from the recorded balance); an earlier one only adds its history entry.
    A position is any tenant's: the transaction's record names token accounts, not tenants.
    """
    found = facts.transaction
    if found is None or not found.tokens:
        return
    at = tx.confirmed_at or timezone.now()
    # The positions only (OF self): their token-account rows were locked first, with every
    # account the chunk names (accounts.effects.accounts_named_first), and the instrument
    # row is shared by every transfer of the instrument.
    positions = list(Position.unscoped.select_for_update(of=("self",)).filter(cluster=tx.cluster, address__in=list(found.tokens)).exclude(status=PositionStatus.FAILED).select_related("account", "instrument").order_by("pk"))
    snapshots = []
    for position in positions:
        balance = found.tokens[position.address]
        if balance.mint != position.instrument.address:
            continue  # an address reused for another mint after a close: not this position
        account = position.account
        current = int(account.token_balance or 0)
        latest = PositionBalanceSnapshot.objects.filter(position=position, slot__isnull=False).order_by("-slot", "-at", "-pk").values_list("transaction_id", "slot").first()
        if latest is not None and latest[0] == tx.pk:
            continue  # already recorded
        if latest is None or found.slot > latest[1] or (found.slot == latest[1] and current == balance.pre):
            Account.unscoped.filter(pk=account.pk).update(token_balance=balance.post, last_transaction=tx, last_transaction_at=at, updated_at=timezone.now())
            Position.unscoped.filter(pk=position.pk).update(last_transaction=tx, last_transaction_at=at, updated_at=timezone.now())
            snapshots.append(PositionBalanceSnapshot(position=position, amount=balance.post, transaction=tx, slot=found.slot, at=at))
        elif balance.pre != balance.post:
            later = PositionBalanceSnapshot.objects.filter(position=position, slot__gte=found.slot).order_by("at", "pk").first()
            snapshots.append(PositionBalanceSnapshot(position=position, amount=balance.post, transaction=tx, slot=found.slot, at=min(at, later.at - timedelta(microseconds=1)) if later else at))
    PositionBalanceSnapshot.objects.bulk_create(snapshots, ignore_conflicts=True)
