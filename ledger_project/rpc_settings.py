"""The chain client's send URLs, budget, retries and failover (chain/budget.py,
chain/transport.py; docs/chain.md "What the service does for each provider behaviour";
docs/configuration.md), read from the environment."""

import environ

env = environ.Env()


def named_urls(variable: str) -> dict[str, str]:
    """A "NAME=URL,NAME=URL" variable (LEDGER_CLUSTERS, LEDGER_CLUSTER_SEND_URLS,
    LEDGER_PRIORITY_FEE_PROVIDER_URLS): each entry split at its first "=", so a URL's own query
    ("?api-key=...") stays whole; empty names or URLs are skipped."""
    urls = {}
    for item in env.list(variable, default=[]):
        name, _, url = item.partition("=")
        if name.strip() and url.strip():
            urls[name.strip()] = url.strip()
    return urls

__all__ = ["LEDGER_CACHE_PREFIX", "LEDGER_RPC_TIMEOUT_SECONDS", "LEDGER_CLUSTER_SEND_URLS", "LEDGER_RPC_BUDGETS", "LEDGER_RPC_BUDGET_WAIT_SECONDS", "LEDGER_RPC_WINDOW_MARGIN_SECONDS",
           "LEDGER_RPC_DEADLINE_SECONDS",
           "LEDGER_RPC_MAX_ATTEMPTS", "LEDGER_RPC_RETRY_BASE_SECONDS", "LEDGER_RPC_URL_COOLOFF_SECONDS",
           "LEDGER_ADMISSION_HORIZON_SECONDS", "LEDGER_ADMISSION_REFRESH_SECONDS",
           "LEDGER_RPC_READ_FLOOR_SECONDS", "LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS"]

# The prefix of the shared budget's Redis keys (the cache's too: settings.CACHES).
LEDGER_CACHE_PREFIX = env("LEDGER_CACHE_PREFIX", default="ledger")
LEDGER_RPC_TIMEOUT_SECONDS = env.float("LEDGER_RPC_TIMEOUT_SECONDS", default=10.0)
# LEDGER_CLUSTERS (settings.py) may give several URLs of one cluster: "|" between them, in
# order of preference (failover: docs/chain.md).
# URLs for sendTransaction alone, LEDGER_CLUSTERS' shape: "CHAIN_MAINNET=https://a|https://b".
LEDGER_CLUSTER_SEND_URLS = named_urls("LEDGER_CLUSTER_SEND_URLS")
# The chain client's budget, retries and failover (chain/budget.py, chain/transport.py;
# docs/chain.md "What the service does for each provider behaviour"):
# LEDGER_RPC_BUDGETS="CHAIN_DEVNET.sendTransaction=50/1s,CHAIN_DEVNET.*=100/s" (none: unlimited);
# N/s is a rate, N/10s a provider's rolling window (at most N calls in any 10 s).
LEDGER_RPC_BUDGETS = env("LEDGER_RPC_BUDGETS", default="")
# A rolling window is counted this much longer than the provider's: the time from taking a
# unit to the call reaching the provider (so the service never goes over its window).
LEDGER_RPC_WINDOW_MARGIN_SECONDS = env.float("LEDGER_RPC_WINDOW_MARGIN_SECONDS", default=0.05)
# How long one call may wait for its budget before 503 CHAIN_BUSY.
LEDGER_RPC_BUDGET_WAIT_SECONDS = env.float("LEDGER_RPC_BUDGET_WAIT_SECONDS", default=1.0)
# One call's retries of transient answers end this long after it began (then 503).
LEDGER_RPC_DEADLINE_SECONDS = env.float("LEDGER_RPC_DEADLINE_SECONDS", default=5.0)
LEDGER_RPC_MAX_ATTEMPTS = env.int("LEDGER_RPC_MAX_ATTEMPTS", default=5)
LEDGER_RPC_RETRY_BASE_SECONDS = env.float("LEDGER_RPC_RETRY_BASE_SECONDS", default=0.1)
# A URL that answered transiently is skipped this long while another URL is tried.
LEDGER_RPC_URL_COOLOFF_SECONDS = env.float("LEDGER_RPC_URL_COOLOFF_SECONDS", default=10.0)
# Admission by backlog (transactions/admission.py): under a send budget, a new operation is
# refused 503 CHAIN_BUSY while the unsent SIGNED backlog holds what the budget sends in this
# many seconds (half a blockhash's life, so the backlog's tail is sent before its blockhash
# must be renewed; 0: never refused); the count is read once per refresh.
LEDGER_ADMISSION_HORIZON_SECONDS = env.float("LEDGER_ADMISSION_HORIZON_SECONDS", default=30.0)
LEDGER_ADMISSION_REFRESH_SECONDS = env.float("LEDGER_ADMISSION_REFRESH_SECONDS", default=1.0)
# The read floor (chain/floor.py): account, balance and blockhash reads carry the newest slot
# the service applied a confirmation at as minContextSlot, for this long after it (0: off),
# re-read from the shared store at most every REFRESH seconds per process.
LEDGER_RPC_READ_FLOOR_SECONDS = env.float("LEDGER_RPC_READ_FLOOR_SECONDS", default=30.0)
LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS = env.float("LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS", default=0.5)
