"""History methods: signatures and transactions by address, blocks and their times.

A block is served once its slot has ended (every slot has one; none is skipped). At
`confirmed` the newest is the last completed slot; asking for the block of the slot still
open (getBlock, or getBlocks with an explicit end slot reaching it) waits until it ends
(at most a slot, 400 ms), so a reader never sees a block that later grows. At `finalized`
the newest is the root, FINALIZED_DEPTH slots behind. docs/localnet.md, Blocks.
"""

from __future__ import annotations

from typing import NamedTuple

from .encoding import TRANSACTION_ENCODINGS, encode_transaction, memo_of
from .errors import RpcError
from .rpcutil import NotYet, at_least_confirmed, bad, commitment, config, min_context, param, pubkey, signature, slot_number

MAX_SIGNATURES_FOR_ADDRESS = 1000  # a validator's MAX_GET_CONFIRMED_SIGNATURES_FOR_ADDRESS2_LIMIT
MAX_GET_CONFIRMED_BLOCKS_RANGE = 500_000
TRANSACTION_DETAILS = ("full", "accounts", "signatures", "none")


class BlockOptions(NamedTuple):
    encoding: str
    details: str  # transactionDetails
    rewards: bool
    max_version: int | None  # maxSupportedTransactionVersion


def _block_not_available(slot: int) -> RpcError:
    return RpcError(-32004, f"Block not available for slot {slot}")


def block_options(cfg: dict, *, default_encoding: str, rewards: bool) -> BlockOptions:
    """getBlock's encoding options from a request's configuration (blockSubscribe's too:
    its default encoding is base64, and it says `showRewards` where getBlock says `rewards`)."""
    encoding = cfg.get("encoding") or default_encoding
    details = cfg.get("transactionDetails") or "full"
    if encoding not in TRANSACTION_ENCODINGS:
        raise bad(f"unknown variant `{encoding}`, expected one of `binary`, `base64`, `base58`, `json`, `jsonParsed`")
    if details not in TRANSACTION_DETAILS:
        raise bad(f"unknown variant `{details}`, expected one of `full`, `signatures`, `none`, `accounts`")
    return BlockOptions(encoding, details, rewards, cfg.get("maxSupportedTransactionVersion"))


def encode_block(block, transactions, options: BlockOptions) -> dict:
    """What getBlock answers for ``block`` with ``transactions`` (all of the block's, or the
    ones a blockSubscribe filter keeps) — the one block encoder of the node. A transaction
    newer than maxSupportedTransactionVersion raises RpcError -32015 (encoding.check_version)."""
    result = {"blockHeight": block.block_height, "blockTime": block.block_time, "blockhash": block.blockhash, "parentSlot": block.parent_slot, "previousBlockhash": block.previous_blockhash}
    if options.details in ("full", "accounts"):
        result["transactions"] = [encode_transaction(tx, options.encoding, details=options.details, rewards=options.rewards, max_version=options.max_version) for tx in transactions]
    elif options.details == "signatures":
        result["signatures"] = [tx.signature for tx in transactions]
    if options.rewards:
        result["rewards"] = []
    return result


class HistoryMethods:
    node: object

    def _history_slot(self, cfg: dict) -> int:
        """Highest slot a history read may see: `finalized` (the default) sees only rooted
        slots; `confirmed` sees every executed transaction (one node: processed =
        confirmed); `processed` is refused for these methods, as by a validator."""
        level = commitment(cfg)
        at_least_confirmed(level)
        return self.node.view_slot(level)

    def _signature_info(self, tx, slot_starts: dict[int, int | None]) -> dict:
        _, level = self.node.confirmation(tx.slot)
        info = {"signature": tx.signature, "slot": tx.slot, "err": tx.err, "memo": memo_of(tx.raw), "blockTime": tx.block_time, "confirmationStatus": level}
        start = slot_starts.get(tx.slot)
        if start is not None:
            # Agave 4.0's `transactionIndex` (u32): the transaction's position in its slot's
            # block, the order getBlock lists it in; left out where the node cannot say.
            info["transactionIndex"] = tx.seq - start
        return info

    def _slot_starts(self, slots) -> dict[int, int | None]:
        """The execution sequence number of the first transaction of each of ``slots``: the
        open slot's from the node (under its lock: the slot and its start move together),
        a completed one's from its block row; None for a slot with no block (a version-1
        data directory's slots before the upgrade)."""
        with self.node.lock:
            open_slot, open_start = self.node.slot, self.node.slot_first_seq
        starts: dict[int, int | None] = {}
        for slot in set(slots):
            if slot == open_slot:
                starts[slot] = open_start
            else:
                block = self.node.store.block(slot)
                starts[slot] = block.first_seq if block is not None else None
        return starts

    def rpc_getSignaturesForAddress(self, params):
        address = str(pubkey(param(params, 0)))
        cfg = config(params, 1)
        limit = cfg.get("limit")
        limit = MAX_SIGNATURES_FOR_ADDRESS if limit is None else limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SIGNATURES_FOR_ADDRESS:
            raise RpcError(-32602, f"Invalid limit; max {MAX_SIGNATURES_FOR_ADDRESS}")
        before = signature(cfg["before"], "before") if cfg.get("before") is not None else None
        until = signature(cfg["until"], "until") if cfg.get("until") is not None else None
        highest = self._history_slot(cfg)
        min_context(cfg, highest)
        store = self.node.store
        before_seq = until_seq = None
        if before is not None:
            # A validator answers nothing when `before` is not in its ledger (at this
            # commitment): it does not restart from the newest signature.
            found = store.transaction(before)
            if found is None or found.slot > highest:
                return []
            before_seq = found.seq
        if until is not None:
            found = store.transaction(until)  # unknown `until`: search to the oldest
            until_seq = found.seq if found is not None else None
        rows = store.signatures_for_address(address, limit=limit, before_seq=before_seq, until_seq=until_seq, max_slot=highest)
        starts = self._slot_starts(tx.slot for tx in rows)
        return [self._signature_info(tx, starts) for tx in rows]

    def rpc_getTransaction(self, params):
        sig = signature(param(params, 0))
        raw_cfg = param(params, 1, {})
        cfg = {"encoding": raw_cfg} if isinstance(raw_cfg, str) else raw_cfg
        if not isinstance(cfg, dict):
            raise bad("configuration must be an object")
        highest = self._history_slot(cfg)
        encoding = cfg.get("encoding") or "json"
        if encoding not in TRANSACTION_ENCODINGS:
            raise bad(f"unsupported encoding {encoding!r}")
        tx = self.node.store.transaction(sig)
        if tx is None or tx.slot > highest:
            return None
        entry = encode_transaction(tx, encoding, max_version=cfg.get("maxSupportedTransactionVersion"))
        return {"slot": tx.slot, "blockTime": tx.block_time, **entry}

    # --- blocks -----------------------------------------------------------------------------
    def _first_block(self) -> int | None:
        return self.node.store.first_block_slot()


    def _stored_block(self, slot: int):
        """The completed block of ``slot``: -32001 when it was cleaned up (below the first
        block kept), -32004 when there is none."""
        block = self.node.store.block(slot)
        if block is None:
            first = self._first_block()
            if first is not None and slot < first:
                raise RpcError(-32001, f"Block {slot} cleaned up, does not exist on node. First available block: {first}")
            raise _block_not_available(slot)
        return block
    def _complete_through(self, level: str) -> int:
        """The newest block a read at ``level`` may list without waiting."""
        return self.node.root() if level == "finalized" else self.node.slot - 1

    def rpc_getBlock(self, params):
        slot = slot_number(param(params, 0))
        raw_cfg = param(params, 1, {})
        cfg = {"encoding": raw_cfg} if isinstance(raw_cfg, str) else raw_cfg
        if not isinstance(cfg, dict):
            raise bad("configuration must be an object")
        level = commitment(cfg)
        at_least_confirmed(level)
        options = block_options(cfg, default_encoding="json", rewards=cfg.get("rewards", True) is not False)
        if level == "finalized" and slot > self.node.root():
            raise _block_not_available(slot)
        if slot == self.node.slot:
            raise NotYet(params)  # the open slot: answered when it ends
        if slot > self.node.slot:
            raise _block_not_available(slot)
        block = self._stored_block(slot)
        return encode_block(block, self.node.store.block_transactions(block) if options.details != "none" else (), options)

    def _blocks_config(self, params, index: int) -> dict:
        cfg = config(params, index)
        level = commitment(cfg)
        at_least_confirmed(level)
        min_context(cfg, self.node.view_slot(level))
        return cfg

    def rpc_getBlocks(self, params):
        start = slot_number(param(params, 0), "start slot")
        second = param(params, 1)
        if isinstance(second, dict):  # getBlocks(start, config)
            end, cfg = None, self._blocks_config(params, 1)
        else:
            end = slot_number(second, "end slot") if second is not None else None
            cfg = self._blocks_config(params, 2)
        level = commitment(cfg)
        highest = self._complete_through(level)
        if end is None:
            end = min(start + MAX_GET_CONFIRMED_BLOCKS_RANGE, highest)
        elif level == "confirmed" and end >= self.node.slot and start <= self.node.slot:
            # The range reaches the open slot: answer once it has ended, up to it.
            raise NotYet([start, self.node.slot, cfg])
        else:
            end = min(end, highest)
        if end < start:
            return []
        if end - start > MAX_GET_CONFIRMED_BLOCKS_RANGE:
            raise RpcError(-32602, f"Slot range too large; max {MAX_GET_CONFIRMED_BLOCKS_RANGE}")
        return self.node.store.block_slots(start, end, MAX_GET_CONFIRMED_BLOCKS_RANGE + 1)

    def rpc_getBlocksWithLimit(self, params):
        start = slot_number(param(params, 0), "start slot")
        limit = slot_number(param(params, 1), "limit")
        if limit > MAX_GET_CONFIRMED_BLOCKS_RANGE:
            raise RpcError(-32602, f"Limit too large; max {MAX_GET_CONFIRMED_BLOCKS_RANGE}")
        cfg = self._blocks_config(params, 2)
        return self.node.store.block_slots(start, self._complete_through(commitment(cfg)), limit)

    def rpc_getBlockTime(self, params):
        slot = slot_number(param(params, 0))
        if slot == self.node.slot:
            return self.node.block_time  # the open slot's clock, as a validator answers from its bank
        if slot > self.node.slot:
            raise _block_not_available(slot)
        block = self._stored_block(slot)
        return block.block_time

    def rpc_getBlockCommitment(self, params):
        slot_number(param(params, 0))
        # No votes and no stake in this cluster (docs/localnet.md): nothing has voted on any
        # block, which the reference reports as a null commitment array.
        return {"commitment": None, "totalStake": 0}

    def rpc_getFirstAvailableBlock(self, params):
        first = self._first_block()
        return first if first is not None else 0

    def rpc_minimumLedgerSlot(self, params):
        first = self._first_block()
        return first if first is not None else self.node.slot
