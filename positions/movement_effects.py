"""What confirmed (or failed) movements change in records (positions/movement.py).

Token balances follow the chain through the balance effects (not here); these handlers
add what only the operation knows, once per transaction (the engine's
``effects_applied_at`` claim): the positions a movement created become ACTIVE (FAILED
when it did not land), and the instrument's ``supply_offchain`` — the base units the
service's own operations account for — grows by what was minted and shrinks by what was
burned.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``.
"""

from __future__ import annotations

from decimal import Decimal

from instruments.models import FinancialInstrument
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler

from . import operations
from .effects import positions_created, positions_not_created
from .models import Position

OPERATIONS = (operations.MINT, operations.BURN, operations.TRANSFER, operations.TRADE)


def _created(tx) -> list[Position]:
    ids = tx.effects.get("created") or []
    return list(Position.unscoped.filter(offchain_id__in=ids)) if ids else []


def _supply(tx, sign: int) -> None:
    """Add (or take) each leg's base units to its instrument's supply_offchain. Decimal
    arithmetic here, not in SQL: amounts reach u64, past the 64-bit signed integers SQLite
    computes and binds with (and an effect that raises would hold the confirmation up)."""
    for leg in (tx.effects.get("movement") or {}).get("legs") or []:
        rows = FinancialInstrument.unscoped.select_for_update().filter(offchain_id=leg["instrument"]).values_list("pk", "supply_offchain")
        for pk, supply in rows:
            FinancialInstrument.unscoped.filter(pk=pk).update(supply_offchain=Decimal(supply or 0) + sign * Decimal(leg["amount"]))


@effect_handler(operations.MINT)
def minted(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, _created(tx))
    _supply(tx, +1)


@effect_handler(operations.BURN)
def burned(tx, facts: ConfirmationFacts) -> None:
    _supply(tx, -1)


@effect_handler(operations.TRANSFER)
def transferred(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, _created(tx))


@effect_handler(operations.TRADE)
def traded(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, _created(tx))


def _not_moved(tx) -> None:
    positions_not_created(tx, _created(tx))


for _operation in OPERATIONS:
    failure_handler(_operation)(_not_moved)
