"""The order within a slot read from getSignaturesForAddress (chain/slot_order.py):
which slots it answers for in full, and what it says when it cannot."""

from __future__ import annotations

from types import SimpleNamespace

from solders.keypair import Keypair
from solders.signature import Signature

from chain import slot_order
from chain.slot_order import SlotOrder, read_slot_order

ADDRESS = str(Keypair().pubkey())


def sig(n: int) -> str:
    return str(Signature(bytes([n]) * 64))


class FakeRpc:
    """Answers getSignaturesForAddress from ``history`` (newest first: (signature, slot))."""

    cluster = "CHAIN_LOCALNET"

    def __init__(self, history: list[tuple[str, int]]):
        self.history, self.calls, self.limits = history, 0, []

    def _page(self, config):
        start = 0 if config.before is None else [s for s, _ in self.history].index(str(config.before)) + 1
        self.calls += 1
        self.limits.append(config.limit)
        return SimpleNamespace(value=[SimpleNamespace(signature=s, slot=slot) for s, slot in self.history[start:start + config.limit]])

    def _batch(self, bodies, parser):
        return [self._page(body.config) for body in bodies]

    def _request(self, body, parser):
        return self._page(body.config)


def test_places_within_a_slot_are_the_chains_oldest_first(monkeypatch):
    history = [(sig(5), 11), (sig(4), 10), (sig(3), 10), (sig(2), 10), (sig(1), 9)]  # newest first
    rpc = FakeRpc(history)
    order = read_slot_order(rpc, {ADDRESS: 10}, {ADDRESS: 3})
    assert rpc.calls == 1 and rpc.limits == [2 * 3 + slot_order.FIRST_PAGE_SLACK]
    assert order.later(ADDRESS, 10, sig(4), sig(2)) is True
    assert order.later(ADDRESS, 10, sig(2), sig(3)) is False
    # A signature of a read slot it does not list executed after the read: after every one listed.
    assert order.later(ADDRESS, 10, sig(3), sig(9)) is False
    assert order.later(ADDRESS, 12, sig(5), sig(4)) is None  # a slot not read
    assert order.later(str(Keypair().pubkey()), 10, sig(4), sig(2)) is None  # an address not read


def test_a_slot_cut_by_the_last_page_is_not_taken_as_complete(monkeypatch):
    history = [(sig(n), 20 - n // 3) for n in range(1, 13)]  # 12 transactions, three a slot, newest first
    monkeypatch.setattr(slot_order, "PAGE", 4)
    monkeypatch.setattr(slot_order, "MAX_PAGES", 2)
    monkeypatch.setattr(slot_order, "FIRST_PAGE_SLACK", 2)
    rpc = FakeRpc(history)
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
