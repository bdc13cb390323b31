"""Signatures collected off platform, and held transactions released: a PARTIALLY_SIGNED
transaction takes each signer's first valid signature and becomes SIGNED (or
PENDING_APPROVAL) when none is missing; a held SIGNED one is released to the pump
(docs/transactions.md, "Sign Transaction and Submit Transaction").
"""

from __future__ import annotations

from django.db import transaction as db_transaction
from django.db.models import Q
from django.utils import timezone

from chain.signing import signature_valid
from ledger_project.api.errors import LedgerError

from .ending import event
from .models import Transaction, TransactionStatus
from .services import _submit_on_commit


def transaction_add_signatures(*, transaction: Transaction, signatures: dict[str, str], submit: bool | None = None) -> Transaction:
    """Add signatures collected off platform (or made here for Sign Transaction's
    onPlatformSigning); submit when all are there (and wanted). Idempotent per signer: the
    first valid signature of a signer is kept, so one given again changes nothing
    (docs/transactions.md, "Sign Transaction and Submit Transaction")."""
    with db_transaction.atomic():
        return _add_signatures(transaction, signatures, submit)


def signer_check(tx: Transaction, pubkey: str, *, field: str) -> None:
    """400 NOT_A_SIGNER unless ``pubkey`` is a required signer of ``tx``."""
    if pubkey not in tx.required_signers:
        raise LedgerError(f"{pubkey} is not a signer of this transaction; its signers are {', '.join(tx.required_signers)}.", field=field, code="NOT_A_SIGNER")


def signature_check(tx: Transaction, pubkey: str, signature: str, *, field: str, signer_field: str | None = None, message: bytes | None = None) -> None:
    """400 NOT_A_SIGNER unless ``pubkey`` is a required signer of ``tx`` (at
    ``signer_field``); 400 INVALID_SIGNATURE unless ``signature`` is its key's signature of
    the stored message."""
    signer_check(tx, pubkey, field=signer_field or field)
    if not signature_valid(pubkey, bytes(tx.message) if message is None else message, signature):
        raise LedgerError(f"The signature for {pubkey} does not verify against the transaction message (serializedMessage).", field=field, code="INVALID_SIGNATURE")


def takes_signatures(tx: Transaction) -> bool:
    """Whether ``tx`` waits for signatures: PARTIALLY_SIGNED and not withdrawn. The one
    check every way a signature comes in goes through (Sign Transaction, a threshold
    session's aggregate, opening a session)."""
    return tx.status == TransactionStatus.PARTIALLY_SIGNED and tx.withdrawn_at is None


def not_signable(tx: Transaction) -> LedgerError:
    """Why ``tx`` takes no signatures (``takes_signatures`` is false): 400 INVALID_TRANSACTION_STATE."""
    if tx.status == TransactionStatus.PARTIALLY_SIGNED and tx.withdrawn_at is not None:
        return LedgerError("The transaction was withdrawn (Withdraw Transaction): it takes no more signatures and ends CANCELLED once it can never execute.",
                           field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
    if tx.status == TransactionStatus.PENDING_APPROVAL:
        why = "every signature is collected and it awaits approval (Approve Transaction)"
    elif tx.status == TransactionStatus.SIGNED and not tx.submit_when_signed:
        why = "every signature is collected and it is held; Submit Transaction sends it"
    elif tx.status in (TransactionStatus.SIGNED, TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED):
        why = "every signature was collected and it was submitted"
    else:
        why = "it has ended and can never execute"
    return LedgerError(f"The transaction is {tx.status}: {why}. Only PARTIALLY_SIGNED transactions take signatures.", field="itemData.transaction", code="INVALID_TRANSACTION_STATE")


def _add_signatures(transaction: Transaction, signatures: dict[str, str], submit: bool | None) -> Transaction:
    tx = Transaction.objects.for_tenant(transaction.tenant).select_for_update().get(pk=transaction.pk)
    if not takes_signatures(tx):
        raise not_signable(tx)
    message = bytes(tx.message)
    for pubkey, signature in signatures.items():
        # Checked in the read phase already (transactions/signatures.py, with each entry's
        # field); again here, for callers that have no read phase of their own.
        signature_check(tx, pubkey, signature, field="itemData.offPlatformSigning", message=message)
    # The first valid signature of a signer stays: a signer collected already (a retry, a
    # second call with the same signature) changes nothing — not even submit_when_signed.
    new = {k: v for k, v in signatures.items() if k not in (tx.signatures or {})}
    if not new:
        return tx
    tx.signatures = {**tx.signatures, **new}
    tx.onchain_id = tx.signatures.get(tx.required_signers[0])
    if submit is not None:
        tx.submit_when_signed = submit
    if not tx.missing_signers:
        # Still waiting for approval (a debit limit): held, not submitted.
        tx.status = TransactionStatus.PENDING_APPROVAL if tx.approval_required else TransactionStatus.SIGNED
    tx.save(update_fields=["signatures", "onchain_id", "status", "submit_when_signed", "updated_at"])
    event(tx, "SIGNATURES_ADDED", signers=sorted(new), status=tx.status)
    if tx.status == TransactionStatus.SIGNED and tx.submit_when_signed:
        _submit_on_commit(tx)
    return tx


def transaction_release(*, transaction: Transaction, approved: bool = False) -> Transaction:
    """Submit a SIGNED transaction that was held (submit_when_signed false: Submit
    Transaction, the admin) or, with ``approved`` (only ``transaction_approve`` passes it:
    the decision is recorded there), a PENDING_APPROVAL one. A transaction queued already
    is not released twice: 400 INVALID_TRANSACTION_STATE."""
    held = Q(status=TransactionStatus.SIGNED, submit_when_signed=False)
    if approved:
        held |= Q(status__in=[TransactionStatus.SIGNED, TransactionStatus.PENDING_APPROVAL])
    with db_transaction.atomic():  # the release and its pre_submit events commit together
        updated = Transaction.objects.for_tenant(transaction.tenant).filter(held, pk=transaction.pk).update(
            status=TransactionStatus.SIGNED, submit_when_signed=True, approval_required=False, error_message="", updated_at=timezone.now()
        )
        if not updated:
            what = "SIGNED or PENDING_APPROVAL" if approved else "held SIGNED (PENDING_APPROVAL ones are approved)"
            raise LedgerError(f"Only {what} transactions can be submitted.", field="itemData.transaction", code="INVALID_TRANSACTION_STATE")
        transaction.refresh_from_db()
        _submit_on_commit(transaction)
    return transaction
