"""The loans area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

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
