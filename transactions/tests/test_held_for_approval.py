"""The engine's side of approvals (docs/transactions.md, "Held for approval"): a held
transaction is never submitted without a recorded decision, a PARTIALLY_SIGNED one can be
approved ahead of its signatures, and a message recorded twice is a 409, not a 500."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.system_program import TransferParams, transfer

from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions import approvals, collecting, services
from transactions.models import Transaction, TransactionApproval, TransactionStatus
from transactions.responses import wait_for
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded
from transactions.tests.test_lifecycle import CLUSTER, managed

pytestmark = pytest.mark.chain


def build(tenant, source: Keypair, *, signs_here: bool = True):
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000_000))
    signer = managed(source) if signs_here else SignerSpec(source.pubkey(), None)
    return services.transaction_build(context=OperationContext.system(tenant=tenant, cluster=CLUSTER), operation="test.transfer", instructions=[ix], signers=[signer])


def record(prepared, **kwargs) -> Transaction:
    with db_transaction.atomic():
        return services.transaction_record(prepared, **kwargs)


@pytest.mark.django_db(transaction=True)
def test_the_same_message_recorded_twice_is_409_duplicate_transaction(tenant, chain):
    prepared = build(tenant, funded(chain, 10**9))
    record(prepared)
    with pytest.raises(LedgerError) as duplicate:
        record(prepared)
    assert (duplicate.value.status_code, duplicate.value.code) == (409, "DUPLICATE_TRANSACTION")
    assert Transaction.unscoped.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_held_transaction_is_released_only_by_a_recorded_approval(tenant, chain):
    held = record(build(tenant, funded(chain, 10**9)), hold_for_approval=True, hold_reason="Held for approval: test.")
    assert (held.status, held.error_message, held.approval_required) == (TransactionStatus.PENDING_APPROVAL, "Held for approval: test.", True)
    with pytest.raises(LedgerError) as refused:
        collecting.transaction_release(transaction=held)
    assert refused.value.code == "INVALID_TRANSACTION_STATE"
    held.refresh_from_db()
    assert held.status == TransactionStatus.PENDING_APPROVAL and held.submit_attempts == 0


@pytest.mark.django_db(transaction=True)
def test_a_partially_signed_transaction_approved_ahead_is_submitted_once_signed(tenant, chain, celery_worker_process):
    source = funded(chain, 10**9)
    requester, approver = issue_key(tenant).api_key, issue_key(tenant, roles=[Role.PLATFORM_APPROVE_TRANSACTIONS]).api_key
    held = record(build(tenant, source, signs_here=False), hold_for_approval=True, hold_reason="Held for approval: test.", api_key=requester)
    assert held.status == TransactionStatus.PARTIALLY_SIGNED and held.approval_required
    approvals.transaction_approval_check(transaction=held, api_key=approver)
    with db_transaction.atomic():
        approved = approvals.transaction_approve(transaction=held, api_key=approver, reason="ahead of the signature")
    assert approved.status == TransactionStatus.PARTIALLY_SIGNED and not approved.approval_required and approved.error_message == ""
    signed = collecting.transaction_add_signatures(transaction=approved, signatures={str(source.pubkey()): str(source.sign_message(bytes(approved.message)))})
    assert signed.status == TransactionStatus.SIGNED
    assert wait_for(signed, "confirmed").status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)
    assert TransactionApproval.objects.get(transaction=held).api_key == approver
