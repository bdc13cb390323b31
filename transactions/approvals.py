"""Decisions on transactions held for approval (debit limits; docs/transactions.md, "Held
for approval"): approve (released and submitted) or reject (cancelled), each recorded as a
TransactionApproval in the database transaction that moves the transaction.

Callers: the API (``PATCH /api/v1/transactions/approve`` and ``/reject``, an API key with
PLATFORM_APPROVE_TRANSACTIONS that did not request the transaction) and the admin actions
(a staff user with the ``transactions.approve_transaction`` permission). Approve runs in two
phases like every mutation: ``transaction_approval_check`` (reads and one network read, no
database transaction), then ``transaction_approve`` in the caller's write phase.
``transaction_reject`` runs its own database transactions (a durable nonce is advanced
over the network before the transaction ends).
"""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from ledger_project.api.errors import LedgerError

from chain.rpc import rpc_for
from .models import ApprovalDecision, Transaction, TransactionApproval, TransactionStatus
from .collecting import transaction_release
from .ending import event, finish, lifetime_over

# A withdrawn one (Withdraw Transaction) awaits nothing: it ends CANCELLED by itself.
_AWAITING_APPROVAL = Q(status=TransactionStatus.PENDING_APPROVAL) | Q(status=TransactionStatus.PARTIALLY_SIGNED, approval_required=True, withdrawn_at__isnull=True)


def _decider_checks(tx: Transaction, *, api_key, staff_user, decision: str) -> None:
    """An API key decides with role PLATFORM_APPROVE_TRANSACTIONS, and never approves what
    it requested itself (four eyes); a staff user decides in the admin (its permission is
    checked there). Rejecting one's own request is withdrawing it, which moves nothing."""
    from ledger_project.api.errors import ForbiddenError
    from tenancy.permissions import require_role
    from tenancy.roles import Role

    if (api_key is None) == (staff_user is None):
        raise ValueError("a decision is made by an API key or by a staff user")
    if api_key is not None:
        require_role(api_key, Role.PLATFORM_APPROVE_TRANSACTIONS, why="approve or reject held transactions")
        if decision == ApprovalDecision.APPROVED and tx.created_by_key_id == api_key.pk:
            raise ForbiddenError("The API key that requested a transaction cannot approve it; another key with PLATFORM_APPROVE_TRANSACTIONS must.", field="itemData.transaction", code="SELF_APPROVAL_NOT_ALLOWED")


def _not_awaiting(tx: Transaction) -> LedgerError:
    return LedgerError(
        f"The transaction is {tx.status}; only transactions held for approval (PENDING_APPROVAL, or PARTIALLY_SIGNED awaiting approval) can be approved or rejected.",
        field="itemData.transaction", code="INVALID_TRANSACTION_STATE",
    )


def _record_decision(tx: Transaction, decision: str, *, api_key, staff_user, reason: str, request_id) -> None:
    TransactionApproval.objects.create(transaction=tx, decision=decision, reason=reason, api_key=api_key, staff_user=staff_user, request_id=str(request_id or ""))
    event(tx, decision, by=(api_key.key_id if api_key is not None else f"staff:{staff_user}"), reason=reason)


def transaction_approval_check(*, transaction: Transaction, api_key=None, staff_user=None, decision: str = "APPROVED") -> Transaction:
    """Read and network phase of a decision (no writes, no database transaction): the
    decider may decide, the transaction awaits approval, and — for an approval — its
    lifetime is not over: a RECENT_BLOCKHASH transaction held past its last valid block
    height (about a minute) can never execute, so approving it is 400
    TRANSACTION_EXPIRED (reconciliation ends it EXPIRED); DURABLE_NONCE gives approvers up
    to LEDGER_DURABLE_NONCE_WINDOW_SECONDS."""
    tx = Transaction.objects.for_tenant(transaction.tenant).get(pk=transaction.pk)
    _decider_checks(tx, api_key=api_key, staff_user=staff_user, decision=decision)
    if not Transaction.objects.for_tenant(tx.tenant).filter(_AWAITING_APPROVAL, pk=tx.pk).exists():
        raise _not_awaiting(tx)
    if decision == ApprovalDecision.APPROVED and lifetime_over(tx, rpc_for(tx.cluster)):
        raise LedgerError(
            "The transaction's lifetime ended while it waited for approval (its blockhash expired or its durable nonce moved on); it can never execute. "
            "Request the operation again — with messageLifetimeStrategy DURABLE_NONCE approvers have up to the durable-nonce window.",
            field="itemData.transaction", code="TRANSACTION_EXPIRED",
        )
    return tx


def transaction_approve(*, transaction: Transaction, api_key=None, staff_user=None, reason: str = "", request_id=None) -> Transaction:
    """Approve a transaction held over a debit limit. Write phase (call it inside the
    caller's ``write_phase()``, after ``transaction_approval_check``): PENDING_APPROVAL →
    SIGNED and submitted on commit (``transaction_release``); PARTIALLY_SIGNED awaiting
    approval stays PARTIALLY_SIGNED, approved, and is submitted once its signatures are in.
    The decision (TransactionApproval) is recorded in the same database transaction; a
    concurrent decision finds the transaction moved and is 400 INVALID_TRANSACTION_STATE."""
    scoped = Transaction.objects.for_tenant(transaction.tenant)
    tx = scoped.select_for_update().get(pk=transaction.pk)
    _decider_checks(tx, api_key=api_key, staff_user=staff_user, decision=ApprovalDecision.APPROVED)
    if tx.status == TransactionStatus.PENDING_APPROVAL:
        tx = transaction_release(transaction=tx, approved=True)
    elif scoped.filter(pk=tx.pk, status=TransactionStatus.PARTIALLY_SIGNED, approval_required=True).update(approval_required=False, error_message="", updated_at=timezone.now()):
        tx.refresh_from_db()
    else:
        raise _not_awaiting(tx)
    _record_decision(tx, ApprovalDecision.APPROVED, api_key=api_key, staff_user=staff_user, reason=reason, request_id=request_id)
    return tx


def transaction_reject(*, transaction: Transaction, api_key=None, staff_user=None, reason: str = "", request_id=None) -> Transaction:
    """Reject a transaction held for approval: CANCELLED (``transaction_cancel``'s path:
    a durable nonce is advanced first, failure effects run once, the lease ends), with the
    decision recorded in the same database transaction that ends it. Runs its own database
    transactions (the nonce advance is a network call): call it outside any write phase."""
    tx = Transaction.objects.for_tenant(transaction.tenant).get(pk=transaction.pk)
    _decider_checks(tx, api_key=api_key, staff_user=staff_user, decision=ApprovalDecision.REJECTED)
    if not Transaction.objects.for_tenant(tx.tenant).filter(_AWAITING_APPROVAL, pk=tx.pk).exists():
        raise _not_awaiting(tx)
    decider = api_key.key_id if api_key is not None else f"staff user {staff_user}"
    message = f"Rejected by {decider}" + (f": {reason}" if reason else "") + "; nothing was executed."

    def record(ended: Transaction) -> None:
        _record_decision(ended, ApprovalDecision.REJECTED, api_key=api_key, staff_user=staff_user, reason=reason, request_id=request_id)

    if not finish(tx, TransactionStatus.CANCELLED, unless_moved=_AWAITING_APPROVAL, also=record, error_message=message):
        tx.refresh_from_db()
        raise _not_awaiting(tx)
    tx.refresh_from_db()
    return tx
