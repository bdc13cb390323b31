"""Withdraw Transaction (``PATCH /api/v1/transactions/withdraw``, our extension of the spec;
docs/transactions.md, "Withdraw Transaction"): the client's way out of a PARTIALLY_SIGNED
transaction whose missing signatures will never come.

Two steps, so that no database transaction is open while the network is asked anything:

1. ``_mark`` (one committed database transaction): the transaction's open threshold signing
   sessions end (CANCELLED, unused nonces dropped), and the transaction is marked withdrawn
   (``withdrawn_at``, event WITHDRAWN). From this commit on it takes no signature: every way
   one comes in checks ``collecting.takes_signatures`` under the transaction's row lock.
2. ``settlement.transaction_end_withdrawn``: end it now when it can provably never execute —
   a durable nonce the service can advance is advanced (and waited for), then CANCELLED
   with failure effects once and the nonce lease released; a lifetime already over, CANCELLED.
   Otherwise it stays PARTIALLY_SIGNED (withdrawn) until it can never execute — its
   blockhash expired, or its nonce moved on — and the reconciliation ends it CANCELLED (or
   follows it, should it have landed: someone holding every signature sent it).

The answer is the transaction result after step 2. A retry of the same request (same API
key and ``x-request-id``) whose answer was not stored finds its own WITHDRAWN event and
runs step 2 again instead of being refused.
"""

from __future__ import annotations

import logging

from django.db import transaction as db_transaction
from django.utils import timezone

from ledger_project.api.errors import LedgerError

from . import settlement
from chain.errors import ChainError
from .models import MessageLifetime, NonceAccount, Transaction, TransactionEvent, TransactionStatus
from .ending import event
from .dkg_signers import dkg_sessions_end

logger = logging.getLogger("ledger.transactions")

WITHDRAWN = settlement.WITHDRAWN  # the event's kind; settlement reads it for the final errorMessage


def not_withdrawable(tx: Transaction) -> LedgerError:
    """Why ``tx`` cannot be withdrawn: 400 INVALID_TRANSACTION_STATE naming its status and its way out."""
    if tx.status == TransactionStatus.PARTIALLY_SIGNED:  # withdrawn already
        return LedgerError("The transaction was withdrawn already; it ends CANCELLED once it can never execute (Fetch Transaction Status shows when).",
                           field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
    if tx.status == TransactionStatus.PENDING_APPROVAL:
        why = ("every signature is collected and it awaits approval: an approver decides its end — Reject Transaction "
               "(role PLATFORM_APPROVE_TRANSACTIONS) cancels it, recorded as a decision")
    elif tx.status == TransactionStatus.SIGNED and not tx.submit_when_signed:
        why = "every signature is collected and it is held: Submit Transaction sends it, or it ends EXPIRED when its lifetime is over"
    elif tx.status in (TransactionStatus.SIGNED, TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED):
        why = "every signature was collected and it was submitted to the network"
    else:
        why = "it has ended and can never execute"
    return LedgerError(f"The transaction is {tx.status}: {why}. Only PARTIALLY_SIGNED transactions (waiting for signatures) can be withdrawn.",
                       field="itemData.transaction", code="INVALID_TRANSACTION_STATE")


def _until(tx: Transaction) -> str:
    """When a withdrawn transaction that could not be ended at once will end."""
    if tx.lifetime == MessageLifetime.RECENT_BLOCKHASH:
        return (f"once its blockhash expires (block height {tx.last_valid_block_height}, about a minute after it was built); "
                "until then whoever holds every signature could still send it")
    managed = NonceAccount.objects.filter(cluster=tx.cluster, address=tx.nonce_account, authority_key__isnull=False).exists()
    if managed:
        return "once the service's advance of its durable nonce lands (retried by the service)"
    return ("once its durable nonce moves on: the nonce account's authority signs off platform, so it advances the nonce itself "
            "(AdvanceNonceAccount); until then whoever holds every signature could still send it")


def _own_retry(tx: Transaction, api_key, request_id) -> bool:
    """This very request withdrew ``tx`` already (its answer was not stored: a crash, a lost
    race with the store): carry on rather than refuse."""
    if request_id is None:
        return False
    return TransactionEvent.objects.filter(transaction=tx, kind=WITHDRAWN, detail__by=api_key.key_id, detail__request_id=str(request_id)).exists()


def _mark(transaction: Transaction, *, api_key, reason: str, request_id) -> None:
    scoped = Transaction.objects.for_tenant(transaction.tenant)
    with db_transaction.atomic():
        # Sessions first, then the transaction's row: the order the signing path locks in
        # (a session's aggregate is added to its transaction under the session's lock).
        why = "the transaction was withdrawn (Withdraw Transaction)"
        ended = dkg_sessions_end(transaction=transaction, why=why)
        tx = scoped.select_for_update().get(pk=transaction.pk)
        if _own_retry(tx, api_key, request_id):
            return
        if tx.status != TransactionStatus.PARTIALLY_SIGNED or tx.withdrawn_at is not None:
            raise not_withdrawable(tx)
        # A session opened while this waited for the row (Open Signing Session re-checks the
        # transaction under this row's lock, so none can be opened after the commit).
        ended += dkg_sessions_end(transaction=transaction, why=why)
        message = f"Withdrawn by {api_key.key_id}" + (f": {reason}" if reason else "") + f". It takes no more signatures and ends CANCELLED {_until(tx)}."
        scoped.filter(pk=tx.pk).update(withdrawn_at=timezone.now(), error_message=message, updated_at=timezone.now())
        event(tx, WITHDRAWN, by=api_key.key_id, request_id=str(request_id) if request_id else None, reason=reason, sessions_ended=ended)


def transaction_withdraw(*, transaction: Transaction, api_key, reason: str = "", request_id=None) -> Transaction:
    """Withdraw a PARTIALLY_SIGNED ``transaction`` (the tenant's, found through its door) for
    ``api_key``: marked and its signing sessions ended, then ended now when it provably can
    never execute (module docstring). Runs its own database transactions (the nonce advance
    is a network call): call it outside any write phase. 400 INVALID_TRANSACTION_STATE for
    any other status, or one withdrawn already."""
    _mark(transaction, api_key=api_key, reason=reason, request_id=request_id)
    try:
        settlement.transaction_end_withdrawn(transaction=transaction)
    except (ChainError, RuntimeError, LedgerError) as exc:
        # Withdrawn and committed; ending it is retried by the reconciliation (every 15 s).
        logger.warning("withdrawn transaction %s not ended yet: %s", transaction.offchain_id, exc)
    return Transaction.objects.for_tenant(transaction.tenant).get(pk=transaction.pk)
