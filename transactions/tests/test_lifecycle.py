"""Every status ends: held transactions expire or are cancelled, a refused rebroadcast is
not a failure, only confirmed commitment applies effects, a broker outage after commit is
not an error (docs/transactions.md, "Statuses" and "Crash safety")."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from django.utils import timezone
from kombu.exceptions import OperationalError
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer
from solders.transaction_status import TransactionConfirmationStatus
from solders.transaction_status import TransactionStatus as ChainStatus

from custody.services import managed_key_import
from accounts.models import Account, AccountStatus
from ledger_project.api.errors import LedgerError
from tests.workers import wait_for
from transactions import ending, nonce_pool, pump, services, settlement, tasks
from chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction, TransactionEvent, TransactionStatus
from transactions.services import SignerSpec, TxConfig
from transactions.tests.chainkit import funded, nonce_value, send, wait

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"


def managed(keypair: Keypair) -> SignerSpec:
    return SignerSpec(keypair.pubkey(), managed_key_import(secret=str(keypair)))


def prepare(tenant, instructions, signers=(), **kwargs) -> Transaction:
    with db_transaction.atomic():
        return services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", instructions=instructions, signers=signers, **kwargs)


def claimed_but_never_sent(tx: Transaction) -> None:
    """What a worker killed right after its claim leaves: SUBMITTED, bytes never sent."""
    Transaction.unscoped.filter(pk=tx.pk).update(status=TransactionStatus.SUBMITTED, submit_when_signed=True, submitted_at=timezone.now(), submit_attempts=1)


def events(tx: Transaction, kind: str) -> int:
    return TransactionEvent.objects.filter(transaction=tx, kind=kind).count()


def reconcile_held() -> None:
    """What reconcile_inflight queues for held transactions, run here."""
    for transaction_id in settlement.transactions_held(stale_after=timezone.timedelta(0)):
        settlement.transaction_expire_held(transaction_id=transaction_id)


def held_account_create(api, payer: Keypair, lifetime: str, code: str):
    """Create Account whose fee payer's key the service does not hold: PARTIALLY_SIGNED."""
    body = {
        "itemData": {"managed": True, "seed": {"lamports": 1_000_000}, "offchainReferences": {"code": code}},
        "svmTransactionConfig": {"feePayer": {"onchainId": str(payer.pubkey())}, "messageLifetimeStrategy": lifetime},
    }
    response = api.call("post", "/api/v1/accounts", body)
    assert response.status_code == 201, response.json()
    assert response.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED"
    return Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"]), Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])


# --- Item 3: held transactions end ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_partially_signed_account_creation_expires_and_its_account_fails(api, chain, settings):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=4)  # stays above the low-water mark: no fill queued
    payer = funded(chain, 10**9)
    assert api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}}).status_code == 201
    by_blockhash, tx_blockhash = held_account_create(api, payer, "RECENT_BLOCKHASH", "HELD-1")
    by_nonce, tx_nonce = held_account_create(api, payer, "DURABLE_NONCE", "HELD-2")
    lease = NonceAccount.objects.get(leased_by=tx_nonce)
    assert by_blockhash.status == by_nonce.status == AccountStatus.PENDING

    reconcile_held()  # both still alive: nothing changes
    tx_blockhash.refresh_from_db()
    tx_nonce.refresh_from_db()
    assert tx_blockhash.status == tx_nonce.status == TransactionStatus.PARTIALLY_SIGNED

    # The durable nonce one: its signing window is over; the service advances the nonce
    # with a transaction of its own, so the stored bytes can never execute.
    settings.LEDGER_DURABLE_NONCE_WINDOW_SECONDS = 0
    reconcile_held()
    tx_nonce.refresh_from_db()
    by_nonce.refresh_from_db()
    lease.refresh_from_db()
    assert tx_nonce.status == TransactionStatus.EXPIRED and "nonce" in tx_nonce.error_message
    assert str(nonce_value(chain, Pubkey.from_string(lease.address))) != tx_nonce.blockhash
    assert by_nonce.status == AccountStatus.FAILED
    assert lease.leased_by_id is None and lease.leased_at is None

    # The recent blockhash one ends once its blockhash is past its last valid height.
    rpc = rpc_for(CLUSTER)
    wait_for(lambda: rpc.block_height() > tx_blockhash.last_valid_block_height, timeout=120, what="the blockhash to expire")
    reconcile_held()
    tx_blockhash.refresh_from_db()
    by_blockhash.refresh_from_db()
    assert tx_blockhash.status == TransactionStatus.EXPIRED and by_blockhash.status == AccountStatus.FAILED
    assert events(tx_blockhash, "FAILURE_EFFECTS_APPLIED") == events(tx_nonce, "FAILURE_EFFECTS_APPLIED") == 1
    reconcile_held()  # ended: nothing more happens
    assert events(tx_blockhash, "EXPIRED") == 1


@pytest.mark.django_db(transaction=True)
def test_cancel_ends_a_held_transaction_once_and_refuses_submitted_ones(api, chain):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    payer = funded(chain, 10**9)
    assert api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}}).status_code == 201
    account, tx = held_account_create(api, payer, "DURABLE_NONCE", "CANCEL-ME")
    lease = NonceAccount.objects.get(leased_by=tx)
    cancelled = ending.transaction_cancel(transaction=tx)
    assert cancelled.status == TransactionStatus.CANCELLED
    account.refresh_from_db()
    lease.refresh_from_db()
    assert account.status == AccountStatus.FAILED and lease.leased_by_id is None
    assert str(nonce_value(chain, Pubkey.from_string(lease.address))) != tx.blockhash  # its bytes can never execute
    with pytest.raises(LedgerError) as err:
        ending.transaction_cancel(transaction=tx)
    assert err.value.code == "INVALID_TRANSACTION_STATE"

    source = funded(chain, 10**9)
    sent = prepare(account.tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], [managed(source)], submit=False)
    claimed_but_never_sent(sent)
    with pytest.raises(LedgerError) as err:
        ending.transaction_cancel(transaction=sent)
    assert err.value.code == "INVALID_TRANSACTION_STATE"


# --- Item 4: a refused rebroadcast is not a failure ------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_preflight_refusal_on_rebroadcast_keeps_it_in_flight_until_it_lands(tenant, chain):
    source = funded(chain, 10**9)
    target = Keypair().pubkey()
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=target, lamports=600_000_000))], [managed(source)], submit=False)
    claimed_but_never_sent(tx)
    # The source is drained meanwhile: the rebroadcast's preflight now fails...
    send(chain, source, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=900_000_000))])
    assert settlement.transaction_confirm(transaction_id=tx.pk) is True
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.SUBMITTED and events(tx, "REBROADCAST_REFUSED") == 1
    # ...but the same bytes can still land (an earlier send could have, too).
    funded_again = chain.request_airdrop(source.pubkey(), 10**9 + 7).value  # not the funding airdrop again
    wait_for(lambda: chain.get_signature_statuses([funded_again]).value[0] is not None, what="the refund")

    def landed():
        settlement.transaction_confirm(transaction_id=tx.pk)
        tx.refresh_from_db()
        return tx.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)

    wait_for(landed, timeout=30, what="the rebroadcast to land")
    assert chain.get_balance(target).value == 600_000_000


@pytest.mark.django_db(transaction=True)
def test_first_send_refused_in_preflight_is_failed(tenant, chain):
    source = funded(chain, 10**8)
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=50_000_000))], [managed(source)], submit=False)
    send(chain, source, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=90_000_000))])
    Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
    assert settlement.transaction_submit(transaction_id=tx.pk) is True
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.FAILED  # nothing else was ever sent: nothing can land


# --- Item 5: commitment ----------------------------------------------------------------------


def forged_statuses(monkeypatch, answer):
    """The node reports confirmed at once; a processed-only status (or a node that lost a
    confirmed signature) can only be injected."""
    rpc = rpc_for(CLUSTER)
    monkeypatch.setattr(rpc, "signature_statuses", lambda signatures: [answer(s) for s in signatures])


@pytest.mark.django_db(transaction=True)
def test_processed_is_reported_never_applied(tenant, chain, monkeypatch):
    source = funded(chain, 10**9)
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000))], [managed(source)], config=TxConfig(commitment="processed"), submit=False)
    Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
    assert settlement.transaction_submit(transaction_id=tx.pk)
    real = rpc_for(CLUSTER).signature_statuses
    wait_for(lambda: real([tx_signature(tx)])[0] is not None, what="the transfer")
    with monkeypatch.context() as patch:
        forged_statuses(patch, lambda s: ChainStatus(real([s])[0].slot, 0, None, None, TransactionConfirmationStatus.Processed))
        assert settlement.transaction_confirm(transaction_id=tx.pk) is True
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.SUBMITTED and tx.effects_applied_at is None and events(tx, "EFFECTS_APPLIED") == 0
    settlement.transaction_confirm(transaction_id=tx.pk)  # the real answer: confirmed
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.CONFIRMED and events(tx, "EFFECTS_APPLIED") == 1


@pytest.mark.django_db(transaction=True)
def test_confirmed_is_never_called_expired(tenant, chain, monkeypatch):
    source = funded(chain, 10**9)
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000))], [managed(source)], submit=False)
    Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
    assert settlement.transaction_submit(transaction_id=tx.pk)
    wait_for(lambda: rpc_for(CLUSTER).signature_statuses([tx_signature(tx)])[0] is not None, what="the transfer")
    settlement.transaction_confirm(transaction_id=tx.pk)
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.CONFIRMED
    # A node that no longer finds the signature, past the blockhash's last valid height.
    rpc = rpc_for(CLUSTER)
    forged_statuses(monkeypatch, lambda s: None)
    monkeypatch.setattr(rpc, "block_height", lambda commitment="confirmed": tx.last_valid_block_height + 1)
    assert settlement.transaction_confirm(transaction_id=tx.pk) is True
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.CONFIRMED and events(tx, "FAILURE_EFFECTS_APPLIED") == 0


def tx_signature(tx: Transaction):
    from solders.signature import Signature

    return Signature.from_string(tx.onchain_id)


# --- Item 17: broker outage after commit ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_broker_outage_after_commit_answers_the_stored_result_and_reconciliation_submits(api, celery_worker_process, chain, monkeypatch):
    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to the broker. Connection refused.")

    payer = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"code": "PAYER"}}}).json()["newAccount"]["onchainId"]
    wait(chain, chain.request_airdrop(Pubkey.from_string(payer), 10**9).value)
    wait_for(lambda: not pump.lease_live(CLUSTER), timeout=15, what="no pump running")  # one would send it anyway
    with monkeypatch.context() as patch:
        patch.setattr(tasks.pump, "delay", broker_down)  # the commit's kick of the cluster's pump
        body = {"itemData": {"managed": True, "seed": {"lamports": 3_000_000}}, "svmTransactionConfig": {"feePayer": {"onchainId": payer}}}
        response = api.call("post", "/api/v1/accounts", body)
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    tx = Transaction.unscoped.get(offchain_id=body["svmTransaction"]["offchainId"])
    assert body["svmTransaction"]["status"] == "SIGNED" and tx.status == TransactionStatus.SIGNED
    assert tasks.reconcile_inflight(stale_seconds=0) >= 1  # the broker is back

    def done():
        tx.refresh_from_db()
        return tx.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)

    wait_for(done, timeout=40, what="reconciliation to submit it")
    assert chain.get_balance(Pubkey.from_string(body["newAccount"]["onchainId"])).value == 3_000_000


@pytest.mark.django_db(transaction=True)
def test_admin_cancels_unsubmitted_transactions_through_the_service(admin_client, tenant, chain):
    outsider = funded(chain, 10**9)  # its key is not held: the transfer waits PARTIALLY_SIGNED
    held = prepare(tenant, [transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], [SignerSpec(outsider.pubkey(), None)])
    assert held.status == TransactionStatus.PARTIALLY_SIGNED
    response = admin_client.post("/admin/transactions/transaction/", {"action": "cancel_unsubmitted", "_selected_action": [held.pk], "_staff_confirmed": "yes"}, follow=True)
    assert response.status_code == 200 and "1 transaction(s) cancelled" in response.content.decode()
    held.refresh_from_db()
    assert held.status == TransactionStatus.CANCELLED and events(held, "FAILURE_EFFECTS_APPLIED") == 1
