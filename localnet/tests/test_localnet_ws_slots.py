"""slotsUpdatesSubscribe on the local node's PubSub websocket (issue 37), through solana-py's
websocket client (solders parses every update type) and on the wire: what a single
leader's slot advance implies, in Agave's order per slot — createdBank, completed,
frozen (with the slot's transaction stats), optimisticConfirmation, then root 32 slots
later — and its unsubscribe (agave rpc_pubsub.rs, rpc-client-types SlotUpdate)."""

from __future__ import annotations

import asyncio

import pytest
from solana.rpc.commitment import Confirmed
from solana.rpc.types import TxOpts
from solana.rpc.websocket_api import connect
from solders.keypair import Keypair
from solders.message import Message
from solders.rpc.responses import SlotUpdateCompleted, SlotUpdateCreatedBank, SlotUpdateFrozen, SlotUpdateOptimisticConfirmation, SlotUpdateRoot
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from localnet.testing import rpc_call
from transactions.tests.chainkit import funded, next_slot, wait
from localnet.tests.wskit import PubSub, ws_url_of

pytestmark = pytest.mark.chain
ORDER = [SlotUpdateCreatedBank, SlotUpdateCompleted, SlotUpdateFrozen, SlotUpdateOptimisticConfirmation]


def _transfer(chain, payer: Keypair, lamports: int) -> VersionedTransaction:
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=lamports))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    return VersionedTransaction(message, [payer])


def test_solana_py_follows_every_slot_in_agaves_order(chain, localnet_url):
    """Each slot's updates arrive in Agave's order; frozen's stats count the slot's block
    (a succeeded and a failed transaction); root follows the tip by 32 slots."""
    payer = funded(chain, 10**9)
    while chain.get_slot(Confirmed).value < 34:  # a fresh node: let the root move
        next_slot(chain)
    ok, failing = _transfer(chain, payer, 1), _transfer(chain, payer, 10**12)  # the second: insufficient lamports

    async def scenario():
        async with connect(ws_url_of(localnet_url)) as ws:
            await ws.slots_updates_subscribe()
            sub = (await ws.recv())[0].result
            good = chain.send_transaction(ok).value
            bad = chain.send_transaction(failing, opts=TxOpts(skip_preflight=True)).value
            slots = {wait(chain, good).slot, wait(chain, bad).slot}
            per_slot: dict[int, list] = {}
            roots: list[tuple[int, int]] = []  # (root, the slot created with it)
            created = None
            frozen = lambda s: any(isinstance(u, SlotUpdateFrozen) for u in per_slot.get(s, []))  # noqa: E731
            while not all(frozen(s) for s in slots) or not roots:
                for note in await asyncio.wait_for(ws.recv(), 10):
                    assert note.subscription == sub
                    update = note.result
                    if isinstance(update, SlotUpdateRoot):
                        roots.append((update.slot, created))
                        continue
                    if isinstance(update, SlotUpdateCreatedBank):
                        created = update.slot
                        assert update.parent == update.slot - 1
                    per_slot.setdefault(update.slot, []).append(update)
            await ws.slots_updates_unsubscribe(sub)
            return per_slot, roots, slots

    per_slot, roots, slots = asyncio.run(scenario())
    for slot, updates in per_slot.items():
        kinds = [type(u) for u in updates]
        # The slot open when the subscription began misses only its createdBank; the last
        # one seen may not be over yet.
        expected = ORDER[:len(kinds)] if kinds[0] is SlotUpdateCreatedBank else ORDER[1:]
        assert kinds == expected, (slot, kinds)
        assert all(u.timestamp > 1_600_000_000_000 for u in updates)  # milliseconds
    for root, created in roots:
        assert root == created - 32
    for slot in slots:
        # solana-py's get_block reads at `finalized`: the block at `confirmed`, raw
        transactions = rpc_call(localnet_url, "getBlock", [slot, {"commitment": "confirmed", "maxSupportedTransactionVersion": 0}], timeout=10)["result"]["transactions"]
        failed = sum(1 for tx in transactions if tx["meta"]["err"] is not None)
        (frozen,) = [u for u in per_slot[slot] if isinstance(u, SlotUpdateFrozen)]
        stats = frozen.stats
        assert (stats.num_transaction_entries, stats.num_successful_transactions, stats.num_failed_transactions) == (len(transactions), len(transactions) - failed, failed)
        assert stats.max_transactions_per_entry == 1  # each transaction runs alone: an entry each
    assert any(u.stats.num_failed_transactions for s in slots for u in per_slot[s] if isinstance(u, SlotUpdateFrozen))


def test_slots_updates_on_the_wire_and_unsubscribe(localnet_url):
    with PubSub(ws_url_of(localnet_url)) as ws:
        sub = ws.subscribe("slotsUpdatesSubscribe")
        notes = [ws.notification(sub) for _ in range(5)]
        assert all(set(n) == {"jsonrpc", "method", "params"} and n["method"] == "slotsUpdatesNotification" and set(n["params"]) == {"result", "subscription"} for n in notes)
        fields = {"createdBank": {"type", "slot", "parent", "timestamp"}, "completed": {"type", "slot", "timestamp"}, "frozen": {"type", "slot", "timestamp", "stats"},
                  "optimisticConfirmation": {"type", "slot", "timestamp"}, "root": {"type", "slot", "timestamp"}}
        for note in notes:
            update = note["params"]["result"]
            assert set(update) == fields[update["type"]], update
            if update["type"] == "frozen":
                assert set(update["stats"]) == {"numTransactionEntries", "numSuccessfulTransactions", "numFailedTransactions", "maxTransactionsPerEntry"}
        assert ws.call("slotsUpdatesUnsubscribe", [sub]) == {"jsonrpc": "2.0", "result": True, "id": ws.next_id - 1}
        assert ws.call("slotsUpdatesUnsubscribe", [sub])["error"] == {"code": -32602, "message": "Invalid subscription id."}
        ws.backlog.clear()
        assert ws.nothing_for(sub, 1.0)
