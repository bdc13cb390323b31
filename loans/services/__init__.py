"""Writes of the loans area (docs/loans.md): strategies, the spec's loan operations, the keeper."""

from .changes import loan_close, loan_refinance, loan_repay, loan_swap_collateral
from .create import LoanResult, loan_create
from .keeper import loan_liquidate, loans_watch
from .strategies import StrategyResult, strategy_create, strategy_liquidity, strategy_update

__all__ = [
    "LoanResult", "StrategyResult", "loan_close", "loan_create", "loan_liquidate", "loan_refinance", "loan_repay", "loan_swap_collateral", "loans_watch",
    "strategy_create", "strategy_liquidity", "strategy_update",
]
