"""A batch's debit decisions in the write phase (docs/positions.md, "Batch payouts", "Debit
limits"), for every kind of batch: decided again under the locks, item by item in request
order, whatever order the packs were made in, so the items held are the ones a DURATION
window reaches first when the items are sent one request at a time.

Nothing of the batch is recorded when they are decided, so ``running`` (the base units the
earlier items debit, by owner and destination type) is all the window needs besides what
the source debited before the batch; an item held counts as it does once recorded.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from ledger_project.api.errors import LedgerError

from .limits import Decision


def in_request_order(packs: list) -> list:
    return sorted((item for pack in packs for item in pack.items), key=lambda item: item.index)


def decided(decide: Callable, items: list) -> dict[int, Decision | LedgerError]:
    """Every item's debit decision again, under the write phase's locks, in request order
    (``decide(item, running)``, ``running`` counting the items before it): what the limits
    decide whatever order the packs are recorded in, since nothing of the batch is recorded
    yet. A refusal (403 DEBIT_NOT_ALLOWED) is kept for its pack to raise."""
    running: dict = defaultdict(int)
    out: dict[int, Decision | LedgerError] = {}
    for item in items:
        try:
            out[item.index] = decide(item, running)
        except LedgerError as exc:
            if exc.not_now:
                raise
            out[item.index] = exc
    return out


def pack_decision(pack, decisions: dict[int, Decision | LedgerError]) -> Decision:
    found = [decisions[item.index] for item in pack.items]
    for refused in found:
        if isinstance(refused, LedgerError):
            raise refused
    return Decision.merge(*found)
