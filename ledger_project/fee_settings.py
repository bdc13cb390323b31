"""What the platform's fee payer pays (transactions/fees.py; docs/transactions.md, "Who pays
the fee, and how much at most"; docs/configuration.md), read from the environment."""

import environ

env = environ.Env()
__all__ = ["LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS", "LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS", "LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS"]

# At most this prioritization fee per transaction the platform pays (lamports): an explicit
# computeUnitConfig.price over it is a 400, an estimated price is lowered to fit.
LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS = env.int("LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS", default=50_000)
# At most this much in platform-paid fees per organization and cluster over 24 hours
# (lamports; in-flight transactions count their maximum fee, landed ones meta.fee; past it a
# 429 with Retry-After); "none" lifts it. Each process reads the figure at most every
# LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS and adds what it recorded since (docs/capacity.md).
_budget = env.str("LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS", default="1000000000").strip().lower()
LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS = None if _budget in ("", "none") else int(_budget)
LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS = env.float("LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS", default=2.0)
del _budget
