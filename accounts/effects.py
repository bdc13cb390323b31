"""What confirmed (or failed) transactions change in account records."""

from __future__ import annotations

from django.utils import timezone
from solders.pubkey import Pubkey

from transactions.chain.rpc import rpc_for
from transactions.effects import effect_handler, failure_handler, on_every_confirmation, touched_addresses

from .models import Account, AccountStatus
from .services import balances_record


def _account(tx) -> Account | None:
    # Worker-side: the transaction names its own record; no API tenant scoping applies.
    return Account.unscoped.filter(offchain_id=tx.effects.get("account")).first()


@effect_handler("accounts.create")
def account_created(tx) -> None:
    account = _account(tx)
    if account is not None and account.status == AccountStatus.PENDING:
        account.status = AccountStatus.ACTIVE
        account.creation_transaction_at = tx.confirmed_at or timezone.now()
        account.save(update_fields=["status", "creation_transaction_at", "updated_at"])


@failure_handler("accounts.create")
def account_creation_failed(tx) -> None:
    account = _account(tx)
    if account is not None and account.status == AccountStatus.PENDING:
        account.status = AccountStatus.FAILED
        account.save(update_fields=["status", "updated_at"])


@effect_handler("accounts.inactivate")
def account_inactivated(tx) -> None:
    account = _account(tx)
    if account is not None:
        account.status = AccountStatus.INACTIVE
        account.save(update_fields=["status", "updated_at"])


@on_every_confirmation
def balances_after(tx) -> None:
    """Balance history: every recorded account the transaction touched, as the chain now
    has it (one getMultipleAccounts call)."""
    keys = touched_addresses(tx)
    accounts = list(Account.unscoped.filter(cluster=tx.cluster, address__in=keys))
    if not accounts:
        return
    addresses = sorted({a.address for a in accounts})
    onchain = rpc_for(tx.cluster).accounts([Pubkey.from_string(a) for a in addresses])
    lamports = {address: (acc.lamports if acc is not None else 0) for address, acc in zip(addresses, onchain)}
    balances_record(accounts=accounts, lamports=lamports, transaction_row=tx, at=tx.confirmed_at or timezone.now())
