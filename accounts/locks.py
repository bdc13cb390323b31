"""Row locks of the accounts area (transactions.locks: pk order, inside a write phase)."""

from __future__ import annotations

from ledger_project.api.errors import ConflictError
from transactions.locks import lock_rows
from transactions.models import TERMINAL

from .models import Account


def lock_accounts(*pks: int) -> dict[int, Account]:
    """Lock the accounts (pk order) and return them by pk, fresh from the database."""
    return {a.pk: a for a in lock_rows(Account.unscoped.filter(pk__in=[pk for pk in pks if pk is not None]))}


def lock_account(pk: int) -> Account:
    return lock_accounts(pk)[pk]


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
