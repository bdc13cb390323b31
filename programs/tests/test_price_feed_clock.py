"""price_feed's time checks follow the node's Clock sysvar: on a local node of this test
(warping the shared one would expire other tests' blockhashes), the slot a feed records
jumps with the node's slot clock (``localnetWarpSlots``), and the same observation that was
fresh turns stale once the node's clock has moved past ``max_staleness``, while the
updater's numbers stay the same."""

from __future__ import annotations

import time

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed

from programs.tests.feedkit import FeedWorld, landed_slot, node_clock
from localnet.testing import LocalnetProcess, rpc_call

pytestmark = pytest.mark.chain

MAX_STALENESS = 12  # wide enough that the first two updates land in time on a loaded CI machine


@pytest.fixture
def own_chain(tmp_path):
    node = LocalnetProcess(tmp_path / "node").start()
    yield node, Client(node.url, timeout=10, commitment=Confirmed)
    node.stop()


def test_time_checks_use_the_node_clock(own_chain):
    node, chain = own_chain
    world = FeedWorld.new(chain)
    world.create(max_staleness=MAX_STALENESS)
    slot, now = node_clock(chain)
    observed = now

    signature = world.update(1, 100, observed)
    first = world.state()
    assert first.slot == landed_slot(chain, signature) and first.unix_time == chain.get_block_time(first.slot).value >= now

    # The node's slot clock jumps 1,000 slots; its wall time does not: the same observation
    # is still fresh, and the feed records the node's new slot.
    warped = rpc_call(node.url, "localnetWarpSlots", [1_000])["result"]
    assert warped >= slot + 1_000
    signature = world.update(2, 101, observed)
    assert world.state().slot == landed_slot(chain, signature) >= warped

    # Ahead of the node's clock by more than 60 s: refused; the allowance is the node's.
    _, now = node_clock(chain)
    assert world.refused(world.update_ix(3, 102, now + 120)) == "FromFuture"

    # Only the node's clock moves on: the very same observation becomes stale.
    deadline = time.monotonic() + 3 * MAX_STALENESS
    while node_clock(chain)[1] <= observed + MAX_STALENESS + 1:
        assert time.monotonic() < deadline, "the node's clock did not advance"
        time.sleep(0.2)
    assert world.refused(world.update_ix(3, 102, observed)) == "Stale"
    _, now = node_clock(chain)
    world.update(3, 102, now)
    state = world.state()
    assert (state.round, state.observed_at) == (3, now) and state.unix_time >= observed + MAX_STALENESS
    assert [entry.round for entry in state.ring] == [3, 2, 1]
