"""A transaction that waits SIGNED for the send budget until its blockhash dies is signed again
*before* it is sent (transactions/resign.py, ``resign_unsent``; docs/transactions.md,
"Re-signing on expiry"; docs/chain.md, the fault campaign's problem 1).

The send budget is throttled by ``ChainRpc.send_budget`` answering what the test allows (0:
nothing is sent, the row waits SIGNED), every sendTransaction's signature is recorded, and the
node's blockhashes are expired by warping its slots — on a node of each test's own, the pump
leases held and passes driven in this process, as in test_resign.py. Chain effects are read
back with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solana.rpc.commitment import Confirmed
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer as system_transfer
from solders.transaction import VersionedTransaction

from chain.rpc import ChainRpc, rpc_for
from localnet.testing import rpc_call
from transactions import notify, pump, resign, services, settlement
from transactions.models import TransactionEvent, TransactionStatus
from transactions.specs import SignerSpec
from transactions.tests.chainkit import hold_pump
from transactions.tests.test_resign import (  # noqa: F401 - node is a fixture
    CLUSTER, HOLDER, LANDED, chain_client, drive, expire_blockhashes, node, row, send_transfer, status_is, verifies, wallet,
)
from tests.workers import wait_for
from webhooks.models import WebhookEvent

pytestmark = pytest.mark.chain


@pytest.fixture
def budget(monkeypatch) -> dict:
    """``budget["sends"]``: how many sends are left (None: as the cluster allows), a budget
    that refills only when the test says so."""
    monkeypatch.setattr(resign, "_UNSENT_CHECK_SECONDS", 0)  # look at every pass: no timing luck
    resign._next_check.clear()
    allowed: dict = {"sends": None}
    real = ChainRpc.send_budget

    def throttled(self, wanted):
        if allowed["sends"] is None:
            return real(self, wanted)
        granted = min(wanted, allowed["sends"])
        allowed["sends"] -= granted
        return granted

    monkeypatch.setattr(ChainRpc, "send_budget", throttled)
    yield allowed
    resign._next_check.clear()


@pytest.fixture
def sends(monkeypatch) -> list[str]:
    """The first signature of every transaction sent to the node, in order."""
    sent: list[str] = []
    real = ChainRpc.send_raw_many

    def recording(self, raws, **kwargs):
        sent.extend(str(VersionedTransaction.from_bytes(raw).signatures[0]) for raw in raws)
        return real(self, raws, **kwargs)

    monkeypatch.setattr(ChainRpc, "send_raw_many", recording)
    return sent


def one_pass() -> None:
    hold_pump(CLUSTER, HOLDER)
    pump.pump_pass(CLUSTER)


def waiting_until_expired(node, budget: dict, offchain_id) -> None:
    """No send allowed: a pass leaves it SIGNED, unsent; then its blockhash dies; then sends are allowed."""
    one_pass()
    assert (row(offchain_id).status, row(offchain_id).submit_attempts) == (TransactionStatus.SIGNED, 0)
    expire_blockhashes(node)
    budget["sends"] = None


# --- the reproduction -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_transfer_waiting_for_the_send_budget_is_signed_again_before_it_is_sent(api, node, budget, sends):
    hook = api.call("post", "/api/v1/webhooks", {"itemData": {"name": "resigns", "endpointUrl": "https://hooks.example/tx", "eventTypes": ["transaction.resigned"]}})
    assert hook.status_code in (200, 201), hook.json()
    source, destination = wallet(api, 10**9), wallet(api)
    budget["sends"] = 0
    sent = send_transfer(api, source, destination, 7_000_000)
    old = row(sent["offchainId"])
    assert old.status == TransactionStatus.SIGNED and len(old.required_signers) > 1  # the platform pays, the wallet signs
    waiting_until_expired(node, budget, sent["offchainId"])

    one_pass()  # signed again on a fresh blockhash, then sent: the new bytes, once
    resigned = row(sent["offchainId"])
    assert resigned.resign_count == 1 and resigned.submit_attempts == 1 and resigned.status in (TransactionStatus.SUBMITTED, *LANDED)
    assert resigned.onchain_id != old.onchain_id and resigned.blockhash != old.blockhash and verifies(resigned)
    event = TransactionEvent.objects.get(transaction=resigned, kind=resign.RESIGNED)
    assert (event.detail["onchain_id"], event.detail["blockhash"], event.detail["unsent"]) == (old.onchain_id, old.blockhash, True)
    webhook = WebhookEvent.unscoped.get(event_type=notify.RESIGNED)
    assert f'"previousOnchainId":"{old.onchain_id}"' in webhook.body and resigned.onchain_id in webhook.body

    drive(status_is(sent["offchainId"], *LANDED), "the re-signed transfer")
    landed = row(sent["offchainId"])
    assert str(landed.offchain_id) == sent["offchainId"] and landed.onchain_id == resigned.onchain_id
    assert old.onchain_id not in sends and resigned.onchain_id in sends  # never sent on its dead blockhash
    # The chain, read with solana-py: the new signature landed, the old one never did, one transfer.
    chain = chain_client(node)
    assert chain.get_signature_statuses([Signature.from_string(old.onchain_id)], search_transaction_history=True).value[0] is None
    assert chain.get_signature_statuses([Signature.from_string(landed.onchain_id)], search_transaction_history=True).value[0] is not None
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == 7_000_000
    history = chain.get_signatures_for_address(Pubkey.from_string(destination["onchainId"]), commitment=Confirmed).value
    assert [str(item.signature) for item in history] == [landed.onchain_id]


@pytest.mark.django_db(transaction=True)
def test_the_oldest_waiting_row_is_sent_first_and_keeps_its_place_when_signed_again(api, node, budget, sends):
    source, destination = wallet(api, 10**9), wallet(api)
    budget["sends"] = 0
    first = send_transfer(api, source, destination, 1_000_000)
    second = send_transfer(api, source, destination, 2_000_000)
    waiting_until_expired(node, budget, first["offchainId"])
    budget["sends"] = 1
    sends.clear()  # (the wallets' seeds)
    one_pass()  # both re-signed; the budget sends one: the older
    assert (row(first["offchainId"]).resign_count, row(second["offchainId"]).resign_count) == (1, 1)
    assert row(first["offchainId"]).status != TransactionStatus.SIGNED and row(second["offchainId"]).status == TransactionStatus.SIGNED
    assert sends == [row(first["offchainId"]).onchain_id]
    budget["sends"] = None
    drive(lambda: status_is(first["offchainId"], *LANDED)() and status_is(second["offchainId"], *LANDED)(), "both transfers")
    assert chain_client(node).get_balance(Pubkey.from_string(destination["onchainId"])).value == 3_000_000


@pytest.mark.django_db(transaction=True)
def test_one_within_the_margin_is_signed_again_while_its_blockhash_still_lives(api, node, budget, settings):
    source, destination = wallet(api, 10**9), wallet(api)
    budget["sends"] = 0
    sent = send_transfer(api, source, destination, 1_000_000)
    old = row(sent["offchainId"])
    # A margin just under a blockhash's life (150): the row is within it once one block passed.
    settings.LEDGER_RESIGN_UNSENT_MARGIN_BLOCKS = 149
    rpc = rpc_for(CLUSTER)
    wait_for(lambda: rpc.block_height() + 149 >= old.last_valid_block_height, what="a block")
    one_pass()
    assert row(sent["offchainId"]).resign_count == 1 and row(sent["offchainId"]).status == TransactionStatus.SIGNED
    valid = rpc_call(node.url, "isBlockhashValid", [old.blockhash, {"commitment": "confirmed"}])["result"]["value"]
    assert valid is True  # alive, never sent: safe to replace


@pytest.mark.django_db(transaction=True)
def test_a_send_claimed_first_wins_over_the_re_signing(api, node, budget):
    source, destination = wallet(api, 10**9), wallet(api)
    budget["sends"] = 0
    sent = send_transfer(api, source, destination, 1_000_000)
    waiting_until_expired(node, budget, sent["offchainId"])
    read = row(sent["offchainId"])
    resigned = resign.resign_or_none(read, rpc_for(CLUSTER))
    assert resigned is not None
    hold_pump(CLUSTER, HOLDER)
    assert settlement.transactions_submit(cluster=CLUSTER) == [read.pk]  # a send claimed between the read and the record
    assert resign.resign_record(read, resigned) is False
    kept = row(sent["offchainId"])
    assert (kept.onchain_id, kept.resign_count, kept.submit_attempts) == (read.onchain_id, 0, 1)
    assert not TransactionEvent.objects.filter(transaction=kept, kind=resign.RESIGNED).exists()


# --- not re-signed before sending: as before --------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_opted_out_it_is_sent_as_it_is_and_ends_expired(api, node, budget, sends):
    source, destination = wallet(api, 10**9), wallet(api)
    budget["sends"] = 0
    sent = send_transfer(api, source, destination, 1_000_000, svmTransactionConfig={"resignOnExpiry": False})
    old = row(sent["offchainId"])
    waiting_until_expired(node, budget, sent["offchainId"])
    drive(status_is(sent["offchainId"], TransactionStatus.EXPIRED), "the expiry")
    ended = row(sent["offchainId"])
    assert ended.resign_count == 0 and ended.onchain_id == old.onchain_id and old.onchain_id in sends
    assert not TransactionEvent.objects.filter(transaction=ended, kind=resign.RESIGNED).exists()
    assert chain_client(node).get_balance(Pubkey.from_string(destination["onchainId"])).value == 0


@pytest.mark.django_db(transaction=True)
def test_a_signer_whose_key_the_service_never_stored_makes_it_expire(tenant, node, budget, sends):
    source = Keypair()  # a throwaway in-memory key (as the localnet airdrop funder's): it signed once
    chain = chain_client(node)
    chain.request_airdrop(source.pubkey(), 10**9)
    wait_for(lambda: chain.get_balance(source.pubkey()).value > 0, what="the airdrop")
    budget["sends"] = 0
    with db_transaction.atomic():
        tx = services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", signers=[SignerSpec(source.pubkey(), keypair=source)],
                                          instructions=[system_transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5_000))])
    waiting_until_expired(node, budget, tx.offchain_id)
    drive(status_is(tx.offchain_id, TransactionStatus.EXPIRED), "the expiry")
    assert row(tx.offchain_id).resign_count == 0 and tx.onchain_id in sends

