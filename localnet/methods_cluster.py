"""Cluster information of a one-validator cluster, answered as Agave's rpc.rs answers it
(rpc_minimal getLeaderSchedule, rpc_bank getSlotLeader / getSlotLeaders /
getBlockProduction / getInflationGovernor / getInflationRate, rpc_full
getStakeMinimumDelegation / getMaxRetransmitSlot / getMaxShredInsertSlot).

One identity everywhere (getIdentity, getClusterNodes): the node leads every slot of
every epoch, and produces a block in each (no slot is skipped). Epochs and the leader
schedule offset are getEpochSchedule's: 432,000 slots, so the schedule of an epoch is
known from the start of the epoch before it, as a validator's leader schedule cache
knows it (up to the root's epoch + 1). docs/localnet-cluster.md.
"""

from __future__ import annotations

from .errors import RpcError
from .rpcutil import bad, commitment, config, min_context, param, pubkey, slot_number

SLOTS_PER_EPOCH = 432_000
MAX_GET_SLOT_LEADERS = 5_000  # rpc-client-types request.rs
SLOT_HISTORY_ENTRIES = 1024 * 1024  # the SlotHistory sysvar's bits (solana-slot-history MAX_ENTRIES)
#: The stake program this node runs enforces a minimum delegation of 1 lamport (LiteSVM's
#: runtime, where stake instructions execute, has stake_raise_minimum_delegation_to_1_sol
#: inactive): answered as Agave answers from the same feature gate (docs/localnet-cluster.md).
STAKE_MINIMUM_DELEGATION = 1

#: Agave's default genesis inflation (solana-inflation Inflation::default()).
INFLATION = {"initial": 0.08, "terminal": 0.015, "taper": 0.15, "foundation": 0.05, "foundationTerm": 7.0}
#: Slots per year at the default 160 ticks per second and 64 ticks per slot (400 ms, the
#: node's default slot): years_as_slots(1.0, 6.25 ms, 64), as the bank computes it.
SECONDS_PER_YEAR = 365.242_199 * 24.0 * 60.0 * 60.0
SLOTS_PER_YEAR = SECONDS_PER_YEAR * (1_000_000_000.0 / 6_250_000) / 64


def inflation_total(year: float) -> float:
    tapered = INFLATION["initial"] * (1.0 - INFLATION["taper"]) ** year
    return tapered if tapered > INFLATION["terminal"] else INFLATION["terminal"]


def inflation_foundation(year: float) -> float:
    return inflation_total(year) * INFLATION["foundation"] if year < INFLATION["foundationTerm"] else 0.0


def inflation_rate(epoch: int) -> dict:
    """getInflationRate for ``epoch``: inflation started at slot 0 (every feature active from
    genesis), so the bank's slot_in_year_for_inflation is the first slot of the epoch over
    the slots of a year."""
    year = epoch * SLOTS_PER_EPOCH / SLOTS_PER_YEAR
    total, foundation = inflation_total(year), inflation_foundation(year)
    return {"total": total, "validator": total - foundation, "foundation": foundation, "epoch": epoch}


class ClusterMethods:
    """Mixed into localnet.methods.Methods (which provides node, _ctx and _level)."""

    node: object
    _epoch_slot_indexes: list[int] | None = None

    def _identity(self) -> str:
        return str(self.node.identity)

    def _last_scheduled_epoch(self) -> int:
        """The newest epoch whose leader schedule is known: the root's epoch + 1
        (leaderScheduleSlotOffset = one epoch)."""
        return self.node.root() // SLOTS_PER_EPOCH + 1

    def _schedule_slots(self) -> list[int]:
        # Every slot index of an epoch, built once; shared read-only by every answer.
        if ClusterMethods._epoch_slot_indexes is None:
            ClusterMethods._epoch_slot_indexes = list(range(SLOTS_PER_EPOCH))
        return ClusterMethods._epoch_slot_indexes

    def rpc_getLeaderSchedule(self, params):
        first = param(params, 0)
        cfg = config(params, 1)
        slot = None
        if isinstance(first, dict):  # [config]: the untagged "ConfigOnly" form
            cfg = first
        elif first is not None:
            slot = slot_number(first)
        if cfg.get("identity") is not None:
            pubkey(cfg["identity"], "identity")
        if slot is None:
            slot = self.node.view_slot(commitment(cfg))
        else:
            commitment(cfg)
        if slot // SLOTS_PER_EPOCH > self._last_scheduled_epoch():
            return None
        identity = self._identity()
        if cfg.get("identity") not in (None, identity):
            return {}
        return {identity: self._schedule_slots()}

    def rpc_getSlotLeader(self, params):
        self._level(config(params, 0))
        return self._identity()

    def rpc_getSlotLeaders(self, params):
        start = slot_number(param(params, 0), "start slot")
        limit = slot_number(param(params, 1), "limit")
        if limit > MAX_GET_SLOT_LEADERS:
            raise RpcError(-32602, f"Invalid limit; max {MAX_GET_SLOT_LEADERS}")
        if limit and (start + limit - 1) // SLOTS_PER_EPOCH > self._last_scheduled_epoch():
            unknown = max(start // SLOTS_PER_EPOCH, self._last_scheduled_epoch() + 1)
            raise RpcError(-32602, f"Invalid slot range: leader schedule for epoch {unknown} is unavailable")
        return [self._identity()] * limit

    def rpc_getBlockProduction(self, params):
        cfg = config(params, 0)
        if cfg.get("identity") is not None:
            pubkey(cfg["identity"], "identity")
        newest = self.node.view_slot(commitment(cfg))
        wanted = cfg.get("range")
        if wanted is None:
            first, last = newest - newest % SLOTS_PER_EPOCH, newest
        else:
            if not isinstance(wanted, dict) or "firstSlot" not in wanted:
                raise bad("missing field `firstSlot`")
            first = slot_number(wanted["firstSlot"], "firstSlot")
            last = newest if wanted.get("lastSlot") is None else slot_number(wanted["lastSlot"], "lastSlot")
            if last < first:
                raise RpcError(-32602, f"lastSlot, {last}, cannot be less than firstSlot, {first}")
        oldest = max(0, newest + 1 - SLOT_HISTORY_ENTRIES)
        if first < oldest:
            raise RpcError(-32602, f"firstSlot, {first}, is too small; min {oldest}")
        if last > newest:
            raise RpcError(-32602, f"lastSlot, {last}, is too large; max {newest}")
        # Every slot led by this node, every slot with its block: [leaderSlots, blocksProduced].
        slots = last - first + 1
        identity = self._identity()
        produced = {} if cfg.get("identity") not in (None, identity) else {identity: [slots, slots]}
        return self._ctx({"byIdentity": produced, "range": {"firstSlot": first, "lastSlot": last}}, newest)

    def rpc_getInflationGovernor(self, params):
        commitment(config(params, 0))
        return dict(INFLATION)

    def rpc_getInflationRate(self, params):
        return inflation_rate(self.node.root() // SLOTS_PER_EPOCH)  # the finalized bank's epoch

    def rpc_getStakeMinimumDelegation(self, params):
        cfg = config(params, 0)
        slot = self.node.view_slot(commitment(cfg))
        min_context(cfg, slot)
        return self._ctx(STAKE_MINIMUM_DELEGATION, slot)

    def rpc_getMaxRetransmitSlot(self, params):
        return self.node.slot  # the node makes every shred it would retransmit: the tip

    def rpc_getMaxShredInsertSlot(self, params):
        return self.node.slot
