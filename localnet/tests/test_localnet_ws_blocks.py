"""blockSubscribe on the local node's PubSub websocket (issue 37), as Agave serves it with
`--rpc-pubsub-enable-block-subscription` (agave rpc_pubsub.rs block_subscribe,
rpc_subscriptions.rs filter_block_result_txs): through solana-py's websocket client
(solders parses the BlockNotification) and on the wire, where each notification's block is
compared with what getBlock answers for that slot with the same options."""

from __future__ import annotations

import asyncio

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solana.rpc.websocket_api import connect
from solders.keypair import Keypair
from solders.message import Message
from solders.rpc.config import RpcBlockSubscribeFilterMentions
from solders.rpc.responses import BlockNotification
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from localnet.testing import LocalnetProcess, rpc_call
from localnet.tests.wskit import PubSub, ws_url_of
from transactions.tests.chainkit import funded, send, wait

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A node of its own, with block subscriptions on (Agave's flag; off by default)."""
    process = LocalnetProcess(tmp_path_factory.mktemp("ws-blocks") / "data", extra_args=("--rpc-pubsub-enable-block-subscription",)).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def client(node):
    return Client(node.url, timeout=10, commitment=Confirmed)


def legacy_transfer(client: Client, payer: Keypair, to, lamports: int = 1) -> VersionedTransaction:
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=to, lamports=lamports))], payer.pubkey(), client.get_latest_blockhash().value.blockhash)
    return VersionedTransaction(message, [payer])


def block_of(node, slot: int, **cfg) -> dict:
    answer = rpc_call(node.url, "getBlock", [slot, cfg], timeout=10)
    assert "result" in answer, answer
    return answer["result"]


def notification_for_slot(ws: PubSub, sub: int, slot: int, *, every_slot: bool = True, timeout: float = 10.0) -> dict:
    """The subscription's notification for ``slot``; with ``every_slot`` (filter `all`),
    checking that the ones before it came one per slot, in order."""
    last = None
    while True:
        note = ws.notification(sub, timeout)
        result = note["params"]["result"]
        assert result["context"]["slot"] == result["value"]["slot"]
        assert not every_slot or last is None or result["value"]["slot"] == last + 1, (last, result["value"]["slot"])
        last = result["value"]["slot"]
        if last >= slot:
            assert last == slot, (last, slot)
            return note


def test_solana_py_hears_each_confirmed_block(node, client):
    payer = funded(client, 10**9)
    tx = legacy_transfer(client, payer, Keypair().pubkey())

    async def scenario():
        async with connect(node.ws_url) as ws:
            await ws.block_subscribe(commitment=Confirmed, encoding="jsonParsed", max_supported_transaction_version=0, show_rewards=True)
            sub = (await ws.recv())[0].result
            signature = client.send_transaction(tx).value
            landed = wait(client, signature).slot
            slots = []
            while not slots or slots[-1] < landed:
                (note,) = await asyncio.wait_for(ws.recv(), 10)
                assert isinstance(note, BlockNotification) and note.subscription == sub
                assert note.result.value.err is None and note.result.context.slot == note.result.value.slot
                slots.append(note.result.value.slot)
                block = note.result.value.block
            await ws.block_unsubscribe(sub)
            return slots, landed, block, signature

    slots, landed, block, signature = asyncio.run(scenario())
    assert slots == list(range(slots[0], landed + 1))  # every block, in order, none skipped
    assert block.transactions[-1].transaction.signatures[0] == signature  # the payer's airdrop may share the block
    assert block.rewards == [] and block.block_height == landed


def test_the_notified_block_is_get_blocks_answer(node, client):
    payer = funded(client, 10**9)
    tx = legacy_transfer(client, payer, Keypair().pubkey())
    options = {"encoding": "jsonParsed", "transactionDetails": "full", "maxSupportedTransactionVersion": 0}
    with PubSub(node.ws_url) as ws:
        full = ws.subscribe("blockSubscribe", ["all", {"commitment": "confirmed", "showRewards": True, **options}])
        defaults = ws.subscribe("blockSubscribe", ["all", {"commitment": "confirmed"}])
        accounts = ws.subscribe("blockSubscribe", ["all", {"commitment": "confirmed", "transactionDetails": "accounts"}])
        signatures = ws.subscribe("blockSubscribe", ["all", {"commitment": "confirmed", "transactionDetails": "signatures", "showRewards": True}])
        client.send_transaction(tx)
        slot = wait(client, tx.signatures[0]).slot
        note = notification_for_slot(ws, full, slot)
        assert set(note) == {"jsonrpc", "method", "params"} and note["method"] == "blockNotification"
        assert set(note["params"]) == {"result", "subscription"} and set(note["params"]["result"]) == {"context", "value"}
        assert note["params"]["result"]["value"] == {"slot": slot, "block": block_of(node, slot, commitment="confirmed", rewards=True, **options), "err": None}
        # Agave's defaults differ from getBlock's: base64 transactions, no rewards
        block = notification_for_slot(ws, defaults, slot)["params"]["result"]["value"]["block"]
        assert block == block_of(node, slot, commitment="confirmed", encoding="base64", rewards=False)
        assert "rewards" not in block and block["transactions"][0]["transaction"][1] == "base64"
        block = notification_for_slot(ws, accounts, slot)["params"]["result"]["value"]["block"]
        assert block == block_of(node, slot, commitment="confirmed", transactionDetails="accounts", rewards=False)
        block = notification_for_slot(ws, signatures, slot)["params"]["result"]["value"]["block"]
        assert block["signatures"][-1] == str(tx.signatures[0]) and "transactions" not in block and block["rewards"] == []


def test_mentions_keeps_the_address_transactions_and_blocks(node, client):
    payer, other = funded(client, 10**9), funded(client, 10**9)
    watched = Keypair().pubkey()
    with PubSub(node.ws_url) as ws:
        sub = ws.subscribe("blockSubscribe", [{"mentionsAccountOrProgram": str(watched)}, {"commitment": "confirmed", "transactionDetails": "signatures"}])
        mine, theirs = legacy_transfer(client, payer, watched), legacy_transfer(client, other, Keypair().pubkey())
        client.send_transaction(mine)
        client.send_transaction(theirs)
        slot = wait(client, mine.signatures[0]).slot
        wait(client, theirs.signatures[0])
        value = ws.notification(sub)["params"]["result"]["value"]
        # no notification for the blocks before it: none of them mentions the address
        assert value["slot"] == slot and value["block"]["signatures"] == [str(mine.signatures[0])]
        assert ws.nothing_for(sub, 1.5)  # empty blocks, and blocks without it, are not notified
        assert ws.call("blockUnsubscribe", [sub])["result"] is True


def test_a_v0_transaction_needs_max_supported_transaction_version(node, client):
    payer = funded(client, 10**9)
    with PubSub(node.ws_url) as ws:
        strict = ws.subscribe("blockSubscribe", [{"mentionsAccountOrProgram": str(payer.pubkey())}, {"commitment": "confirmed"}])
        names = ws.subscribe("blockSubscribe", [{"mentionsAccountOrProgram": str(payer.pubkey())}, {"commitment": "confirmed", "transactionDetails": "signatures"}])
        signature = send(client, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], v0=True)
        slot = wait(client, signature).slot
        # (the payer's airdrop may be notified first, if its slot was still open)
        assert notification_for_slot(ws, strict, slot, every_slot=False)["params"]["result"]["value"] == {"slot": slot, "block": None, "err": {"UnsupportedTransactionVersion": 0}}
        assert notification_for_slot(ws, names, slot, every_slot=False)["params"]["result"]["value"]["block"]["signatures"][-1] == str(signature)  # after the airdrop, if in the same block


def test_solana_py_mentions_filter(node, client):
    payer = funded(client, 10**9)
    watched = Keypair().pubkey()

    async def scenario():
        async with connect(node.ws_url) as ws:
            await ws.block_subscribe(RpcBlockSubscribeFilterMentions(watched), commitment=Confirmed)
            sub = (await ws.recv())[0].result
            tx = legacy_transfer(client, payer, watched)
            client.send_transaction(tx)
            (note,) = await asyncio.wait_for(ws.recv(), 10)
            await ws.block_unsubscribe(sub)
            return note, tx

    note, tx = asyncio.run(scenario())
    assert note.result.value.slot == wait(client, tx.signatures[0]).slot
    assert [t.transaction for t in note.result.value.block.transactions] == [tx]  # base64, decoded by solders


def test_finalized_by_default_once_the_root_passes(node, client):
    """Without a commitment a subscription hears of a block when its slot is rooted, 32
    slots later, the block as getBlock answers it at `finalized`."""
    payer = funded(client, 10**9)
    with PubSub(node.ws_url) as ws:
        sub = ws.subscribe("blockSubscribe", ["all"])
        tx = legacy_transfer(client, payer, Keypair().pubkey())
        client.send_transaction(tx)
        slot = wait(client, tx.signatures[0]).slot
        rpc_call(node.url, "localnetWarpSlots", [40], timeout=10)
        note = notification_for_slot(ws, sub, slot)
        assert note["params"]["result"]["value"]["block"] == block_of(node, slot, encoding="base64", rewards=False)
        assert ws.call("blockUnsubscribe", [sub])["result"] is True


def test_refusals_are_agaves(node, localnet_url):
    with PubSub(node.ws_url) as ws:
        assert ws.call("blockSubscribe", ["all", {"commitment": "processed"}])["error"] == {"code": -32602, "message": "Method does not support commitment below `confirmed`"}
        assert ws.call("blockSubscribe", [{"mentionsAccountOrProgram": "not-a-key"}])["error"] == {"code": -32602, "message": "Invalid Request: Invalid mentions_account_or_program provided"}
        assert ws.call("blockSubscribe", ["some"])["error"]["code"] == -32602
        assert ws.call("blockSubscribe", ["all", {"encoding": "xml"}])["error"]["code"] == -32602
        sub = ws.subscribe("blockSubscribe", ["all", {"commitment": "confirmed"}])
        assert ws.call("blockUnsubscribe", [sub])["result"] is True
        assert ws.call("blockUnsubscribe", [sub])["error"] == {"code": -32602, "message": "Invalid subscription id."}
    # the shared node runs as a validator does by default: no block subscriptions
    with PubSub(ws_url_of(localnet_url)) as ws:
        assert ws.call("blockSubscribe", ["all"])["error"] == {"code": -32601, "message": "Method not found"}
        assert ws.call("blockUnsubscribe", [0])["error"] == {"code": -32601, "message": "Method not found"}
