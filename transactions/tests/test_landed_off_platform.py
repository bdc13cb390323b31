"""A held transaction whose fee payer signs off platform has no signature the service
knows (``onchain_id`` is the fee payer's). If the client completes and sends it itself, it
is found in the chain's history by its message and followed — never called EXPIRED
(docs/transactions.md, "Statuses")."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.message import from_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from accounts.models import AccountStatus
from tests.workers import wait_for
from transactions import nonce_pool, settlement, tasks
from chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction, TransactionEvent, TransactionStatus
from transactions.tests.chainkit import funded, send, wait
from transactions.tests.test_lifecycle import held_account_create

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
LANDED = (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)


def events(tx: Transaction, kind: str) -> int:
    return TransactionEvent.objects.filter(transaction=tx, kind=kind).count()


def tenant_fee_payer(api, chain) -> Keypair:
    """An account of the tenant whose key the service does not hold."""
    payer = funded(chain, 10**9)
    response = api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}})
    assert response.status_code == 201, response.json()
    return payer


def complete_and_send(chain, tx: Transaction, fee_payer: Keypair) -> Signature:
    """What a client holding the other signatures does without Sign Transaction: sign the
    stored message with the fee payer's key and send it itself (the service's own
    signatures stand for signatures it handed out)."""
    raw_message = bytes(tx.message)
    message = from_bytes_versioned(raw_message)
    signers = message.account_keys[: message.header.num_required_signatures]
    signatures = [fee_payer.sign_message(raw_message) if key == fee_payer.pubkey() else Signature.from_string(tx.signatures[str(key)]) for key in signers]
    signature = chain.send_raw_transaction(bytes(VersionedTransaction.populate(message, signatures))).value
    assert wait(chain, signature).err is None
    return signature


@pytest.mark.django_db(transaction=True)
def test_held_transaction_the_client_sent_itself_is_followed_and_one_not_sent_expires(api, chain, settings):
    payer = tenant_fee_payer(api, chain)
    sent_account, sent = held_account_create(api, payer, "RECENT_BLOCKHASH", "SENT-BY-CLIENT")
    kept_account, kept = held_account_create(api, payer, "RECENT_BLOCKHASH", "NEVER-SENT")
    assert sent.onchain_id is None and kept.onchain_id is None  # the fee payer's signature is unknown
    signature = complete_and_send(chain, sent, payer)
    for _ in range(3):  # the fee payer's own traffic after it: the scan pages past it
        send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1_000_000))])

    rpc = rpc_for(CLUSTER)
    wait_for(lambda: rpc.block_height() > max(sent.last_valid_block_height, kept.last_valid_block_height), timeout=120, what="both blockhashes to expire")
    settings.LEDGER_LANDING_SCAN_PER_RUN = 2  # two signatures of history per run: resumed, not restarted

    assert settlement.transaction_expire_held(transaction_id=sent.pk) is None  # the three transfers come first
    sent.refresh_from_db()
    assert sent.status == TransactionStatus.PARTIALLY_SIGNED and events(sent, "LANDING_SCAN") == 1
    assert settlement.transaction_expire_held(transaction_id=sent.pk) == TransactionStatus.SUBMITTED
    sent.refresh_from_db()
    assert sent.onchain_id == str(signature) and sent.missing_signers == [] and events(sent, "LANDED_UNSUBMITTED") == 1
    settlement.transaction_confirm(transaction_id=sent.pk)  # landed long ago: straight to FINALIZED
    sent.refresh_from_db()
    sent_account.refresh_from_db()
    assert sent.status == TransactionStatus.FINALIZED and sent_account.status == AccountStatus.ACTIVE
    assert events(sent, "EFFECTS_APPLIED") == 1 and events(sent, "FAILURE_EFFECTS_APPLIED") == 0 and events(sent, "EXPIRED") == 0
    assert chain.get_balance(Pubkey.from_string(sent_account.address)).value == 1_000_000  # the seed landed

    # The one nobody sent: the scan reaches the moment it was built, finds nothing, EXPIRED.
    for _ in range(10):
        if settlement.transaction_expire_held(transaction_id=kept.pk) is not None:
            break
    kept.refresh_from_db()
    kept_account.refresh_from_db()
    assert kept.status == TransactionStatus.EXPIRED and kept_account.status == AccountStatus.FAILED
    assert events(kept, "LANDING_SCAN") >= 1 and events(kept, "FAILURE_EFFECTS_APPLIED") == 1
    assert chain.get_account_info(Pubkey.from_string(kept_account.address)).value is None


@pytest.mark.django_db(transaction=True)
def test_held_nonce_transaction_the_client_sent_itself_is_followed_not_expired(api, chain, settings, monkeypatch):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=4)  # stays above the low-water mark: no fill queued
    payer = tenant_fee_payer(api, chain)
    account, tx = held_account_create(api, payer, "DURABLE_NONCE", "NONCE-SENT-BY-CLIENT")
    lease = NonceAccount.objects.get(leased_by=tx)
    signature = complete_and_send(chain, tx, payer)

    settings.LEDGER_DURABLE_NONCE_WINDOW_SECONDS = 0  # its signing window is over
    queued: list[dict] = []
    monkeypatch.setattr(tasks.pump, "delay", lambda **kwargs: queued.append(kwargs))
    tasks.expire_held_transaction(transaction_id=tx.pk)
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.SUBMITTED and tx.onchain_id == str(signature)
    assert queued == [{"cluster": tx.cluster}]  # followed at once: the cluster's pump starts
    settlement.transaction_confirm(transaction_id=tx.pk)
    tx.refresh_from_db()
    account.refresh_from_db()
    assert tx.status in LANDED and account.status == AccountStatus.ACTIVE
    assert events(tx, "EFFECTS_APPLIED") == 1 and events(tx, "FAILURE_EFFECTS_APPLIED") == 0
    assert chain.get_balance(Pubkey.from_string(account.address)).value == 1_000_000
    lease.refresh_from_db()
    assert lease.leased_by_id == tx.pk  # held until it finalizes, as for any landed transaction
