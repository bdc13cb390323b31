"""The order within a slot from what the node states (chain/slot_order.py): its
transactionIndex, else its block, else nothing; which slots a read answers for in full;
and what it says when a read fails."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.rpc.requests import GetBlock
from solders.signature import Signature

from chain import slot_order
from chain.errors import ChainUnavailable
from chain.slot_order import SlotOrder, read_slot_order

ADDRESS = str(Keypair().pubkey())


def sig(n: int) -> str:
    return str(Signature(bytes([n]) * 64))


class FakeRpc:
    """Answers getSignaturesForAddress from ``history`` (newest first: (signature, slot)) and
    getBlock from the same history (a block lists its slot's signatures oldest first).
    ``indexed``: entries carry transactionIndex; ``listed``: how a slot's entries are
    ordered in the array ("block", "reversed", or "signature" as blockstores before 1.18)."""

    cluster = "CHAIN_LOCALNET"

    def __init__(self, history: list[tuple[str, int]], *, indexed: bool = False, listed: str = "block", blocks: str = "ok", signatures: str = "ok"):
        self.history, self.indexed, self.listed, self.blocks, self.signatures = history, indexed, listed, blocks, signatures
        self.calls, self.limits, self.block_slots = 0, [], []

    def _block(self, slot: int) -> list[str]:
        return [s for s, at in reversed(self.history) if at == slot]

    def _array(self) -> list[dict]:
        out = []
        for slot in sorted({at for _, at in self.history}, reverse=True):
            block = self._block(slot)
            newest_first = list(reversed(block))
            if self.listed == "reversed":
                newest_first.reverse()
            elif self.listed == "signature":
                newest_first.sort()
            for s in newest_first:
                entry = {"signature": s, "slot": slot, "err": None, "memo": None, "blockTime": None, "confirmationStatus": "confirmed"}
                if self.indexed:
                    entry["transactionIndex"] = block.index(s)
                out.append(entry)
        return out

    def _page(self, body, index: int) -> dict:
        if self.signatures == "error":
            return {"jsonrpc": "2.0", "id": index, "error": {"code": -32603, "message": "internal"}}
        config = body.config
        array = self._array()
        start = 0 if config.before is None else [e["signature"] for e in array].index(str(config.before)) + 1
        self.calls += 1
        self.limits.append(config.limit)
        return {"jsonrpc": "2.0", "id": index, "result": array[start:start + config.limit]}

    def _block_answer(self, body, index: int) -> dict:
        self.block_slots.append(body.slot)
        if self.blocks == "error":
            return {"jsonrpc": "2.0", "id": index, "error": {"code": -32004, "message": f"Block not available for slot {body.slot}"}}
        return {"jsonrpc": "2.0", "id": index, "result": {"blockhash": "x", "signatures": self._block(body.slot)}}

    def _batch(self, bodies, parser):
        if isinstance(bodies[0], GetBlock):
            if self.blocks == "down":
                raise ChainUnavailable("The RPC endpoint of CHAIN_LOCALNET did not answer: ReadTimeout.")
            return [self._block_answer(body, i) for i, body in enumerate(bodies)]
        if self.signatures == "down":
            raise ChainUnavailable("The RPC endpoint of CHAIN_LOCALNET did not answer: ReadTimeout.")
        return [self._page(body, i) for i, body in enumerate(bodies)]


HISTORY = [(sig(5), 11), (sig(4), 10), (sig(3), 10), (sig(2), 10), (sig(1), 9)]  # newest first: 2, 3, 4 in slot 10 in that order


def assert_slot_10_in_chain_order(order: SlotOrder) -> None:
    assert order.later(ADDRESS, 10, sig(4), sig(2)) is True
    assert order.later(ADDRESS, 10, sig(2), sig(3)) is False
    assert order.later(ADDRESS, 10, sig(3), sig(2)) is True


@pytest.mark.parametrize("listed", ["block", "reversed", "signature"])
def test_the_transaction_index_places_them_whatever_the_array_order(listed):
    rpc = FakeRpc(HISTORY, indexed=True, listed=listed)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 3})
    assert rpc.calls == 1 and rpc.limits == [2 * 3 + slot_order.FIRST_PAGE_SLACK] and rpc.block_slots == []
    assert_slot_10_in_chain_order(order)
    assert order.sources == {"index": 1} and order.failures == []
    # A signature of a read slot it does not list executed after the read: after every one listed.
    assert order.later(ADDRESS, 10, sig(3), sig(9)) is False
    assert order.later(ADDRESS, 12, sig(5), sig(4)) is None  # a slot not read
    assert order.later(str(Keypair().pubkey()), 10, sig(4), sig(2)) is None  # an address not read


@pytest.mark.parametrize("listed", ["block", "reversed", "signature"])
def test_without_an_index_the_block_places_them_and_the_array_order_is_never_taken(listed):
    rpc = FakeRpc(HISTORY, listed=listed)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 3}, {ADDRESS: {10}})
    assert rpc.block_slots == [10]  # only the slot of the pass where two listed transactions share it
    assert_slot_10_in_chain_order(order)
    assert order.sources == {"block": 1} and order.failures == []


@pytest.mark.parametrize("blocks", ["error", "down"])
def test_without_an_index_or_a_block_the_order_is_unknown(blocks):
    rpc = FakeRpc(HISTORY, listed="reversed", blocks=blocks)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 3}, {ADDRESS: {10}})
    assert rpc.block_slots == ([10] if blocks == "error" else [])
    for signature, than in ((sig(4), sig(2)), (sig(2), sig(4)), (sig(3), sig(9))):
        assert order.later(ADDRESS, 10, signature, than) is None
    assert order.later(ADDRESS, 11, sig(5), sig(9)) is False  # alone in its slot, read in full: still placed
    assert order.sources == {"unknown": 1} and len(order.failures) == 1


@pytest.mark.parametrize("signatures", ["error", "down"])
def test_a_failed_signatures_read_leaves_everything_unknown_and_does_not_raise(signatures):
    rpc = FakeRpc(HISTORY, indexed=True, signatures=signatures)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 3})
    assert order.places == {} and len(order.failures) == 1 and rpc.block_slots == []
    assert order.later(ADDRESS, 10, sig(4), sig(2)) is None


def test_blocks_are_read_only_for_the_pass_slots_and_at_most_max_blocks(monkeypatch):
    history = [(sig(n), 100 - n // 2) for n in range(1, 21)]  # two a slot, newest first: slots 90..100
    monkeypatch.setattr(slot_order, "MAX_BLOCKS", 3)
    rpc = FakeRpc(history, listed="signature")
    wanted = {91, 93, 95, 97, 99}
    order = read_slot_order(rpc, {ADDRESS: 90}, {ADDRESS: 10}, {ADDRESS: wanted})
    assert rpc.block_slots == [95, 97, 99]  # one batch, the newest of the pass's slots
    assert order.sources == {"block": 3, "unknown": 2}
    for slot in (95, 97, 99):
        older, newer = [s for s, at in reversed(history) if at == slot]
        assert order.later(ADDRESS, slot, newer, older) is True
    older, newer = [s for s, at in reversed(history) if at == 91]
    assert order.later(ADDRESS, 91, newer, older) is None
    assert (ADDRESS, 92) not in order.places  # not a slot of the pass: nothing asked


def test_a_slot_cut_by_the_last_page_is_not_taken_as_complete(monkeypatch):
    history = [(sig(n), 20 - n // 3) for n in range(1, 13)]  # 12 transactions, three a slot, newest first
    monkeypatch.setattr(slot_order, "PAGE", 4)
    monkeypatch.setattr(slot_order, "MAX_PAGES", 2)
    monkeypatch.setattr(slot_order, "FIRST_PAGE_SLACK", 2)
    rpc = FakeRpc(history, indexed=True)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 1})  # far older than two pages of 4 reach
    assert rpc.calls == 2 and rpc.limits == [4, 4]
    read = [s for s, _ in history[:8]]
    cut = history[7][1]  # the slot of the last one read: partly listed
    assert (ADDRESS, cut) not in order.complete and all((ADDRESS, slot) in order.complete for s, slot in history[:8] if slot > cut)
    # Within the partly listed slot, the listed ones still have their order; one not listed is unknown.
    listed = [s for s, slot in history[:8] if slot == cut]
    if len(listed) >= 2:
        assert order.later(ADDRESS, cut, listed[0], listed[-1]) is True
    assert order.later(ADDRESS, cut, read[-1], sig(99)) is None


def test_a_first_page_that_does_not_reach_the_oldest_slot_is_read_on(monkeypatch):
    history = [(sig(n), 100 - n) for n in range(1, 40)]  # one a slot, newest first
    monkeypatch.setattr(slot_order, "FIRST_PAGE_SLACK", 4)
    rpc = FakeRpc(history)
    order = read_slot_order(rpc, {ADDRESS: 80}, {ADDRESS: 1})
    assert rpc.limits == [6, 12, 24]  # 6 reach slot 94, 18 slot 82, 42 past 80
    assert (ADDRESS, 80) in order.complete and order.later(ADDRESS, 80, sig(20), sig(99)) is False


def test_nothing_is_read_when_no_recorded_balance_moved():
    rpc = FakeRpc([])
    assert read_slot_order(rpc, {}) == SlotOrder() and rpc.calls == 0
