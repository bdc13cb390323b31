"""How a batch finds the items a refused pack holds (docs/positions.md, "Batch payouts",
"Packing"): the pack is split where the node says it failed, else in halves — never item
by item, which cost one simulation per item of every pack that held one bad item.

A transaction executes its instructions in order and a refusal in simulation names the
first one that failed (an InstructionError's index). The items before it ran, on the state
they will meet when built again; the failing one, moved to the front of the rest, then
runs on the state it would meet alone, so a refusal there is its own and it is rejected
without another simulation. Each failing item so costs at most three more simulations
(the items before it, the rest, the rest without it); a batch whose every item fails costs
one simulation per item. When the failing instruction cannot be told (a fee-payer refusal,
an estimated compute price the builder may or may not have added, a signing refusal), the
pack is split in halves: k failing items among n cost O(k log n) simulations.
"""

from __future__ import annotations

from chain.builder import instructions_before
from chain.errors import SimulationFailed, TransactionTooLarge
from transactions.models import MessageLifetime


def failing_item(exc: Exception, items: list, config) -> int | None:
    """The position in ``items`` of the item whose instruction the node refused, when the
    refusal says which and the builder's leading instructions can be told (``config``: the
    transaction's TxConfig; the pack's instructions are its items', one each)."""
    if not isinstance(exc, SimulationFailed):
        return None
    index = getattr(exc.err, "index", None)
    before = instructions_before(nonce=config.lifetime == MessageLifetime.DURABLE_NONCE, compute=config.compute)
    if index is None or before is None:
        return None
    position = int(index) - before
    return position if 0 <= position < len(items) else None


def split(exc: Exception, items: list, config) -> tuple[object | None, list[list]]:
    """What a refused pack of several ``items`` becomes: (the item that is refused with
    ``exc`` as it stands, or None; the parts to build again, in request order)."""
    at = None if isinstance(exc, TransactionTooLarge) else failing_item(exc, items, config)
    if at is None:
        half = len(items) // 2
        return None, [items[:half], items[half:]]
    if at == 0:
        return items[0], [items[1:]]
    return None, [items[:at], items[at:]]
