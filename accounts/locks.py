"""Row locks of the accounts area (transactions.locks: pk order, inside a write phase)."""

from __future__ import annotations

from ledger_project.api.errors import ConflictError
from transactions.locks import lock_rows
from transactions.models import TERMINAL

from .models import Account


def lock_accounts(*pks: int, tenant) -> dict[int, Account]:
    """Lock the tenant's accounts (pk order) and return them by pk, fresh from the database."""
    return {a.pk: a for a in lock_rows(Account.objects.for_tenant(tenant).filter(pk__in=[pk for pk in pks if pk is not None]))}


def lock_account(pk: int, *, tenant) -> Account:
    return lock_accounts(pk, tenant=tenant)[pk]


def lock_visible_account(pk: int, *, tenant) -> Account:
    """Lock an account the tenant may read (its own, or one shared across tenants, e.g. a
    funder whose key signs for it): to re-check under the lock, never to write it."""
    return lock_rows(Account.objects.visible_to(tenant).filter(pk=pk))[0]


def ensure_no_operation_in_flight(record, *, field: str) -> None:
    """The in-flight marker (``pending_transaction``): one transaction-backed mutation of a
    record at a time; the next one is refused with 409 until the first transaction ends
    (its effects or failure effects clear the marker). A marker whose transaction already
    ended (effects applied) does not block."""
    tx = record.pending_transaction
    if tx is not None and tx.effects_applied_at is None and tx.status not in _ENDED:
        raise ConflictError(
            f"Another operation on this record is in flight (transaction {tx.offchain_id}, {tx.status}); retry once it ends.",
            field=field, code="OPERATION_IN_PROGRESS",
        )


_ENDED = set(TERMINAL)
