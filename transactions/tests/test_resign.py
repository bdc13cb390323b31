"""A dropped transaction is signed again on a fresh blockhash when the service made every
signature (transactions/resign.py; docs/transactions.md, "Re-signing on expiry").

Each test runs a node of its own (its slots are warped to expire blockhashes, which would
disturb other tests on the session's node) and drives the pump in this process while it
holds the cluster's pump leases, so no worker touches its rows. A send is "dropped" by a
provider that accepts it and never forwards it: ``ChainRpc.send_raw_many`` answers the
signature without sending the bytes whose signature the test names. Chain effects are read
back with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer as system_transfer
from solders.transaction import VersionedTransaction

from chain import builder
from chain.rpc import ChainRpc, rpc_for
from conftest import make_client
from localnet.testing import LocalnetProcess, rpc_call
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from tests.workers import wait_for
from transactions import notify, pump, resign, services, settlement
from transactions.fee_payers import fee_payer_cache_clear
from transactions.models import Transaction, TransactionApproval, TransactionEvent, TransactionStatus
from transactions.specs import SignerSpec
from transactions.tests.chainkit import hold_pump
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
HOLDER = "test-resign"
TRANSFER = "/api/v1/positions/transfer-network-currency"
LANDED = (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)


@pytest.fixture
def node(tmp_path, settings):
    """A node of this test as CHAIN_LOCALNET, the pump leases held by the test; seeds paid
    by the localnet airdrop funder (docs/accounts.md, "Who pays")."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    # The test holds the leases for as long as it runs (released below): they must not lapse
    # while one step waits for a busy machine, or the worker's pump would take this cluster.
    settings.LEDGER_PUMP_LEASE_SECONDS = 300
    process = LocalnetProcess(tmp_path / "node").start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: process.url}
    settings.LEDGER_LOCALNET_RPC_URL = process.url
    fee_payer_cache_clear()
    builder.forget_blockhash(rpc_for(CLUSTER))
    wait_for(lambda: hold_pump(CLUSTER, HOLDER), timeout=15, what="the pump leases")
    try:
        yield process
    finally:
        pump.lease_release(CLUSTER, HOLDER)
        builder.forget_blockhash(rpc_for(CLUSTER))
        fee_payer_cache_clear()
        process.stop()


@pytest.fixture
def dropped(monkeypatch) -> set[str]:
    """Signatures whose sends the 'provider' accepts and drops (the test adds them)."""
    signatures: set[str] = set()
    send = ChainRpc.send_raw_many

    def lossy(self, raws, **kwargs):
        names = [str(VersionedTransaction.from_bytes(raw).signatures[0]) for raw in raws]
        kept = [raw for raw, name in zip(raws, names) if name not in signatures]
        answers = iter(send(self, kept, **kwargs) if kept else [])
        return [Signature.from_string(name) if name in signatures else next(answers) for name in names]

    monkeypatch.setattr(ChainRpc, "send_raw_many", lossy)
    return signatures


def drive(done, what: str, timeout: float = 30) -> None:
    """Pump passes in this process until ``done()``."""
    def step():
        hold_pump(CLUSTER, HOLDER)
        pump.pump_pass(CLUSTER)
        return done()

    wait_for(step, timeout=timeout, interval=0.05, what=what)


def expire_blockhashes(node) -> None:
    """Past every blockhash's last valid height, at finalized too (150 + 32 slots and more)."""
    rpc_call(node.url, "localnetWarpSlots", [300])


def row(offchain_id) -> Transaction:
    return Transaction.unscoped.get(offchain_id=offchain_id)


def status_is(offchain_id, *statuses):
    return lambda: row(offchain_id).status in statuses


def wallet(api, lamports: int = 0, **item) -> dict:
    """A confirmed managed WALLET seeded with ``lamports`` (by the localnet funder)."""
    data = {"managed": True, "offchainReferences": {"type": "WALLET"}, **item}
    if lamports:
        data["seed"] = {"lamports": lamports}
    response = api.call("post", "/api/v1/accounts", {"itemData": data})
    assert response.status_code == 201, response.json()
    body = response.json()
    if body.get("svmTransaction"):  # unseeded: nothing to send
        drive(status_is(body["svmTransaction"]["offchainId"], *LANDED), "the account")
    return {"offchainId": body["newAccount"]["offchainId"], "onchainId": body["newAccount"]["onchainId"]}


def send_transfer(api, source: dict, destination: dict, lamports: int, **envelope) -> dict:
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": lamports}}, **envelope}
    response = api.call("post", TRANSFER, body)
    assert response.status_code == 200, response.json()
    return response.json()["svmTransaction"]


def dropped_until_expired(node, dropped: set[str], offchain_id) -> Transaction:
    """Its current bytes are sent and dropped, then its blockhash expires; one pass follows it."""
    tx = row(offchain_id)
    dropped.add(tx.onchain_id)
    drive(lambda: row(offchain_id).status == TransactionStatus.SUBMITTED, "the dropped send")
    expire_blockhashes(node)
    hold_pump(CLUSTER, HOLDER)
    settlement.transactions_follow([row(offchain_id)], rebroadcast_after=0)
    return tx


def chain_client(node) -> Client:
    return Client(node.url, timeout=10, commitment=Confirmed)


def verifies(tx: Transaction) -> bool:
    """Every stored signature signs the stored message."""
    message = bytes(tx.message)
    return all(Signature.from_string(sig).verify(Pubkey.from_string(address), message) for address, sig in tx.signatures.items())


# --- the reproduction -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_dropped_managed_transfer_is_signed_again_and_lands_once(api, node, dropped):
    hook = api.call("post", "/api/v1/webhooks", {"itemData": {"name": "resigns", "endpointUrl": "https://hooks.example/tx", "eventTypes": ["transaction.resigned"]}})
    assert hook.status_code in (200, 201), hook.json()
    source, destination = wallet(api, 10**9), wallet(api)
    sent = send_transfer(api, source, destination, 7_000_000)
    old = dropped_until_expired(node, dropped, sent["offchainId"])

    resigned = row(sent["offchainId"])
    assert resigned.status == TransactionStatus.SIGNED and resigned.resign_count == 1
    assert resigned.onchain_id != old.onchain_id and resigned.blockhash != old.blockhash and verifies(resigned)
    event = TransactionEvent.objects.get(transaction=resigned, kind=resign.RESIGNED)
    assert event.detail["onchain_id"] == old.onchain_id and event.detail["blockhash"] == old.blockhash
    assert event.detail["last_valid_block_height"] == old.last_valid_block_height
    webhook = WebhookEvent.unscoped.get(event_type=notify.RESIGNED)
    assert f'"previousOnchainId":"{old.onchain_id}"' in webhook.body and resigned.onchain_id in webhook.body

    drive(status_is(sent["offchainId"], *LANDED), "the re-signed transfer")
    landed = row(sent["offchainId"])
    assert str(landed.offchain_id) == sent["offchainId"] and landed.onchain_id == resigned.onchain_id
    status = api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": sent["offchainId"]}}}).json()
    assert status["onchainId"] == resigned.onchain_id and status["status"] in ("CONFIRMED", "FINALIZED")
    # The chain, read with solana-py: the new signature landed, the old one never will, one transfer.
    chain = chain_client(node)
    assert chain.get_signature_statuses([Signature.from_string(old.onchain_id)], search_transaction_history=True).value[0] is None
    assert chain.get_signature_statuses([Signature.from_string(landed.onchain_id)], search_transaction_history=True).value[0] is not None
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == 7_000_000
    history = chain.get_signatures_for_address(Pubkey.from_string(destination["onchainId"]), commitment=Confirmed).value
    assert [str(item.signature) for item in history] == [landed.onchain_id]  # (unseeded: its only transaction)


@pytest.mark.django_db(transaction=True)
def test_opted_out_it_ends_expired(api, node, dropped):
    source, destination = wallet(api, 10**9), wallet(api)
    sent = send_transfer(api, source, destination, 1_000_000, svmTransactionConfig={"resignOnExpiry": False})
    assert row(sent["offchainId"]).resign_on_expiry is False
    dropped_until_expired(node, dropped, sent["offchainId"])
    ended = row(sent["offchainId"])
    assert ended.status == TransactionStatus.EXPIRED and ended.resign_count == 0
    assert not TransactionEvent.objects.filter(transaction=ended, kind=resign.RESIGNED).exists()
    assert chain_client(node).get_balance(Pubkey.from_string(destination["onchainId"])).value == 0


@pytest.mark.django_db(transaction=True)
def test_a_signer_whose_key_the_service_never_stored_makes_it_expire(tenant, node, dropped):
    # A throwaway in-memory key (as the localnet airdrop funder's): it signed once, never again.
    source = Keypair()
    chain = chain_client(node)
    chain.request_airdrop(source.pubkey(), 10**9)
    wait_for(lambda: chain.get_balance(source.pubkey()).value > 0, what="the airdrop")
    with db_transaction.atomic():
        tx = services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", signers=[SignerSpec(source.pubkey(), keypair=source)],
                                          instructions=[system_transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5_000))])
    dropped_until_expired(node, dropped, tx.offchain_id)
    assert row(tx.offchain_id).status == TransactionStatus.EXPIRED and row(tx.offchain_id).resign_count == 0


@pytest.mark.django_db(transaction=True)
def test_the_debit_window_counts_a_re_signed_transfer_once(api, node, dropped):
    limits = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]
    source, destination = wallet(api, 10**9, networkCurrencyDebitLimits=limits), wallet(api)
    first = send_transfer(api, source, destination, 3_000_000)
    dropped_until_expired(node, dropped, first["offchainId"])
    drive(status_is(first["offchainId"], *LANDED), "the re-signed transfer")
    assert row(first["offchainId"]).resign_count == 1
    # 3 + 2 fits the 5 of the window (counted twice, 3 + 3 + 2 would not); 3 + 2 + 1 does not.
    assert send_transfer(api, source, destination, 2_000_000)["status"] == "SIGNED"
    assert send_transfer(api, source, destination, 1_000_000)["status"] == "PENDING_APPROVAL"


@pytest.mark.django_db(transaction=True)
def test_an_approved_transfer_stays_approved_when_signed_again(api, tenant, node, dropped):
    approver = make_client(issue_key(tenant, roles=[Role.PLATFORM_APPROVE_TRANSACTIONS]).secret)
    source = wallet(api, 10**9)
    outside = {"onchainId": str(Keypair().pubkey()), "offPlatform": True}  # OFF_PLATFORM: held by the default limit
    held = send_transfer(api, source, outside, 4_000_000)
    assert held["status"] == "PENDING_APPROVAL"
    decided = approver.call("patch", "/api/v1/transactions/approve", {"itemData": {"transaction": {"offchainId": held["offchainId"]}}})
    assert decided.status_code == 200, decided.json()
    dropped_until_expired(node, dropped, held["offchainId"])
    assert row(held["offchainId"]).status == TransactionStatus.SIGNED and row(held["offchainId"]).approval_required is False
    drive(status_is(held["offchainId"], *LANDED), "the re-signed transfer")
    assert TransactionApproval.objects.filter(transaction=row(held["offchainId"])).count() == 1
    assert chain_client(node).get_balance(Pubkey.from_string(outside["onchainId"])).value == 4_000_000


@pytest.mark.django_db(transaction=True)
def test_after_ledger_resign_max_re_signings_it_ends_expired(api, node, dropped, settings):
    settings.LEDGER_RESIGN_MAX = 1
    source, destination = wallet(api, 10**9), wallet(api)
    sent = send_transfer(api, source, destination, 1_000_000)
    dropped_until_expired(node, dropped, sent["offchainId"])
    assert row(sent["offchainId"]).status == TransactionStatus.SIGNED
    dropped_until_expired(node, dropped, sent["offchainId"])  # the new bytes are dropped too
    ended = row(sent["offchainId"])
    assert ended.status == TransactionStatus.EXPIRED and ended.resign_count == 1 and "2 times" in ended.error_message
    assert TransactionEvent.objects.filter(transaction=ended, kind=resign.RESIGNED).count() == 1


# --- two workers, and a crash -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_claims_re_sign_once_and_a_crash_in_the_claim_leaves_the_old_row(api, node, dropped, monkeypatch):
    source, destination = wallet(api, 10**9), wallet(api)
    sent = send_transfer(api, source, destination, 1_000_000)
    dropped.add(row(sent["offchainId"]).onchain_id)
    drive(lambda: row(sent["offchainId"]).status == TransactionStatus.SUBMITTED, "the dropped send")
    expire_blockhashes(node)
    read = row(sent["offchainId"])
    rpc = rpc_for(CLUSTER)
    # A crash after the UPDATE, before its commit (the webhook write raising stands in for the
    # process dying there): nothing of the re-signing is stored.
    with monkeypatch.context() as patch:
        patch.setattr(notify, "transactions_reached", lambda *args, **kwargs: (_ for _ in ()).throw(RuntimeError("crash")))
        with pytest.raises(RuntimeError):
            resign.resign_record(read, resign.resign_or_none(read, rpc))
    kept = row(sent["offchainId"])
    assert (kept.status, kept.onchain_id, bytes(kept.message), kept.resign_count) == (TransactionStatus.SUBMITTED, read.onchain_id, bytes(read.message), 0)
    assert verifies(kept) and not TransactionEvent.objects.filter(transaction=kept, kind=resign.RESIGNED).exists()
    # Two workers that both read it SUBMITTED and both signed: one claim wins.
    first, second = resign.resign_or_none(read, rpc), resign.resign_or_none(read, rpc)
    assert resign.resign_record(read, first) is True
    assert resign.resign_record(read, second) is False
    won = row(sent["offchainId"])
    assert won.onchain_id == first.onchain_id and won.resign_count == 1 and verifies(won)
    assert TransactionEvent.objects.filter(transaction=won, kind=resign.RESIGNED).count() == 1
    drive(status_is(sent["offchainId"], *LANDED), "the re-signed transfer")
    assert chain_client(node).get_balance(Pubkey.from_string(destination["onchainId"])).value == 1_000_000
