"""What confirmed (or failed) transactions change in account records.

Worker code (the effects task, for no tenant): it uses ``Account.unscoped``. Handlers only
read and write the database; what they need from the chain is in ``facts``
(transactions/effects.py, read before the database transaction opened)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Exists, OuterRef
from django.utils import timezone

from ledger_project.bulk import bulk_set
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, lock_first, marks_in_flight, moves_balance, on_confirmations, records_balances
from transactions.models import Transaction

from . import operations
from .models import Account, AccountStatus, BalanceSnapshot


def _account(tx) -> Account | None:
    # Worker-side: the transaction names its own record; no API tenant scoping applies.
    return Account.unscoped.filter(offchain_id=tx.effects.get("account")).first()


@effect_handler(operations.CREATE)
def account_created(tx, facts: ConfirmationFacts) -> None:
    now = timezone.now()
    Account.unscoped.filter(offchain_id=tx.effects.get("account"), status=AccountStatus.PENDING).update(
        status=AccountStatus.ACTIVE, creation_transaction_at=tx.confirmed_at or now, updated_at=now)


@failure_handler(operations.CREATE)
def account_creation_failed(tx) -> None:
    account = _account(tx)
    if account is not None and account.status == AccountStatus.PENDING:
        account.status = AccountStatus.FAILED
        account.save(update_fields=["status", "updated_at"])
    _clear_in_flight(tx)


@effect_handler(operations.INACTIVATE)
def account_inactivated(tx, facts: ConfirmationFacts) -> None:
    account = _account(tx)
    if account is not None:
        account.status = AccountStatus.INACTIVE
        account.save(update_fields=["status", "updated_at"])


def _clear_in_flight(tx) -> None:
    """The record's in-flight marker ends with its transaction (success or failure)."""
    Account.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@failure_handler(operations.INACTIVATE)
def account_inactivation_failed(tx) -> None:
    _clear_in_flight(tx)


marks_in_flight(Account)  # their in-flight marks end when the transaction confirms (the engine)


@lock_first
def accounts_named_first(confirmed) -> None:
    """Every account record the chunk's transactions name, locked in pk order before any
    handler locks a position (balances_after writes them last)."""
    wanted = [(tx.cluster, address) for tx, facts in confirmed for address in facts.addresses]
    if wanted:
        clusters = {cluster for cluster, _ in wanted}
        list(Account.unscoped.select_for_update(of=("self",)).filter(cluster__in=clusters, address__in=list({a for _, a in wanted})).order_by("pk").values_list("pk", flat=True))


def last_transaction_slots(rows) -> dict[int, int | None]:
    """Row pk → the slot of its ``last_transaction`` (None: not landed yet, e.g. a movement
    recorded at request time), in one query: ``last_transaction`` only moves forward in
    chain order, whichever confirmation is applied first and whichever hook (lamports,
    tokens) writes it."""
    rows = [r for r in rows if r.last_transaction_id]
    slots = dict(Transaction.unscoped.filter(pk__in={r.last_transaction_id for r in rows}).values_list("pk", "slot"))
    return {r.pk: slots.get(r.last_transaction_id) for r in rows}


def moves_last_transaction(last_slots: dict[int, int | None], pk: int, slot: int) -> bool:
    """Whether a transaction at ``slot`` becomes the row's last one (and records it)."""
    current = last_slots.get(pk)
    if current is not None and current > slot:
        return False
    last_slots[pk] = slot
    return True


@records_balances
def recorded_accounts(cluster: str, addresses: list[str]) -> list[str]:
    return list(Account.unscoped.filter(cluster=cluster, address__in=addresses).values_list("address", flat=True).distinct())


@on_confirmations
def balances_after(confirmed) -> None:
    """Balance history from each transaction's own pre/post balances (its getTransaction
    record, ``facts.transaction``), in slot order.

    Re-reading the accounts after confirmation could record a later transaction's result
    under this one, and two confirmations applied out of order could move a balance
    backwards. The chain's record of *this* transaction says exactly what it left, and its
    slot places it: the current balance only moves to a transaction that comes after the one
    it reflects (a later slot, or later in the same slot: transactions.effects.moves_balance); an
    earlier one only adds its history entry, placed before the later entries.

    Set-based for the transactions confirmed together: their accounts are locked in one
    query (pk order, with whether each has history), the latest entry of an account whose
    balance a transaction moves is read once, and the balances and new
    entries are written in one UPDATE and one INSERT; transactions are taken in the order
    given, each seeing what the ones before it left.
    """
    facts_of = {tx.pk: facts for tx, facts in confirmed}
    confirmed = [(tx, facts.transaction) for tx, facts in confirmed if facts.transaction is not None]  # no metadata: nothing to record from
    if not confirmed:
        return
    wanted = {(tx.cluster, address) for tx, found in confirmed for address in found.lamports}
    clusters = {cluster for cluster, _ in wanted}
    locked = (Account.unscoped.select_for_update().filter(cluster__in=clusters, address__in=list({a for _, a in wanted}))
              .annotate(has_history=Exists(BalanceSnapshot.objects.filter(account=OuterRef("pk")))).order_by("pk"))
    accounts = {(a.cluster, a.address): a for a in locked}
    last_slots = last_transaction_slots(accounts.values())
    latest: dict[int, tuple[int, int, str | None] | None] = {}  # account pk → (transaction id, slot, signature) of its latest entry from a transaction
    has_history: dict[int, bool] = {a.pk: a.has_history for a in accounts.values()}
    snapshots: list[BalanceSnapshot] = []
    dirty: dict[int, Account] = {}
    now = timezone.now()
    for tx, found in confirmed:
        at = tx.confirmed_at or now
        named = sorted((accounts[(tx.cluster, address)] for address in found.lamports if (tx.cluster, address) in accounts), key=lambda a: a.pk)
        for account in named:
            pre, post = found.lamports[account.address]
            current = int(account.lamports_balance)
            if pre == post == current and has_history[account.pk]:
                # Most accounts a transaction names keep their lamports (a transfer's owner, its
                # token accounts, the mint): in whatever order it applies, no balance or entry
                # changes, so its latest entry is not read; only the last transaction may move.
                if moves_last_transaction(last_slots, account.pk, found.slot):
                    account.last_transaction, account.last_transaction_at, account.updated_at = tx, at, now
                    dirty[account.pk] = account
                continue
            if account.pk not in latest:
                recorded = BalanceSnapshot.objects.filter(account=account, transaction__slot__isnull=False).order_by("-transaction__slot", "-at", "-pk")
                latest[account.pk] = recorded.values_list("transaction_id", "transaction__slot", "transaction__onchain_id").first()
            last = latest[account.pk]
            if last is not None and last[0] == tx.pk:
                continue  # already recorded
            if moves_balance(facts_of[tx.pk], account.address, last, signature=tx.onchain_id, pre=pre, post=post, current=current):
                account.lamports_balance = post
                if moves_last_transaction(last_slots, account.pk, found.slot):
                    account.last_transaction = tx
                    account.last_transaction_at = at
                account.updated_at = now
                dirty[account.pk] = account
                if current != post or not has_history[account.pk]:
                    snapshots.append(BalanceSnapshot(account=account, lamports=post, transaction=tx, at=at))
                    latest[account.pk] = (tx.pk, found.slot, tx.onchain_id)
                    has_history[account.pk] = True
            elif pre != post:
                BalanceSnapshot.objects.bulk_create(snapshots)  # the entries before this one, for the placement below
                snapshots = []
                later = BalanceSnapshot.objects.filter(account=account, transaction__slot__gte=found.slot).exclude(transaction=tx).order_by("at", "pk").first()
                snapshots.append(BalanceSnapshot(account=account, lamports=post, transaction=tx, at=min(at, later.at - timedelta(microseconds=1)) if later else at))
                has_history[account.pk] = True
    bulk_set(Account, dirty.values(), ["lamports_balance", "last_transaction", "last_transaction_at", "updated_at"])
    BalanceSnapshot.objects.bulk_create(snapshots)


# --- tenant durable nonce accounts (accounts/nonces.py) ------------------------------------


def _nonce_accounts(tx) -> list[str]:
    return list(tx.effects.get("nonceAccounts") or ())


@effect_handler(operations.NONCE_CREATE)
def nonce_accounts_created(tx, facts: ConfirmationFacts) -> None:
    """Created and initialized on chain: the accounts are ACTIVE and their nonces READY to
    lease (the transaction did both or neither)."""
    from transactions.models import NonceAccount, NonceState

    ids, now = _nonce_accounts(tx), timezone.now()
    Account.unscoped.filter(offchain_id__in=ids, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=tx.confirmed_at or now, updated_at=now)
    NonceAccount.objects.filter(account__offchain_id__in=ids, state=NonceState.CREATING).update(state=NonceState.READY, written_slot=facts.transaction.slot if facts.transaction else None)


@failure_handler(operations.NONCE_CREATE)
def nonce_accounts_not_created(tx) -> None:
    """The creation did not land: nothing exists on chain; the records stay, FAILED."""
    from transactions.models import NonceAccount, NonceState

    ids = _nonce_accounts(tx)
    Account.unscoped.filter(offchain_id__in=ids, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED, updated_at=timezone.now())
    NonceAccount.objects.filter(account__offchain_id__in=ids, state=NonceState.CREATING).update(state=NonceState.FAILED)
    _clear_in_flight(tx)


# --- account.network_event (webhooks/network_events.py, docs/webhooks.md) ---------------

from webhooks.network_events import WatchedAccount, watched_accounts  # noqa: E402


@watched_accounts
def subscribed_accounts(tenant_ids: set[int]):
    """Accounts with subscribeToNetworkEvents of ``tenant_ids`` that exist or are being
    created (the network-event poller, for no tenant: every listening tenant's)."""
    rows = Account.unscoped.filter(tenant_id__in=tenant_ids, subscribe_to_network_events=True, status__in=[AccountStatus.PENDING, AccountStatus.ACTIVE])
    for tenant_id, cluster, address, offchain_id, updated_at in rows.values_list("tenant_id", "cluster", "address", "offchain_id", "updated_at").iterator():
        yield WatchedAccount(tenant_id=tenant_id, cluster=cluster, address=address, offchain_id=str(offchain_id), since=updated_at)
