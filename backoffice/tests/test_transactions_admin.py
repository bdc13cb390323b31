"""The transactions admin (docs/admin.md, "Transactions"): a stuck transaction resubmitted
and reconciled by an operator through the engine's own functions on the local node, the
dedicated permissions (a viewer or an approver runs none of it), and the page's decoded
message with its addresses linked to their records."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import transaction as db_transaction
from django.utils import timezone
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import MessageV0, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer

from accounts.models import Account
from accounts.tests.factories import AccountFactory
from backoffice.models import AuditKind, StaffAuditEntry
from tests.workers import paused_workers
from transactions import services
from transactions.models import Transaction, TransactionSigner, TransactionStatus
from transactions.services import SignerSpec
from webhooks.tests.webhookkit import recorded_transaction

from .staff import client_for, staff_user

TX = "/admin/transactions/transaction/"


def run(client, action: str, pks, url: str = TX) -> str:
    """An action as the back office asks it: the confirmation page, then confirmed."""
    form = {"action": action, "_selected_action": [str(pk) for pk in pks], "index": "0"}
    confirm = client.post(url, form)
    assert confirm.status_code == 200 and 'name="_staff_confirmed"' in confirm.content.decode(), confirm.content[:500]
    return client.post(url, {**form, "_staff_confirmed": "yes"}, follow=True).content.decode()


def stuck_account_creation(api, lamports: int) -> Transaction:
    """Create Account with no worker running: recorded, signed, queued — and never sent."""
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": lamports}, "offchainReferences": {"type": "WALLET"}}})
    assert response.status_code == 201, response.json()
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    assert tx.status == TransactionStatus.SIGNED and tx.submit_when_signed
    return tx


def messages(page: str) -> list[str]:
    import re

    return re.findall(r'<li class="[a-z]+">(.*?)</li>', page)


def landed(chain, tx: Transaction) -> bool:
    return chain.get_signature_statuses([Signature.from_string(tx.onchain_id)]).value[0] is not None


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_an_operator_resubmits_and_reconciles_stuck_transactions_through_the_engine(api, client, chain, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    operator = client_for(client, staff_user("operator"))
    with paused_workers():  # no pump: what the engine records stays where it is
        # SIGNED and queued, its pump never ran: Resubmit sends it, Reconcile settles it.
        queued = stuck_account_creation(api, 3_000_000)
        assert not landed(chain, queued)
        assert "SIGNED → SUBMITTED (sent (the stored signed bytes))" in run(operator, "resubmit", [queued.pk])
        assert landed(chain, queued)
        done = run(operator, "reconcile", [queued.pk])
        queued.refresh_from_db()
        assert f"SUBMITTED → {queued.status} (followed on the cluster)" in done and queued.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)
        account = Account.unscoped.get(creation_transaction=queued)
        assert account.status == "ACTIVE" and chain.get_balance(Pubkey.from_string(account.address)).value == 3_000_000
        again = run(operator, "resubmit", [queued.pk])  # landed: nothing to send, and nothing sent
        assert ("CONFIRMED: it landed; Reconcile follows it to FINALIZED." if queued.status == TransactionStatus.CONFIRMED else "FINALIZED: it has ended") in again
        assert "0 transaction(s) resubmitted." in again

        # Claimed by a worker killed before it sent anything: Resubmit sends the same bytes.
        lost = stuck_account_creation(api, 2_000_000)
        Transaction.unscoped.filter(pk=lost.pk).update(status=TransactionStatus.SUBMITTED, submitted_at=timezone.now(), submit_attempts=1)
        signature = lost.onchain_id
        done = run(operator, "resubmit", [lost.pk])
        assert "SUBMITTED → " in done and "sent again unless the cluster has them" in done
        assert landed(chain, lost)
        run(operator, "reconcile", [lost.pk])
        lost.refresh_from_db()
        assert lost.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED) and lost.onchain_id == signature  # never signed again

        # Held and past its lifetime: Reconcile ends it; then there is nothing more to do.
        outsider = Keypair()
        with db_transaction.atomic():
            held = services.transaction_prepare(tenant=lost.tenant, cluster="CHAIN_LOCALNET", operation="test.transfer", signers=[SignerSpec(outsider.pubkey(), None)],
                                                instructions=[transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))],
                                                simulate=False)
        assert held.status == TransactionStatus.PARTIALLY_SIGNED
        assert "still within its lifetime: left held" in run(operator, "reconcile", [held.pk])
        Transaction.unscoped.filter(pk=held.pk).update(last_valid_block_height=1)
        expired = run(operator, "reconcile", [held.pk])
        assert "PARTIALLY_SIGNED → EXPIRED (its lifetime is over: " in expired and "blockhash expired before it landed" in expired, messages(expired)
        assert "EXPIRED: nothing to reconcile (it has ended)." in run(operator, "reconcile", [held.pk])
        assert "EXPIRED: it has ended. The service never signs a transaction again" in run(operator, "resubmit", [held.pk])

    entries = list(StaffAuditEntry.objects.filter(kind=AuditKind.ACTION, actor="operator").order_by("pk"))
    assert [e.action for e in entries][:2] == ["resubmit", "reconcile"]
    assert entries[0].before[str(queued.pk)]["status"] == "SIGNED" and entries[0].after[str(queued.pk)]["status"] == "SUBMITTED"


@pytest.mark.django_db
def test_submit_and_cancel_need_their_own_permission_not_change(client, tenant):
    queued = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="test.op", status=TransactionStatus.SIGNED, message=b"",
                                         blockhash="x", fee_payer="x", onchain_id="sig-queued", submit_when_signed=True)
    for role in ("viewer", "approver"):
        c = client_for(client, staff_user(role))
        listing = c.get(TX).content.decode()
        for action in ("resubmit", "reconcile", "submit_held", "cancel_unsubmitted"):
            assert f'value="{action}"' not in listing, (role, action)
            c.post(TX, {"action": action, "_selected_action": [queued.pk], "_staff_confirmed": "yes", "index": "0"})
        queued.refresh_from_db()
        assert queued.status == TransactionStatus.SIGNED
    assert not StaffAuditEntry.objects.filter(kind=AuditKind.ACTION).exists()
    operator = staff_user("operator")
    assert operator.has_perm("backoffice.submit_transaction") and operator.has_perm("backoffice.cancel_transaction")
    assert not operator.has_perm("transactions.change_transaction") and not operator.has_perm("transactions.approve_transaction")
    listing = client_for(client, operator).get(TX).content.decode()
    assert all(f'value="{a}"' in listing for a in ("resubmit", "reconcile", "submit_held", "cancel_unsubmitted")) and 'value="approve_held"' not in listing
    # A refusal is the engine's own, per transaction, and changes nothing.
    ended = recorded_transaction(tenant)
    refused = run(client_for(client, operator), "resubmit", [ended.pk])
    assert "FINALIZED: it has ended" in refused and "0 transaction(s) resubmitted." in refused


@pytest.mark.django_db
def test_the_page_decodes_the_message_and_links_every_address_to_its_record(client, tenant):
    payer, source = AccountFactory(tenant=tenant), AccountFactory(tenant=tenant)
    destination = Keypair().pubkey()
    message = MessageV0.try_compile(Pubkey.from_string(payer.address),
                                    [transfer(TransferParams(from_pubkey=Pubkey.from_string(source.address), to_pubkey=destination, lamports=4242))], [], Hash.default())
    created = str(uuid.uuid4())
    payer_signature, source_signature = str(Keypair().sign_message(b"a")), str(Keypair().sign_message(b"b"))
    tx = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="positions.transfer_network_currency", status=TransactionStatus.FINALIZED,
                                     message=to_bytes_versioned(message), blockhash=str(Hash.default()), fee_payer=payer.address, onchain_id=payer_signature,
                                     required_signers=[payer.address, source.address], signatures={payer.address: payer_signature, source.address: source_signature},
                                     effects={"account": str(source.offchain_id), "position": created}, fee=5000, compute_units_consumed=150, slot=9,
                                     log_messages=["Program 11111111111111111111111111111111 success"])
    TransactionSigner.objects.bulk_create([TransactionSigner(transaction=tx, address=a, position=i) for i, a in enumerate(tx.required_signers)])  # as the engine records them
    viewer = client_for(client, staff_user("viewer"))
    page = viewer.get(f"{TX}{tx.pk}/change/").content.decode()
    assert '<strong class="instruction-type">transfer</strong>' in page and "&quot;lamports&quot;: 4242" in page
    assert page.count(f"/admin/accounts/account/{source.pk}/change/") >= 3  # signer, instruction account, account key, operation record
    assert f"/admin/accounts/account/{payer.pk}/change/" in page and str(destination) in page
    assert payer_signature in page and source_signature in page and 'class="signed"' in page
    assert "Program 11111111111111111111111111111111 success" in page and ">5000<" in page
    assert f"{created} <span class=\"mini quiet\">(not found)</span>" in page  # a record the effects name that is gone
    assert f"/admin/webhooks/webhookevent/?subject__exact=transaction%3A{tx.offchain_id}" in page
    assert "Open on the chain" in page and 'name="_save"' not in page
    # Both ways: the account's page links to the transactions it signs, which list this one.
    account_page = viewer.get(f"/admin/accounts/account/{source.pk}/change/").content.decode()
    assert f"{TX}?signer={source.address}" in account_page
    signed = viewer.get(f"{TX}?signer={source.address}").content.decode()
    assert payer_signature in signed and viewer.get(f"{TX}?signer={Keypair().pubkey()}").content.decode().count(payer_signature) == 0

    # Held for approval: who signed is shown, their signatures are not.
    Transaction.unscoped.filter(pk=tx.pk).update(status=TransactionStatus.PENDING_APPROVAL, approval_required=True)
    held = viewer.get(f"{TX}{tx.pk}/change/").content.decode()
    assert source_signature not in held and "withheld" in held and 'class="signed"' in held


@pytest.mark.django_db
def test_the_stuck_filter_lists_what_the_engine_has_not_looked_at_for_a_while(client, tenant):
    def row(status: str, signature: str, minutes: int) -> Transaction:
        tx = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="test.op", status=status, message=b"", blockhash="x", fee_payer="x", onchain_id=signature)
        Transaction.unscoped.filter(pk=tx.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes))
        return tx

    row("SUBMITTED", "sig-stuck-submitted", 15)
    row("SIGNED", "sig-stuck-signed", 90)
    row("SUBMITTED", "sig-moving", 0)
    row("FINALIZED", "sig-ended-long-ago", 600)
    viewer = client_for(client, staff_user("viewer"))
    over_ten = viewer.get(f"{TX}?stuck=600").content.decode()
    assert "sig-stuck-submitted" in over_ten and "sig-stuck-signed" in over_ten and "sig-moving" not in over_ten and "sig-ended-long-ago" not in over_ten
    over_hour = viewer.get(f"{TX}?stuck=3600").content.decode()
    assert "sig-stuck-signed" in over_hour and "sig-stuck-submitted" not in over_hour
    # A record without a message (made by hand, never by the service) still has a page.
    bare = Transaction.unscoped.get(onchain_id="sig-moving")
    assert "No message is stored for this transaction" in viewer.get(f"{TX}{bare.pk}/change/").content.decode()
