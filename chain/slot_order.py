"""The order of transactions within a slot, for the addresses whose balances they move.

A transaction's record (getTransaction) gives its slot but not its place in the block. Two
confirmations of one slot that move one balance, applied by two pump holders in either
order, need that place: a balance only moves to the transaction that comes after the one
it reflects (accounts/effects.balances_after, positions/balances.token_balances_after).
getSignaturesForAddress lists an address's transactions newest first, in block order
within a slot, at ``confirmed`` as soon as they are (on a cluster and on the local node
alike), so one call per address, made in the pump's prefetch (no network under database
locks), answers for every transaction of the pass that touched it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from solders.pubkey import Pubkey
from solders.rpc.config import RpcSignaturesForAddressConfig
from solders.rpc.requests import GetSignaturesForAddress
from solders.rpc.responses import GetSignaturesForAddressResp, RPCError
from solders.signature import Signature

from .errors import ChainRpcError
from .rpc import _LEVELS, ChainRpc

PAGE = 1000  # getSignaturesForAddress's most per call
MAX_PAGES = 4  # an address with more transactions since the oldest slot asked for is left unordered
FIRST_PAGE_SLACK = 16  # transactions of the address newer than the pass's, expected on a first page

@dataclass
class SlotOrder:
    """(address, slot) → signature → place in the slot (0 = first), for the slots read in full.

    ``complete`` holds the (address, slot) pairs whose every transaction up to the read is
    listed: a transaction of that slot missing from it executed after the read, so after
    every one listed."""

    places: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    complete: set[tuple[str, int]] = field(default_factory=set)

    def later(self, address: str, slot: int, signature: str, than: str) -> bool | None:
        """Whether ``signature`` comes after ``than`` among ``address``'s transactions of
        ``slot`` (both in that slot); None when the read cannot say."""
        places = self.places.get((address, slot))
        if places is None or signature not in places:
            return None
        if than in places:
            return places[signature] > places[than]
        return False if (address, slot) in self.complete else None


def _config(before: str | None, limit: int) -> RpcSignaturesForAddressConfig:
    return RpcSignaturesForAddressConfig(before=Signature.from_string(before) if before else None, limit=limit, commitment=_LEVELS["confirmed"])


def _answer(rpc: ChainRpc, address: str, answer) -> list[tuple[str, int]]:
    if isinstance(answer, RPCError.__args__):
        raise ChainRpcError(f"The RPC endpoint of {rpc.cluster} answered an error for getSignaturesForAddress {address}: {getattr(answer, 'message', answer)}")
    return [(str(entry.signature), entry.slot) for entry in answer.value]


def read_slot_order(rpc: ChainRpc, oldest_slot: Mapping[str, int], moved: Mapping[str, int] | None = None) -> SlotOrder:
    """The order within each slot, from ``oldest_slot[address]`` up, of the transactions
    that touched each address. The first page of every address goes in one JSON-RPC batch,
    sized to what the pass expects (twice the ``moved[address]`` transactions of the pass
    that touched it, plus FIRST_PAGE_SLACK: the newest ones are listed first, so a page only
    needs to reach back to the pass's oldest slot); an address whose page did not reach it
    is read on, a page twice the size each time, up to MAX_PAGES."""
    order = SlotOrder()
    addresses = list(oldest_slot)
    if not addresses:
        return order
    moved = moved or {}
    limits = {a: min(PAGE, 2 * moved.get(a, 1) + FIRST_PAGE_SLACK) for a in addresses}
    answers = rpc._batch([GetSignaturesForAddress(Pubkey.from_string(a), _config(None, limits[a]), id=i) for i, a in enumerate(addresses)], GetSignaturesForAddressResp)
    for address, answer in zip(addresses, answers):
        entries = _answer(rpc, address, answer)
        limit, pages = limits[address], 1
        page_full = len(entries) == limit
        while page_full and entries[-1][1] >= oldest_slot[address] and pages < MAX_PAGES:
            limit = min(PAGE, 2 * limit)
            more = _answer(rpc, address, rpc._request(GetSignaturesForAddress(Pubkey.from_string(address), _config(entries[-1][0], limit)), GetSignaturesForAddressResp))
            entries.extend(more)
            pages, page_full = pages + 1, len(more) == limit
        by_slot: dict[int, list[str]] = {}
        for signature, slot in entries:
            by_slot.setdefault(slot, []).append(signature)
        cut = entries[-1][1] if entries and page_full else None  # the oldest slot read may be partial
        for slot, newest_first in by_slot.items():
            order.places[(address, slot)] = {s: place for place, s in enumerate(reversed(newest_first))}
            if cut is None or slot > cut:
                order.complete.add((address, slot))
    return order
