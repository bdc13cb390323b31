"""A stuck transaction, by hand: the admin's Resubmit and Reconcile (docs/admin.md). Each
does now, for one transaction, what the pump and the reconciliation task do on their next
pass, through the same code (transactions/settlement.py); neither ever signs again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger_project.api.errors import LedgerError
from tenancy.scoping import worker_only

from .chain_record import chain_record_due, transaction_chain_record_fill
from .ending import HELD
from .models import Transaction, TransactionStatus
from .pump import pump_kick
from .settlement import IN_FLIGHT, transaction_expire_held, transactions_follow, transactions_submit
from .shards import shard_of


@dataclass(frozen=True)
class StaffOutcome:
    """What a resubmit or reconcile did to one transaction, for the staff user."""

    before: str
    after: str
    done: str


def _not_resubmittable(tx: Transaction) -> str:
    if tx.status == TransactionStatus.SIGNED:
        return "SIGNED and held (not to be submitted when signed): Submit held sends it."
    if tx.status == TransactionStatus.PENDING_APPROVAL:
        return "PENDING_APPROVAL: an approver decides (Approve sends it)."
    if tx.status == TransactionStatus.PARTIALLY_SIGNED:
        return f"PARTIALLY_SIGNED: signatures are missing ({', '.join(tx.missing_signers)}); it cannot be sent."
    if tx.status == TransactionStatus.CONFIRMED:
        return "CONFIRMED: it landed; Reconcile follows it to FINALIZED."
    return (f"{tx.status}: it has ended. The service never signs a transaction again with a new blockhash or nonce; "
            "the client retries the operation (a new x-request-id).")


@worker_only  # staff: a row of any tenant, chosen in the admin
def transaction_resubmit(*, transaction_id: int) -> StaffOutcome:
    """Send a stuck transaction's stored signed bytes now — never signed again (the same
    bytes: one signature, one execution). SIGNED and queued (its pump never ran): claimed
    and sent by the pump's own send (``transactions_submit``). SUBMITTED: looked up by
    signature through the pump's own follow with no rebroadcast delay
    (``transactions_follow``, ``rebroadcast_after=0``): settled when it landed, EXPIRED when
    its lifetime is provably over, else the same bytes are sent again at once. Any other
    status: 400 INVALID_TRANSACTION_STATE saying what to do instead."""
    tx = Transaction.unscoped.get(pk=transaction_id)
    before = tx.status
    if tx.status == TransactionStatus.SIGNED and tx.submit_when_signed:
        done = "sent (the stored signed bytes)" if transactions_submit(ids=[tx.pk]) else "claimed by the pump meanwhile"
    elif tx.status == TransactionStatus.SUBMITTED:
        transactions_follow([tx], rebroadcast_after=0)
        done = "looked up by signature; the stored signed bytes sent again unless the cluster has them"
    else:
        raise LedgerError(_not_resubmittable(tx), field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
    return _outcome(tx, before, done)


def _outcome(tx: Transaction, before: str, done: str) -> StaffOutcome:
    tx.refresh_from_db()
    if tx.status != before and tx.status in (TransactionStatus.FAILED, TransactionStatus.EXPIRED) and tx.error_message:
        done = f"{done}: {tx.error_message}"
    return StaffOutcome(before, tx.status, done)


@worker_only  # staff: a row of any tenant, chosen in the admin
def transaction_reconcile(*, transaction_id: int) -> StaffOutcome:
    """Do now, for one transaction, what the pump and the reconciliation task do on their
    next pass: SUBMITTED or CONFIRMED → followed by signature (``transactions_follow``:
    CONFIRMED, FINALIZED or FAILED with effects applied once; not found: EXPIRED once
    provably dead, else sent again after LEDGER_PUMP_REBROADCAST_SECONDS); held
    (PENDING_APPROVAL, PARTIALLY_SIGNED, SIGNED not to be submitted) → EXPIRED once its
    lifetime is over, or SUBMITTED if it landed anyway (``transaction_expire_held``);
    SIGNED and queued → its cluster's pump started (``pump.pump_kick``); landed and ended
    without the chain's record (fee, logs) → the record read
    (``chain_record.transaction_chain_record_fill``). Anything else: 400
    INVALID_TRANSACTION_STATE (nothing to reconcile)."""
    tx = Transaction.unscoped.get(pk=transaction_id)
    before = tx.status
    if tx.status in IN_FLIGHT:
        transactions_follow([tx])
        done = "followed on the cluster"
    elif tx.status in HELD and not (tx.status == TransactionStatus.SIGNED and tx.submit_when_signed):
        moved = transaction_expire_held(transaction_id=tx.pk)
        done = {
            TransactionStatus.EXPIRED: "its lifetime is over",
            TransactionStatus.CANCELLED: "withdrawn by its client, and now it can never execute",
            TransactionStatus.SUBMITTED: "it landed without the service sending it",
        }.get(moved, "still within its lifetime: left held")
        if moved == TransactionStatus.SUBMITTED:
            pump_kick(tx.cluster, shard_of(tx.shard_key))  # follow it now, as the reconciliation task does
    elif tx.status == TransactionStatus.SIGNED:
        pump_kick(tx.cluster, shard_of(tx.shard_key))
        done = "queued for sending: its cluster's pump started (Resubmit sends it from here now)"
    elif chain_record_due(tx):
        transaction_chain_record_fill(transaction=tx)
        done = "the chain's record (fee, logs) read" if tx.fee is not None else "the cluster has no record of it (yet)"
    else:
        raise LedgerError(f"{tx.status}: nothing to reconcile (it has ended{' and its chain record is stored' if tx.fee is not None else ''}).",
                          field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
    return _outcome(tx, before, done)
