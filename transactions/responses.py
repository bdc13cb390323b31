"""Waiting for a transaction after the request commits (``?wait=confirmed``).

Submission happens on commit, so a view cannot wait inside its own database transaction.
A view that may wait attaches ``after_commit`` to its response; the idempotency wrapper
runs it once the transaction has committed, and the response then carries the fresh
transaction result.
"""

from __future__ import annotations

import time

from django.conf import settings

from ledger_project.api.errors import LedgerError

from .models import Transaction, TransactionStatus

_REACHED = {
    "submitted": {TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED},
    "confirmed": {TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED},
    "finalized": {TransactionStatus.FINALIZED},
}
_DONE = {TransactionStatus.FAILED, TransactionStatus.EXPIRED, TransactionStatus.CANCELLED, TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.PENDING_APPROVAL}


def wait_level(request) -> str | None:
    level = request.query_params.get("wait")
    if level in (None, ""):
        return None
    if level not in _REACHED:
        raise LedgerError("wait must be one of submitted, confirmed, finalized.", field="wait", code="INVALID_ENUM")
    return level


def wait_for(tx: Transaction, level: str, timeout: float | None = None) -> Transaction:
    deadline = time.monotonic() + (timeout if timeout is not None else settings.LEDGER_WAIT_TIMEOUT_SECONDS)
    delay = 0.02
    while True:
        tx.refresh_from_db()
        if tx.status in _REACHED[level] or tx.status in _DONE or (tx.status == TransactionStatus.SIGNED and not tx.submit_when_signed):
            return tx
        if time.monotonic() >= deadline:
            return tx
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


def attach_wait(response, request, tx: Transaction, render, *, path: tuple[str, ...] = ()) -> None:
    """After commit, wait for ``tx`` as ``?wait=`` asks and re-render its result into the
    response at ``path`` (the key chain of the transaction result in the body)."""
    level = wait_level(request)
    if level is None:
        return

    def refresh(resp):
        fresh = render(wait_for(tx, level))
        if not path:
            resp.data = fresh
        else:
            node = resp.data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = fresh

    response.after_commit = refresh


def transaction_result(tx) -> dict | None:
    """The spec's Transaction result: TransactionResultOutput's fields, in its order, with
    its values, written directly — a serializer instance cost ~0.4 ms of CPU, spent while
    the write phase holds its locks (docs/performance.md). The serializer stays the schema;
    transactions/tests/test_request_caches.py keeps the two the same."""
    if tx is None:
        return None
    import base64

    from ledger_project.timestamps import timestamp_text

    return {
        "success": tx.status not in ("FAILED", "EXPIRED", "CANCELLED"),
        "offchainId": str(tx.offchain_id),
        "status": str(tx.status),
        # Not disclosed while held for approval (TransactionResultOutput.get_onchainId says why).
        "onchainId": None if tx.approval_required else tx.onchain_id,
        "confirmationsCount": int(tx.confirmations_count) if tx.confirmations_count is not None else None,
        "serializedMessage": base64.b64encode(bytes(tx.message)).decode(),
        "errorMessage": str(tx.error_message) if tx.error_message is not None else None,
        "txnTimestamp": timestamp_text(tx.txn_timestamp),
    }


def transaction_answer(request, body: dict, tx, *, status: int = 200, key: str = "svmTransaction"):
    """``{…body, <key>: the transaction's result}`` (the spec names it ``svmTransaction`` or,
    for lookup tables and vaults, ``svmTransactionResult``), waiting after commit when the
    request asks ``?wait=`` (and there is a transaction)."""
    from rest_framework.response import Response

    response = Response({**body, key: transaction_result(tx)}, status=status)
    if tx is not None:
        attach_wait(response, request, tx, transaction_result, path=(key,))
    return response


def mutation_response(request, name: str, identifiers: dict, tx, *, status: int = 200):
    """The spec's mutating answer: ``{<name>: {onchainId, offchainId}, svmTransaction}``."""
    return transaction_answer(request, {name: identifiers}, tx, status=status)


def attach_wait_all(response, request, txs, *, key: str = "svmTransactions") -> None:
    """``?wait=`` for an answer carrying several transaction results (``response.data[key]``,
    in the order of ``txs``): after commit, wait for each — within one overall
    LEDGER_WAIT_TIMEOUT_SECONDS — and re-render them."""
    level = wait_level(request)
    if level is None or not txs:
        return

    def refresh(resp):
        deadline = time.monotonic() + settings.LEDGER_WAIT_TIMEOUT_SECONDS
        resp.data[key] = [transaction_result(wait_for(tx, level, timeout=max(0.0, deadline - time.monotonic()))) for tx in txs]

    response.after_commit = refresh
