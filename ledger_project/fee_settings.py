"""What the platform's fee payer pays (transactions/fees.py; docs/transactions.md, "Who pays
the fee, and how much at most"; docs/configuration.md), read from the environment."""

import environ

from ledger_project.rpc_settings import named_urls

env = environ.Env()
__all__ = [
    "LEDGER_PLATFORM_PRIORITY_FEE_MAX_LAMPORTS", "LEDGER_PLATFORM_FEE_BUDGET_LAMPORTS", "LEDGER_PLATFORM_FEE_BUDGET_CACHE_SECONDS",
    "LEDGER_PRIORITY_FEE_PROVIDER_URLS", "LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS", "LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS",
]

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


# priceEstimate's PARTNER_FEE_PROVIDER per cluster: an RPC endpoint answering getPriorityFeeEstimate
# (chain/fee_provider.py; docs/transactions.md, "Compute-unit price estimates"), e.g.
# LEDGER_PRIORITY_FEE_PROVIDER_URLS="CHAIN_MAINNET=https://mainnet.helius-rpc.com/?api-key=...".
# A cluster without one estimates from getRecentPrioritizationFees. The URL may carry an API
# key: it is never logged.
LEDGER_PRIORITY_FEE_PROVIDER_URLS = named_urls("LEDGER_PRIORITY_FEE_PROVIDER_URLS")
# The provider's whole answer within this many seconds, else the fallback (it is on the
# request path: every estimated build waits for it).
LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS = env.float("LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS", default=1.5)
# After a failure the provider is not asked again for this long (per process and cluster).
LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS = env.float("LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS", default=30.0)
