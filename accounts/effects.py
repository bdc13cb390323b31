"""What confirmed (or failed) transactions change in account records.

Worker code (the effects task, for no tenant): it uses ``Account.unscoped``. Handlers only
read and write the database; what they need from the chain is in ``facts``
(transactions/effects.py, read before the database transaction opened)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, on_confirmations, on_every_confirmation

from .models import Account, AccountStatus, BalanceSnapshot


def _account(tx) -> Account | None:
    # Worker-side: the transaction names its own record; no API tenant scoping applies.
    return Account.unscoped.filter(offchain_id=tx.effects.get("account")).first()


@effect_handler("accounts.create")
def account_created(tx, facts: ConfirmationFacts) -> None:
    now = timezone.now()
    Account.unscoped.filter(offchain_id=tx.effects.get("account"), status=AccountStatus.PENDING).update(
        status=AccountStatus.ACTIVE, creation_transaction_at=tx.confirmed_at or now, updated_at=now)


@failure_handler("accounts.create")
def account_creation_failed(tx) -> None:
    account = _account(tx)
    if account is not None and account.status == AccountStatus.PENDING:
        account.status = AccountStatus.FAILED
        account.save(update_fields=["status", "updated_at"])
    _clear_in_flight(tx)


@effect_handler("accounts.inactivate")
def account_inactivated(tx, facts: ConfirmationFacts) -> None:
    account = _account(tx)
    if account is not None:
        account.status = AccountStatus.INACTIVE
        account.save(update_fields=["status", "updated_at"])


def _clear_in_flight(tx) -> None:
    """The record's in-flight marker ends with its transaction (success or failure)."""
    Account.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@failure_handler("accounts.inactivate")
def account_inactivation_failed(tx) -> None:
    _clear_in_flight(tx)


@on_confirmations
def in_flight_ended(txs) -> None:
    """The in-flight markers of records whose transactions confirmed end (one UPDATE)."""
    Account.unscoped.filter(pending_transaction__in=[tx.pk for tx in txs]).update(pending_transaction=None)


@on_every_confirmation
def balances_after(tx, facts: ConfirmationFacts) -> None:
    """Balance history from the transaction's own pre/post balances (its getTransaction
    record, ``facts.transaction``), in slot order.

    Re-reading the accounts after confirmation could record a later transaction's result
    under this one, and two confirmations applied out of order could move a balance
    backwards. The chain's record of *this* transaction says exactly what it left, and its
    slot places it: the current balance only moves to a transaction that comes after the one
    it reflects (a later slot, or the same slot starting from the recorded balance); an
    earlier one only adds its history entry, placed before the later entries.
    """
    found = facts.transaction
    if found is None:
        return  # no metadata on the node (logged by the prefetch): nothing to record from
    at = tx.confirmed_at or timezone.now()
    accounts = Account.unscoped.select_for_update().filter(cluster=tx.cluster, address__in=list(found.lamports)).order_by("pk")
    snapshots = []
    for account in accounts:
        pre, post = found.lamports[account.address]
        current = int(account.lamports_balance)
        # The slot the recorded balance reflects: its latest entry made from a transaction.
        latest = BalanceSnapshot.objects.filter(account=account, transaction__slot__isnull=False).order_by("-transaction__slot", "-at", "-pk").values_list("transaction_id", "transaction__slot").first()
        if latest is not None and latest[0] == tx.pk:
            continue  # already recorded
        if latest is None or found.slot > latest[1] or (found.slot == latest[1] and current == pre):
            account.lamports_balance = post
            account.last_transaction = tx
            account.last_transaction_at = at
            account.save(update_fields=["lamports_balance", "last_transaction", "last_transaction_at", "updated_at"])
            if current != post or not account.balance_history.exists():
                snapshots.append(BalanceSnapshot(account=account, lamports=post, transaction=tx, at=at))
        elif pre != post:
            later = BalanceSnapshot.objects.filter(account=account, transaction__slot__gte=found.slot).exclude(transaction=tx).order_by("at", "pk").first()
            snapshots.append(BalanceSnapshot(account=account, lamports=post, transaction=tx, at=min(at, later.at - timedelta(microseconds=1)) if later else at))
    BalanceSnapshot.objects.bulk_create(snapshots)
