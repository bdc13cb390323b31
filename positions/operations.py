"""The positions area's operation names (docs/architecture.md, "Where a confirmation goes").

A transaction records the name of the operation that built it (``Transaction.operation``),
and the handlers that apply its effects register under the same name
(``transactions.effects.effect_handler``). Both sides use these constants, so a search for
one finds the code that builds the transaction and the code that settles it."""

from __future__ import annotations

INITIALIZE = "positions.initialize"
FREEZE = "positions.freeze"
UNFREEZE = "positions.unfreeze"
APPROVE = "positions.approve"
REVOKE = "positions.revoke"
INACTIVATE = "positions.inactivate"
MINT = "positions.mint"
BURN = "positions.burn"
TRANSFER = "positions.transfer"
TRADE = "positions.trade"
TRANSFER_NETWORK_CURRENCY = "positions.transfer_network_currency"
TRANSFER_BATCH = "positions.transfer_batch"
TRANSFER_NETWORK_CURRENCY_BATCH = "positions.transfer_network_currency_batch"

#: A token movement's plan kind (positions/movement.py) → its operation.
OF_MOVEMENT = {"MINT": MINT, "BURN": BURN, "TRANSFER": TRANSFER, "TRADE": TRADE}

#: their confirmations change only balances, which the engine's chunk hooks write for every
#: transaction (positions/balances.py, accounts/effects.py): no success handler of their own
BALANCES_ONLY = (TRANSFER_NETWORK_CURRENCY, TRANSFER_NETWORK_CURRENCY_BATCH)
#: a lamport transfer records nothing ahead, so one that did not land has nothing to undo
NOTHING_TO_UNDO = (TRANSFER_NETWORK_CURRENCY,)
