"""The loans area's operation names (docs/architecture.md, "Where a confirmation goes").

A transaction records the name of the operation that built it (``Transaction.operation``);
the handlers that apply its effects register under the same name
(``transactions.effects.effect_handler`` / ``failure_handler``). Both sides use these
constants, so a search for one finds the code that builds the transaction and the code that
settles it (tests/test_operation_handlers.py holds every name to its handlers)."""

from __future__ import annotations

CREATE = "loans.create"
SWAP_COLLATERAL = "loans.swap_collateral"
REPAY = "loans.repay"
REFINANCE = "loans.refinance"
CLOSE = "loans.close"
LIQUIDATE = "loans.liquidate"
STRATEGY_CREATE = "loans.strategy_create"
STRATEGY_UPDATE = "loans.strategy_update"
STRATEGY_LIQUIDITY = "loans.strategy_liquidity"

LOAN = (CREATE, SWAP_COLLATERAL, REPAY, REFINANCE, CLOSE, LIQUIDATE)
STRATEGY = (STRATEGY_CREATE, STRATEGY_UPDATE, STRATEGY_LIQUIDITY)
