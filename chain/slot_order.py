"""The order of transactions within a slot, for the addresses whose balances they move.

A transaction's record (getTransaction) gives its slot but not its place in the block. Two
confirmations of one slot that move one balance, applied by two pump holders in either
order, need that place: a balance only moves to the transaction that comes after the one
it reflects (accounts/effects.balances_after, positions/balances.token_balances_after).

Only what the node states is taken as the order (docs/chain.md, "Order within a slot"):

1. ``transactionIndex`` of a getSignaturesForAddress entry (Agave 4.0: the transaction's
   position in its slot's block, u32, left out where the node does not know it);
2. else the block's own order: getBlock with ``transactionDetails: "signatures"``, for only
   the slots where two listed transactions of an address share a slot and the pass has a
   transaction (at most MAX_BLOCKS, in JSON-RPC batches);
3. else nothing: ``SlotOrder.later`` answers None ("cannot say") and the balance takes the
   safe path of transactions.effects.moves_balance.

Never the array order within a slot: the RPC only promises "newest first" across slots,
and before Agave 1.18 the blockstore listed a slot's entries by signature, so two
transactions of one slot could come in either order. getSignaturesForAddress still says
which of an address's transactions a slot held up to the read (``complete``), so one call
per address, made in the pump's prefetch (no network under database locks), answers for
every transaction of the pass that touched it.

A failed or refused read never raises: what was not read is unknown (``failures`` says
why, for the caller to log and count), so the pass settles its confirmations anyway.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Collection, Mapping

from solders.pubkey import Pubkey
from solders.rpc.config import RpcBlockConfig, RpcSignaturesForAddressConfig
from solders.rpc.requests import GetBlock, GetSignaturesForAddress
from solders.signature import Signature
from solders.transaction_status import TransactionDetails

from .errors import ChainRpcError, ChainUnavailable
from .rpc import _LEVELS, ChainRpc

PAGE = 1000  # getSignaturesForAddress's most per call
MAX_PAGES = 4  # an address with more transactions since the oldest slot asked for is left unordered
FIRST_PAGE_SLACK = 16  # transactions of the address newer than the pass's, expected on a first page
MAX_BLOCKS = 16  # getBlock reads per prefetch; slots past it are left unordered (the safe path)

INDEX, BLOCK, UNKNOWN = "index", "block", "unknown"  # where a slot's order came from (``sources``)


class _AsSent:
    """ChainRpc._batch's parser: each answer as the node sent it (``result`` or ``error``),
    so fields solders does not model (``transactionIndex``) are kept."""

    from_json = staticmethod(json.loads)


@dataclass
class SlotOrder:
    """(address, slot) → signature → place in the slot (higher = later), as the node stated it.

    ``complete`` holds the (address, slot) pairs whose every transaction up to the read is
    listed: a transaction of that slot missing from it executed after the read, so after
    every one listed. ``sources`` counts the (address, slot) pairs with two or more listed
    transactions by where their order came from (INDEX, BLOCK, UNKNOWN); ``failures`` holds
    a line for each read that failed or was refused (what it would have said is unknown)."""

    places: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    complete: set[tuple[str, int]] = field(default_factory=set)
    sources: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def later(self, address: str, slot: int, signature: str, than: str) -> bool | None:
        """Whether ``signature`` comes after ``than`` among ``address``'s transactions of
        ``slot`` (both in that slot); None when the node did not say."""
        places = self.places.get((address, slot))
        if places is None or signature not in places:
            return None
        if than in places:
            return places[signature] > places[than]
        return False if (address, slot) in self.complete else None

    def _count(self, source: str) -> None:
        self.sources[source] = self.sources.get(source, 0) + 1


def _config(before: str | None, limit: int, newest: int | None = None) -> RpcSignaturesForAddressConfig:
    return RpcSignaturesForAddressConfig(before=Signature.from_string(before) if before else None, limit=limit, commitment=_LEVELS["confirmed"],
                                         min_context_slot=newest)


def _request(address: str, before: str | None, limit: int, index: int, newest: int | None = None) -> GetSignaturesForAddress:
    """``newest``: the newest slot of the pass's transactions of ``address`` — the first page
    is read at a slot no older (``minContextSlot``), so a lagging node never lists the slot
    as it stood before them."""
    return GetSignaturesForAddress(Pubkey.from_string(address), _config(before, limit, newest), id=index)


def _entries(rpc: ChainRpc, address: str, answer: dict) -> list[tuple[str, int, int | None]]:
    """(signature, slot, transactionIndex or None) of one getSignaturesForAddress answer."""
    result = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(result, list):
        error = answer.get("error") if isinstance(answer, dict) else None
        message = error.get("message", error) if isinstance(error, dict) else "no result"
        raise ChainRpcError(f"The RPC endpoint of {rpc.cluster} answered an error for getSignaturesForAddress {address}: {message}")
    out = []
    for entry in result:
        try:
            signature, slot, index = str(entry["signature"]), int(entry["slot"]), entry.get("transactionIndex")
        except (KeyError, TypeError, ValueError) as exc:
            raise ChainRpcError(f"The RPC endpoint of {rpc.cluster} answered a malformed getSignaturesForAddress entry for {address}.") from exc
        out.append((signature, slot, index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None))
    return out


def _read_addresses(rpc: ChainRpc, oldest_slot: Mapping[str, int], limits: dict[str, int], order: SlotOrder,
                    newest: Mapping[str, int] | None = None) -> dict[str, tuple[list, bool]]:
    """Each address's entries since its oldest slot, and whether the last page was full (its
    oldest slot then partly listed). The first pages go in one batch; an address whose page
    did not reach its oldest slot is read on, a page twice the size each time, up to
    MAX_PAGES. After a transport failure nothing more is asked (no pass waits on a dead node)."""
    addresses = list(oldest_slot)
    try:
        answers = rpc._batch([_request(a, None, limits[a], i, (newest or {}).get(a)) for i, a in enumerate(addresses)], _AsSent)
    except (ChainUnavailable, ChainRpcError) as exc:
        order.failures.append(str(exc))
        return {}
    read: dict[str, tuple[list, bool]] = {}
    down = False
    for address, answer in zip(addresses, answers):
        try:
            entries = _entries(rpc, address, answer)
        except ChainRpcError as exc:
            order.failures.append(str(exc))
            continue
        limit, pages = limits[address], 1
        page_full = len(entries) == limit
        while not down and page_full and entries[-1][1] >= oldest_slot[address] and pages < MAX_PAGES:
            limit = min(PAGE, 2 * limit)
            try:
                more = _entries(rpc, address, rpc._batch([_request(address, entries[-1][0], limit, 0)], _AsSent)[0])
            except (ChainUnavailable, ChainRpcError) as exc:
                order.failures.append(str(exc))
                down = isinstance(exc, ChainUnavailable)
                break  # what was read stands; its oldest slot stays partial (page_full)
            entries.extend(more)
            pages, page_full = pages + 1, len(more) == limit
        read[address] = (entries, page_full)
    return read


def _block_positions(rpc: ChainRpc, slots: list[int], order: SlotOrder) -> dict[int, dict[str, int]]:
    """signature → position in the block, for each of ``slots`` whose block the node gave
    (getBlock, signatures only, no rewards, at ``confirmed``); one batch."""
    if not slots:
        return {}
    config = RpcBlockConfig(transaction_details=TransactionDetails.Signatures, rewards=False, commitment=_LEVELS["confirmed"], max_supported_transaction_version=0)
    try:
        answers = rpc._batch([GetBlock(slot, config, id=i) for i, slot in enumerate(slots)], _AsSent)
    except (ChainUnavailable, ChainRpcError) as exc:
        order.failures.append(str(exc))
        return {}
    out: dict[int, dict[str, int]] = {}
    for slot, answer in zip(slots, answers):
        result = answer.get("result") if isinstance(answer, dict) else None
        signatures = result.get("signatures") if isinstance(result, dict) else None
        if not isinstance(signatures, list):
            error = answer.get("error") if isinstance(answer, dict) else None
            order.failures.append(f"The RPC endpoint of {rpc.cluster} gave no block signatures for slot {slot}: {error.get('message') if isinstance(error, dict) else 'no result'}")
            continue
        out[slot] = {str(s): position for position, s in enumerate(signatures)}
    return out


def read_slot_order(rpc: ChainRpc, oldest_slot: Mapping[str, int], moved: Mapping[str, int] | None = None,
                    slots: Mapping[str, Collection[int]] | None = None) -> SlotOrder:
    """The order within each slot, from ``oldest_slot[address]`` up, of the transactions
    that touched each address. The first page of every address is sized to what the pass
    expects (twice the ``moved[address]`` transactions of the pass that touched it, plus
    FIRST_PAGE_SLACK: the newest ones are listed first, so a page only needs to reach back
    to the pass's oldest slot). ``slots[address]``: the slots of the pass's transactions
    that moved it, the only ones whose block is read when the node gives no index (all,
    when not given)."""
    order = SlotOrder()
    if not oldest_slot:
        return order
    moved = moved or {}
    limits = {a: min(PAGE, 2 * moved.get(a, 1) + FIRST_PAGE_SLACK) for a in oldest_slot}
    unindexed: list[tuple[str, int, list[str]]] = []  # (address, slot, signatures) whose order the block must give
    newest = {a: max(slots[a]) for a in oldest_slot if slots and slots.get(a)}
    for address, (entries, page_full) in _read_addresses(rpc, oldest_slot, limits, order, newest).items():
        by_slot: dict[int, list[tuple[str, int | None]]] = {}
        for signature, slot, index in entries:
            by_slot.setdefault(slot, []).append((signature, index))
        cut = entries[-1][1] if entries and page_full else None  # the oldest slot read may be partial
        for slot, listed in by_slot.items():
            if cut is None or slot > cut:
                order.complete.add((address, slot))
            indexes = [index for _, index in listed]
            if len(listed) == 1:
                order.places[(address, slot)] = {listed[0][0]: 0}  # alone: no order to know
            elif None not in indexes and len(set(indexes)) == len(indexes):
                order.places[(address, slot)] = {signature: index for signature, index in listed}
                order._count(INDEX)
            elif slots is None or slot in slots.get(address, ()):
                unindexed.append((address, slot, [signature for signature, _ in listed]))
    # Bounded: past MAX_BLOCKS slots the oldest are left unordered (counted UNKNOWN below).
    wanted = sorted({slot for _, slot, _ in unindexed})[-MAX_BLOCKS:]
    blocks = _block_positions(rpc, wanted, order)
    for address, slot, listed in unindexed:
        positions = blocks.get(slot)
        if positions is not None and all(signature in positions for signature in listed):
            order.places[(address, slot)] = {signature: positions[signature] for signature in listed}
            order._count(BLOCK)
        else:
            order._count(UNKNOWN)
    return order
