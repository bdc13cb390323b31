"""Solana JSON-RPC methods of the local node, in the standard request/response shapes.

Every method that takes a commitment reads the bank it names (node.view_slot: the tip for
`processed` and `confirmed`, the root for `finalized`, a validator's default), answers
with that bank's slot as its context, and checks `minContextSlot` against it
(docs/localnet.md, Commitment). Account and token methods: methods_accounts.py; history
and blocks: methods_history.py; the providers' getPriorityFeeEstimate: methods_fees.py;
leaders, block production, inflation and stake: methods_cluster.py.
"""

from __future__ import annotations

import base64

from solders.message import from_bytes_versioned

from ledger_project.base58 import b58decode

from . import simulation
from .methods_accounts import AccountMethods
from .methods_cluster import SLOTS_PER_EPOCH, ClusterMethods
from .methods_fees import FeeMethods
from .methods_history import HistoryMethods
from .errors import RpcError
from .node import Node
from .rpcutil import bad, commitment, config, min_context, param, pubkey, signature, slot_number

VERSION = {"solana-core": "2.2.0", "feature-set": 3294202862}
MAX_PERF_SAMPLES = 720
MAX_SIGNATURE_STATUSES = 256
#: One network packet: the largest wire transaction a validator accepts, and the longest
#: text of it each encoding takes (the reference RPC's limits and messages).
PACKET_DATA_SIZE = 1232
_MAX_ENCODED = {"base58": 1683, "base64": 1644}
_WIRE_TYPE = "solana_sdk::transaction::versioned::VersionedTransaction"


class Methods(AccountMethods, HistoryMethods, FeeMethods, ClusterMethods):
    def __init__(self, node: Node):
        self.node = node
        #: "host:port" of the RPC and PubSub servers (getClusterNodes), set by the server
        self.rpc_address: str | None = None
        self.pubsub_address: str | None = None

    def dispatch(self, method: str, params) -> object:
        if params is None:
            params = []
        if not isinstance(params, list):
            raise bad("params must be an array")
        handler = getattr(self, f"rpc_{method}", None) if isinstance(method, str) else None
        if handler is None:
            raise RpcError(-32601, "Method not found")
        try:
            return handler(params)
        except RpcError:
            raise
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise bad(str(exc))

    # --- context --------------------------------------------------------------------------
    def _view(self, cfg: dict, *, check_min: bool = True) -> tuple[int, int | None]:
        """(context slot, slot to read accounts at: None for the tip) for a request's
        commitment; refuses a `minContextSlot` that bank has not reached."""
        level = commitment(cfg)
        slot = self.node.view_slot(level)
        if check_min:
            min_context(cfg, slot)
        return slot, (None if slot == self.node.slot else slot)

    def _ctx(self, value, slot: int | None = None) -> dict:
        return {"context": {"slot": self.node.slot if slot is None else slot, "apiVersion": VERSION["solana-core"]}, "value": value}

    def _level(self, cfg: dict) -> str:
        level = commitment(cfg)
        min_context(cfg, self.node.view_slot(level))
        return level

    # --- cluster --------------------------------------------------------------------------
    def rpc_getVersion(self, params):
        return VERSION

    def rpc_getHealth(self, params):
        return "ok"

    def rpc_getGenesisHash(self, params):
        return self.node.genesis_hash

    def rpc_getIdentity(self, params):
        return {"identity": str(self.node.identity)}

    def rpc_getSlot(self, params):
        return self.node.view_slot(self._level(config(params, 0)))

    def rpc_localnetWarpSlots(self, params):
        """Not a Solana method: advance the slot clock by params[0] slots (1..10000) at once
        and answer the new slot (docs/localnet.md, "Slots and blockhashes")."""
        count = param(params, 0)
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 10_000:
            raise bad("expected a number of slots from 1 to 10000")
        return self.node.warp(count)

    def rpc_localnetWarpClock(self, params):
        """Not a Solana method: move the Clock's unix time params[0] seconds (1..3,153,600,000,
        a century) ahead for good, in a new slot, and answer the new unix time
        (docs/localnet.md, "Slots and blockhashes")."""
        seconds = param(params, 0)
        if not isinstance(seconds, int) or isinstance(seconds, bool) or not 1 <= seconds <= 3_153_600_000:
            raise bad("expected a number of seconds from 1 to 3153600000")
        return self.node.warp_clock(seconds)

    def rpc_getBlockHeight(self, params):
        return self.node.view_slot(self._level(config(params, 0)))  # block height = slot: no slot is skipped

    def rpc_getTransactionCount(self, params):
        return self.node.transaction_count_at(self.node.view_slot(self._level(config(params, 0))))

    def rpc_getEpochInfo(self, params):
        slot = self.node.view_slot(self._level(config(params, 0)))
        return {"absoluteSlot": slot, "blockHeight": slot, "epoch": slot // SLOTS_PER_EPOCH, "slotIndex": slot % SLOTS_PER_EPOCH, "slotsInEpoch": SLOTS_PER_EPOCH,
                "transactionCount": self.node.transaction_count_at(slot)}

    def rpc_getEpochSchedule(self, params):
        return {"slotsPerEpoch": SLOTS_PER_EPOCH, "leaderScheduleSlotOffset": SLOTS_PER_EPOCH, "warmup": False, "firstNormalEpoch": 0, "firstNormalSlot": 0}

    def rpc_getLatestBlockhash(self, params):
        level = self._level(config(params, 0))
        blockhash, last_valid = self.node.latest_blockhash(level)
        return self._ctx({"blockhash": blockhash, "lastValidBlockHeight": last_valid}, self.node.view_slot(level))

    def rpc_isBlockhashValid(self, params):
        if not params or not isinstance(params[0], str):
            raise bad("expected a blockhash")
        level = self._level(config(params, 1))
        return self._ctx(self.node.blockhash_valid(params[0], level), self.node.view_slot(level))

    def rpc_getFeeForMessage(self, params):
        if not params or not isinstance(params[0], str):
            raise bad("expected a base64 message")
        level = self._level(config(params, 1))
        message = from_bytes_versioned(base64.b64decode(params[0]))
        blockhash = str(message.recent_blockhash)
        if not self.node.blockhash_valid(blockhash, level) and not self.node.nonce_ok(message, blockhash):
            return self._ctx(None, self.node.view_slot(level))
        return self._ctx(self.node.fee(message).total, self.node.view_slot(level))

    def rpc_getRecentPrioritizationFees(self, params):
        addresses = param(params, 0, [])
        if not isinstance(addresses, list) or len(addresses) > 128:
            raise bad("too many addresses (max 128)")
        return self.node.prioritization_fees([str(pubkey(a)) for a in addresses])

    def rpc_getMinimumBalanceForRentExemption(self, params):
        size = param(params, 0)
        if not isinstance(size, int) or size < 0:
            raise bad("expected a data length")
        return self.node.minimum_balance(size)

    def rpc_getRecentPerformanceSamples(self, params):
        limit = param(params, 0, MAX_PERF_SAMPLES)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0 or limit > MAX_PERF_SAMPLES:
            raise RpcError(-32602, f"Invalid limit; max {MAX_PERF_SAMPLES}")
        return [{"slot": slot, "numTransactions": count, "numNonVoteTransactions": non_vote, "numSlots": slots, "samplePeriodSecs": period}
                for slot, count, non_vote, slots, period in self.node.store.samples(limit)]

    def rpc_getClusterNodes(self, params):
        # One node: the RPC and PubSub ports are real, nothing else is served (no gossip,
        # TPU or repair: transactions come over JSON-RPC).
        return [{"pubkey": str(self.node.identity), "gossip": None, "tvu": None, "tpu": None, "tpuQuic": None, "tpuForwards": None, "tpuForwardsQuic": None,
                 "tpuVote": None, "serveRepair": None, "rpc": self.rpc_address, "pubsub": self.pubsub_address, "version": VERSION["solana-core"],
                 "featureSet": VERSION["feature-set"], "shredVersion": None}]

    def rpc_getVoteAccounts(self, params):
        cfg = config(params, 0)
        if cfg.get("votePubkey") is not None:
            pubkey(cfg["votePubkey"], "vote pubkey")
        commitment(cfg)
        return {"current": [], "delinquent": []}  # no votes, no stake (docs/localnet.md)

    def rpc_getHighestSnapshotSlot(self, params):
        # The node's state is its SQLite file, not a snapshot archive a validator could
        # download: it has none, and answers as a validator without snapshots does.
        raise RpcError(-32008, "No snapshot")

    def rpc_getInflationReward(self, params):
        addresses = param(params, 0, [])
        if not isinstance(addresses, list):
            raise bad("expected an array of addresses")
        if len(addresses) > 100:
            raise RpcError(-32602, "Too many inputs provided; max 100")
        for address in addresses:
            pubkey(address, "address")
        cfg = config(params, 1)
        if cfg.get("epoch") is not None:
            slot_number(cfg["epoch"], "epoch")
        self._level(cfg)
        return [None for _ in addresses]  # no inflation, no rewards

    # --- transactions ---------------------------------------------------------------------
    @staticmethod
    def _decode_tx(params) -> bytes:
        if not params or not isinstance(params[0], str):
            raise bad("expected an encoded transaction")
        cfg = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
        encoding = cfg.get("encoding", "base58")
        if encoding not in _MAX_ENCODED:
            raise bad(f"unsupported encoding {encoding!r}")
        # A validator takes at most one packet (PACKET_DATA_SIZE), refused as its RPC does.
        if len(params[0]) > _MAX_ENCODED[encoding]:
            raise bad(f"{encoding} encoded {_WIRE_TYPE} too large: {len(params[0])} bytes (max: encoded/raw {_MAX_ENCODED[encoding]}/{PACKET_DATA_SIZE})")
        try:
            raw = base64.b64decode(params[0], validate=True) if encoding == "base64" else b58decode(params[0])
        except ValueError as exc:
            raise bad(f"invalid {encoding}: {exc}")
        if len(raw) > PACKET_DATA_SIZE:
            raise bad(f"decoded {_WIRE_TYPE} too large: {len(raw)} bytes (max: {PACKET_DATA_SIZE} bytes)")
        return raw

    def rpc_sendTransaction(self, params):
        raw = self._decode_tx(params)
        cfg = config(params, 1)
        # Preflight runs on the bank the transaction executes against (the tip); its
        # commitment only sets the bank minContextSlot is checked against.
        min_context(cfg, self.node.view_slot(commitment({"commitment": cfg.get("preflightCommitment")})))
        outcome = self.node.execute(raw, preflight=not cfg.get("skipPreflight", False))
        return outcome.signature

    def rpc_simulateTransaction(self, params):
        raw = self._decode_tx(params)
        cfg = config(params, 1)
        if cfg.get("sigVerify") and cfg.get("replaceRecentBlockhash"):
            raise bad("sigVerify may not be used with replaceRecentBlockhash")
        self._level(cfg)
        value = simulation.simulate(self.node, raw, sig_verify=bool(cfg.get("sigVerify")), replace_blockhash=bool(cfg.get("replaceRecentBlockhash")),
                                    accounts_cfg=cfg.get("accounts"), inner=bool(cfg.get("innerInstructions")))
        return self._ctx(value)  # simulated on the tip: its slot is the context

    def rpc_requestAirdrop(self, params):
        lamports = param(params, 1)
        if not isinstance(lamports, int) or lamports <= 0:
            raise bad("expected lamports")
        return self.node.airdrop(pubkey(param(params, 0)), lamports)

    def rpc_getSignatureStatuses(self, params):
        signatures = param(params, 0, [])
        if not isinstance(signatures, list):
            raise bad("expected an array of signatures")
        if len(signatures) > MAX_SIGNATURE_STATUSES:
            raise RpcError(-32602, f"Too many inputs provided; max {MAX_SIGNATURE_STATUSES}")
        found = self.node.store.statuses([signature(s) for s in signatures])  # a malformed one is -32602, as Agave
        out = []
        for sig in signatures:
            hit = found.get(sig)
            if hit is None:
                out.append(None)
                continue
            slot, err = hit
            confirmations, level = self.node.confirmation(slot)
            out.append({"slot": slot, "confirmations": confirmations, "err": err, "status": {"Err": err} if err is not None else {"Ok": None}, "confirmationStatus": level})
        return self._ctx(out)

