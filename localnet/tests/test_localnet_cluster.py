"""Cluster information of the one-validator local cluster (issue 37), through the unmodified
solana-py Client and solders' request and response types where they exist (raw JSON-RPC
for the errors and for getStakeMinimumDelegation, which solders has no type for), held to
Agave's rpc.rs: the node's one identity leads every slot and produces every block;
inflation is the default genesis governor; the stake minimum is what the node's stake
program enforces (docs/localnet-cluster.md)."""

from __future__ import annotations

import pytest
from solana.rpc.commitment import Confirmed
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.commitment_config import CommitmentLevel
from solders.pubkey import Pubkey
from solders.rpc.config import RpcBlockProductionConfig, RpcBlockProductionConfigRange
from solders.rpc.requests import GetBlockProduction, GetMaxRetransmitSlot, GetMaxShredInsertSlot
from solders.rpc.responses import GetBlockProductionResp, GetMaxRetransmitSlotResp, GetMaxShredInsertSlotResp
from solders.transaction import VersionedTransaction

from localnet.methods_cluster import STAKE_MINIMUM_DELEGATION, inflation_rate
from localnet.node import Node
from localnet.testing import rpc_call
from transactions.tests.chainkit import next_slot

pytestmark = pytest.mark.chain
EPOCH = 432_000
STAKE = Pubkey.from_string("Stake11111111111111111111111111111111111111")


def rpc(url: str, method: str, *params) -> dict:
    return rpc_call(url, method, list(params), timeout=20)


def identity_of(chain) -> Pubkey:
    identity = chain.get_identity().value.identity
    assert [node.pubkey for node in chain.get_cluster_nodes().value] == [identity]  # one node, one identity
    return identity


def test_leader_schedule_names_the_node_for_every_slot_of_the_epoch(chain, localnet_url):
    identity = identity_of(chain)
    info = chain.get_epoch_info().value
    assert info.slots_in_epoch == chain.get_epoch_schedule().value.slots_per_epoch == EPOCH
    every_slot = list(range(EPOCH))
    assert chain.get_leader_schedule().value == {identity: every_slot}
    assert chain.get_leader_schedule(0, Confirmed).value == {identity: every_slot}
    # The next epoch's schedule is known already (leaderScheduleSlotOffset: one epoch), the
    # one after it not yet: null, as a validator's leader schedule cache answers.
    assert chain.get_leader_schedule(EPOCH + 5).value == {identity: every_slot}
    assert chain.get_leader_schedule((info.epoch + 2) * EPOCH).value is None
    assert rpc(localnet_url, "getLeaderSchedule", {"identity": str(identity)})["result"] == {str(identity): every_slot}
    assert rpc(localnet_url, "getLeaderSchedule", None, {"identity": str(Keypair().pubkey())})["result"] == {}
    assert rpc(localnet_url, "getLeaderSchedule", None, {"identity": "not-a-key"})["error"]["code"] == -32602


def test_slot_leader_and_slot_leaders(chain, localnet_url):
    identity = identity_of(chain)
    assert chain.get_slot_leader().value == identity
    assert chain.get_slot_leader(Confirmed).value == identity
    start = chain.get_slot(Confirmed).value
    assert chain.get_slot_leaders(start, 10).value == [identity] * 10
    assert chain.get_slot_leaders(0, 5000).value == [identity] * 5000
    assert rpc(localnet_url, "getSlotLeaders", 0, 0)["result"] == []
    assert rpc(localnet_url, "getSlotLeaders", 0, 5001)["error"] == {"code": -32602, "message": "Invalid limit; max 5000"}
    # The next epoch's slots are known, the one after it not: a range reaching into it is refused.
    unknown = chain.get_epoch_info().value.epoch + 2
    assert rpc(localnet_url, "getSlotLeaders", unknown * EPOCH - 5, 5)["result"] == [str(identity)] * 5
    assert rpc(localnet_url, "getSlotLeaders", unknown * EPOCH - 5, 10)["error"] == {"code": -32602, "message": f"Invalid slot range: leader schedule for epoch {unknown} is unavailable"}
    assert rpc(localnet_url, "getSlotLeader", {"minContextSlot": 10**12})["error"]["code"] == -32016


def test_block_production_counts_a_block_in_every_slot(chain, localnet_url):
    identity = identity_of(chain)
    answer = chain._provider.make_request(GetBlockProduction(), GetBlockProductionResp)
    finalized = answer.context.slot
    first = finalized - finalized % EPOCH
    assert answer.value.range.first_slot == first and answer.value.range.last_slot == finalized  # the epoch so far
    slots = finalized - first + 1
    assert answer.value.by_identity == {identity: (slots, slots)}  # (leaderSlots, blocksProduced)
    while chain.get_slot(Confirmed).value < 10:  # a fresh node: slots 5..9 behind the tip
        next_slot(chain)
    ranged = chain._provider.make_request(GetBlockProduction(RpcBlockProductionConfig(range=RpcBlockProductionConfigRange(5, 9), commitment=CommitmentLevel.Confirmed)), GetBlockProductionResp)
    assert ranged.value.by_identity == {identity: (5, 5)} and (ranged.value.range.first_slot, ranged.value.range.last_slot) == (5, 9)
    confirmed = rpc(localnet_url, "getBlockProduction", {"commitment": "confirmed", "range": {"firstSlot": 3}})["result"]
    tip = confirmed["context"]["slot"]
    assert tip >= finalized and confirmed["value"] == {"byIdentity": {str(identity): [tip - 2, tip - 2]}, "range": {"firstSlot": 3, "lastSlot": tip}}
    other = rpc(localnet_url, "getBlockProduction", {"identity": str(Keypair().pubkey()), "commitment": "confirmed", "range": {"firstSlot": 0, "lastSlot": 4}})["result"]["value"]
    assert other == {"byIdentity": {}, "range": {"firstSlot": 0, "lastSlot": 4}}
    assert rpc(localnet_url, "getBlockProduction", {"range": {"firstSlot": 9, "lastSlot": 5}})["error"] == {"code": -32602, "message": "lastSlot, 5, cannot be less than firstSlot, 9"}
    too_large = rpc(localnet_url, "getBlockProduction", {"range": {"firstSlot": 0, "lastSlot": 10**9}})["error"]
    assert too_large["code"] == -32602 and too_large["message"].startswith("lastSlot, 1000000000, is too large; max ")


def test_inflation_is_the_default_genesis_governor(chain, localnet_url):
    governor = chain.get_inflation_governor().value
    assert (governor.initial, governor.terminal, governor.taper, governor.foundation, governor.foundation_term) == (0.08, 0.015, 0.15, 0.05, 7.0)
    assert rpc(localnet_url, "getInflationGovernor", {"commitment": "confirmed"})["result"] == {"initial": 0.08, "terminal": 0.015, "taper": 0.15, "foundation": 0.05, "foundationTerm": 7.0}
    rate = chain.get_inflation_rate().value
    epoch = chain.get_epoch_info().value.epoch  # the finalized bank's, as getInflationRate reads
    assert {"total": rate.total, "validator": rate.validator, "foundation": rate.foundation, "epoch": rate.epoch} == expected_rate(epoch)
    if epoch == 0:  # a fresh node: the initial rate, 5% of it the foundation's
        assert (rate.total, rate.foundation, rate.validator) == (0.08, 0.08 * 0.05, 0.08 - 0.08 * 0.05)


def expected_rate(epoch: int) -> dict:
    """Agave's Inflation::total / foundation at slot_in_year = first slot of the epoch over
    78,892,314.984 slots a year (160 ticks/s, 64 ticks a slot), inflation from slot 0."""
    year = epoch * EPOCH / (365.242_199 * 24 * 60 * 60 * 160 / 64)
    total = max(0.08 * 0.85 ** year, 0.015)
    foundation = total * 0.05 if year < 7 else 0.0
    return {"total": total, "validator": total - foundation, "foundation": foundation, "epoch": epoch}


def test_inflation_rate_tapers_by_the_year_of_the_epoch():
    for epoch in (0, 1, 100, 400, 1_000, 5_000):
        assert inflation_rate(epoch) == expected_rate(epoch)
    assert inflation_rate(5_000)["total"] == 0.015 and inflation_rate(5_000)["foundation"] == 0.0


def test_stake_minimum_delegation_is_answered_in_its_shape(localnet_url):
    answer = rpc(localnet_url, "getStakeMinimumDelegation")["result"]
    assert set(answer) == {"context", "value"} and set(answer["context"]) == {"slot", "apiVersion"} and answer["value"] == 1
    assert rpc(localnet_url, "getStakeMinimumDelegation", {"commitment": "confirmed"})["result"]["context"]["slot"] >= answer["context"]["slot"]
    assert rpc(localnet_url, "getStakeMinimumDelegation", {"minContextSlot": 10**12})["error"]["code"] == -32016


def test_stake_minimum_delegation_is_what_the_nodes_stake_program_enforces(tmp_path):
    """The stake program's own GetMinimumDelegation (instruction 13, the amount as return
    data), run on the runtime the node executes stake instructions on, says what
    getStakeMinimumDelegation answers. In-process: the node's simulateTransaction does not
    return returnData yet."""
    node = Node(tmp_path / "data")
    try:
        message = Message.new_with_blockhash([Instruction(STAKE, (13).to_bytes(4, "little"), [])], node.faucet.pubkey(), node.svm.latest_blockhash())
        simulated = node._runtime_for(message).simulate_transaction(VersionedTransaction(message, [node.faucet]))
        data = simulated.meta().return_data()
        assert data.program_id == STAKE and int.from_bytes(bytes(data.data), "little") == STAKE_MINIMUM_DELEGATION == 1
    finally:
        node.stop()


def test_max_retransmit_and_shred_insert_slots_are_the_tip(chain):
    before = chain.get_slot(Confirmed).value
    retransmit = chain._provider.make_request(GetMaxRetransmitSlot(), GetMaxRetransmitSlotResp).value
    shred = chain._provider.make_request(GetMaxShredInsertSlot(), GetMaxShredInsertSlotResp).value
    after = chain.get_slot(Confirmed).value
    assert before <= retransmit <= shred <= after
