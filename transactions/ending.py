"""How a transaction that did not land ends: FAILED, EXPIRED or CANCELLED, once, with its
failure effects, its nonce lease ended and its metrics counted (docs/transactions.md,
"Lifecycle"). The worker's settlement, Cancel, Reject and Withdraw all end through
``finish``; ``event`` appends to a transaction's history.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction as db_transaction
from django.db.models import Q
from django.utils import timezone
from solders.pubkey import Pubkey

from ledger_project.api.errors import LedgerError

from . import effects, nonce_pool, notify
from .models import MessageLifetime, NonceAccount, Transaction, TransactionEvent, TransactionStatus


def event(tx: Transaction, kind: str, **detail) -> None:
    TransactionEvent.objects.create(transaction=tx, kind=kind, detail=detail)


# Not yet handed to the cluster by the service: they end by expiry (blockhash past its last
# valid height, durable nonce advanced or signing window over) or by transaction_cancel.
HELD = (TransactionStatus.PENDING_APPROVAL, TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.SIGNED)
_ENDABLE = (TransactionStatus.BUILT, *HELD, TransactionStatus.SUBMITTED)  # never out of CONFIRMED


def finish(tx: Transaction, status: str, *, unless_moved: Q | None = None, also=None, never_complete: bool = False, **fields) -> bool:
    """End a transaction that did not land (FAILED, EXPIRED, CANCELLED) — never one that
    is CONFIRMED or already ended — run the operation's failure effects once and end its
    nonce lease. ``unless_moved`` narrows the statuses it may end from (a cancel must not
    end a transaction submitted meanwhile); ``also(tx)`` runs in the database transaction
    that ends it (a rejection's audit record). ``never_complete``: the caller proved that no
    complete set of its signatures can exist, so its bytes never execute whatever its nonce
    holds: the lease ends without advancing the nonce. Returns whether this call ended it."""
    executed = status == TransactionStatus.FAILED and fields.get("slot") is not None
    spent = True
    if tx.lifetime == MessageLifetime.DURABLE_NONCE and tx.nonce_account and not executed and not never_complete:
        # Before the nonce is leased again, the value this transaction was signed over must
        # be spent, or its bytes could still execute later (no-op when it moved on already).
        # A nonce whose authority signs off platform cannot be advanced by the service: its
        # lease stays with this transaction until the chain shows it moved on
        # (nonce_pool.nonce_leases_sweep).
        spent = nonce_pool.nonce_spend(cluster=tx.cluster, nonce_address=tx.nonce_account, expected=tx.blockhash)
    with db_transaction.atomic():
        updated = Transaction.objects.for_tenant(tx.tenant).filter(unless_moved or Q(), pk=tx.pk, status__in=_ENDABLE).update(status=status, updated_at=timezone.now(), **fields)
        if not updated:
            return False
        if spent:
            # A transaction that executed and failed advanced its nonce at its slot: the next
            # lease reads the nonce no older than that (docs/chain.md, the lagging row).
            written = {"written_slot": nonce_pool.later_slot(fields["slot"])} if executed else {}
            NonceAccount.objects.filter(leased_by_id=tx.pk).update(leased_by=None, leased_at=None, **written)
        else:
            event(tx, "NONCE_LEASE_KEPT", nonce=tx.nonce_account)
        event(tx, status, **{k: v for k, v in fields.items() if k in ("error_message",)})
        if tx.status == TransactionStatus.SUBMITTED or tx.submitted_at is not None:
            # It was handed to the network: its post_submit events say how it ended (webhooks).
            for name, value in {"status": status, **fields}.items():
                setattr(tx, name, value)
            notify.transactions_reached([tx], notify.POST_SUBMIT)
        if also is not None:
            also(tx)
        # Undo what the operation recorded ahead (e.g. a PENDING account): once.
        if Transaction.objects.for_tenant(tx.tenant).filter(pk=tx.pk, effects_applied_at__isnull=True).update(effects_applied_at=timezone.now()):
            tx.refresh_from_db()
            effects.apply_failure(tx)
            event(tx, "FAILURE_EFFECTS_APPLIED")
    _ended_count(tx, status, executed=executed)
    return True


def _ended_count(tx: Transaction, status: str, *, executed: bool) -> None:
    """Metrics of a transaction ended here (docs/operations.md, "Metrics"): every end that
    did not land goes through ``finish``, so it is counted once, here."""
    from ledger_project.metrics import meters

    meters.transaction_ended.labels(tx.cluster, status).inc()
    if status == TransactionStatus.EXPIRED:
        meters.transaction_expiries.labels(tx.cluster, tx.lifetime).inc()
    elif status == TransactionStatus.FAILED:
        meters.transaction_failures.labels(tx.cluster, "on_chain" if executed else "preflight").inc()


def transaction_cancel(*, transaction: Transaction, reason: str = "") -> Transaction:
    """Cancel a transaction the service has not submitted (PENDING_APPROVAL,
    PARTIALLY_SIGNED, SIGNED and held): CANCELLED, failure effects, lease ended.

    A DURABLE_NONCE transaction's nonce is advanced first, so its bytes can never execute.
    A RECENT_BLOCKHASH one is never sent by the service again; docs/transactions.md says
    what that means for signatures handed out before its blockhash expires.
    """
    not_submitted = Q(status__in=[TransactionStatus.PENDING_APPROVAL, TransactionStatus.PARTIALLY_SIGNED]) | Q(status=TransactionStatus.SIGNED, submit_when_signed=False)
    scoped = Transaction.objects.for_tenant(transaction.tenant)
    tx = scoped.filter(not_submitted, pk=transaction.pk).first()
    if tx is None:
        status = scoped.filter(pk=transaction.pk).values_list("status", flat=True).first() or "unknown"
        raise LedgerError(f"The transaction is {status}; only transactions not yet submitted (PENDING_APPROVAL, PARTIALLY_SIGNED, held SIGNED) can be cancelled.", code="INVALID_TRANSACTION_STATE")
    if not finish(tx, TransactionStatus.CANCELLED, unless_moved=not_submitted, error_message=reason or "Cancelled before submission; nothing was executed."):
        tx.refresh_from_db()
        raise LedgerError(f"The transaction is {tx.status}; it can no longer be cancelled.", code="INVALID_TRANSACTION_STATE")
    tx.refresh_from_db()
    return tx


def window_over(since) -> bool:
    return since is not None and timezone.now() - since >= timedelta(seconds=settings.LEDGER_DURABLE_NONCE_WINDOW_SECONDS)


def lifetime_over(tx: Transaction, rpc, *, height: int | None = None) -> bool:
    """Provably never executing: its blockhash is past its last valid block height
    (``height``: the cluster's, when the caller read it already), or its durable nonce
    moved on."""
    if tx.lifetime == MessageLifetime.DURABLE_NONCE:
        # A nonce account that is gone (a tenant's authority may withdraw it) holds no value.
        return nonce_pool.stored_nonce(rpc, Pubkey.from_string(tx.nonce_account)) != tx.blockhash
    if tx.last_valid_block_height is None:
        return False
    return (height if height is not None else rpc.block_height()) > tx.last_valid_block_height
