"""Balances of two transactions of one slot, applied backwards, from what the node states
about their order (chain/slot_order.py) — never from getSignaturesForAddress's array order.

The node under test is wrapped so that each slot's entries come in the wrong order (reversed:
a blockstore before Agave 1.18 listed them by signature, which is wrong for two transactions
half the time; reversed always is). Then: with ``transactionIndex`` the index places them;
without it, getBlock does; without both, nothing does and the balance takes the safe path of
transactions.effects.moves_balance. Each ends with no drift (positions/reconcile.py) and the
balances the chain holds, read with an unmodified solana-py client."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from solders.rpc.requests import GetBlock, GetSignaturesForAddress

from chain.errors import ChainUnavailable
from chain.rpc import rpc_for
from positions.reconcile import reconcile
from tests.workers import paused_workers
from transactions import settlement
from transactions.effects import static_addresses
from transactions.models import TransactionStatus
from transactions.tests.chainkit import next_slot

from .movekit import balance
from .test_balance_order import funded_positions, history, landed_slot, sent_token_transfer, two_owners  # noqa: F401 - fixtures

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"


@contextmanager
def node_stating(monkeypatch, stated: str):
    """The cluster's client, its getSignaturesForAddress answers re-ordered within each slot;
    ``stated``: "index" (entries keep transactionIndex), "block" (they lose it; getBlock
    answers), "nothing" (they lose it and getBlock does not answer)."""
    rpc = rpc_for(CLUSTER)
    real = rpc._batch
    asked: list[str] = []

    def batch(bodies, parser):
        kind = type(bodies[0]).__name__ if bodies else ""
        asked.append(kind)
        if isinstance(bodies[0], GetBlock) and stated == "nothing":
            raise ChainUnavailable(f"The RPC endpoint of {CLUSTER} did not answer: ReadTimeout.")
        answers = real(bodies, parser)
        if isinstance(bodies[0], GetSignaturesForAddress):
            for answer in answers:
                entries = answer.get("result") or []
                by_slot: dict[int, list[dict]] = {}
                for entry in entries:
                    by_slot.setdefault(entry["slot"], []).append(entry)
                    if stated != "index":
                        entry.pop("transactionIndex", None)
                answer["result"] = [entry for slot in sorted(by_slot, reverse=True) for entry in reversed(by_slot[slot])]
        return answers

    with monkeypatch.context() as patch:
        patch.setattr(rpc, "_batch", batch)
        yield asked


def two_in_one_slot(tenant, chain, first_args, second_args):
    """Two transfers the service sent that landed in one slot (4 tries, each in a fresh slot),
    and how many tries that took: a try that missed moved the balances too (its transfers
    are applied in order), so what the positions hold at the end depends on it."""
    for attempt in range(1, 5):
        next_slot(chain)  # a fresh slot: 400 ms for both sends
        first = sent_token_transfer(tenant, chain, *first_args)
        second = sent_token_transfer(tenant, chain, *second_args)
        if landed_slot(chain, first) == landed_slot(chain, second):
            return first, second, attempt
        for tx in (first, second):  # not one slot: apply in order and try again
            settlement.transaction_confirm(transaction_id=tx.pk)
    pytest.fail("two sends never landed in one slot")


def assert_no_drift(chain, txs, positions, expected: dict) -> None:
    """No drift (lamports or token amounts) in any record the transactions name but the fee
    payer (the platform's, which other test processes spend from too), and the positions'
    balances are the chain's."""
    named = {address for tx in txs for address in static_addresses(tx)[1:]}
    assert [d.as_dict() for d in reconcile(cluster=CLUSTER).drift if d.address in named] == []
    assert {p.address for p in positions} <= named
    for pos in positions:
        pos.refresh_from_db()
        pos.account.refresh_from_db()
        assert int(pos.account.token_balance) == expected[pos.pk] == balance(chain, pos.address)


@pytest.mark.parametrize("stated", ["index", "block"])
@pytest.mark.django_db(transaction=True)
def test_a_round_trip_in_one_slot_listed_backwards_keeps_the_chains_balances(api, tenant, chain, two_owners, monkeypatch, stated):  # noqa: F811
    """Alice pays Bob 200 and Bob pays it back in one slot, applied backwards: the balances'
    own values cannot place the two, so only the node's statement of the order can."""
    (alice, a_pos), (bob, b_pos) = two_owners
    with paused_workers():  # this test confirms them itself, in the order it chooses
        there, back, _tries = two_in_one_slot(tenant, chain, (alice, a_pos, b_pos, 200), (bob, b_pos, a_pos, 200))  # there and back: no net move
        with node_stating(monkeypatch, stated) as asked:
            for tx in (back, there):
                settlement.transaction_confirm(transaction_id=tx.pk)
    assert ("GetBlock" in asked) == (stated == "block")
    there.refresh_from_db()
    back.refresh_from_db()
    assert there.status == back.status == TransactionStatus.CONFIRMED and there.slot == back.slot
    assert_no_drift(chain, [there, back], [a_pos, b_pos], {a_pos.pk: 10_000, b_pos.pk: 0})
    assert history(a_pos)[-1] == (back.pk, 10_000) and history(b_pos)[-1] == (back.pk, 0)


@pytest.mark.parametrize("stated", ["index", "block", "nothing"])
@pytest.mark.django_db(transaction=True)
def test_two_payments_in_one_slot_listed_backwards_keep_the_chains_balances(api, tenant, chain, funded_positions, monkeypatch, stated):  # noqa: F811
    """Alice pays Bob 200 then 300 in one slot, applied backwards. Listed backwards and
    taken as listed, the first would overwrite the second (drift: 9,800 / 200 against the
    chain's 9,500 / 500). With nothing stated, the balances' distinct values place them."""
    owner, source, destination = funded_positions
    with paused_workers():
        first, second, tries = two_in_one_slot(tenant, chain, (owner, source, destination, 200), (owner, source, destination, 300))
        with node_stating(monkeypatch, stated) as asked:
            for tx in (second, first):
                settlement.transaction_confirm(transaction_id=tx.pk)
    assert ("GetBlock" in asked) == (stated != "index")
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == second.status == TransactionStatus.CONFIRMED and first.slot == second.slot
    # 500 moved a try: on a loaded machine a try can miss its slot (a full run here took 4).
    before = 500 * (tries - 1)
    assert_no_drift(chain, [first, second], [source, destination], {source.pk: 10_000 - before - 500, destination.pk: before + 500})
    assert history(destination)[-2:] == [(first.pk, before + 200), (second.pk, before + 500)]
    assert history(source)[-2:] == [(first.pk, 10_000 - before - 200), (second.pk, 10_000 - before - 500)]
