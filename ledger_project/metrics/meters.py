"""The counters and histograms processes move (docs/operations.md, "Metrics", lists each).

Labels are bounded by the code or the configuration: a cluster (settings.LEDGER_CLUSTERS), a
route (the URL patterns), a status, an outcome, a JSON-RPC method. Never a tenant, an
address, a signature or a URL.

Gauges of database state (transactions by status, backlogs, lags, balances, heartbeats) are
not here: they are read when /metrics is scraped (``collect``), so they are right however
many processes and hosts run.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

#: request latency, webhook attempts, RPC calls: 5 ms to 10 s
FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: request → CONFIRMED, recorded → delivered: 250 ms to 10 min
SLOW = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)

# --- HTTP (ledger_project/metrics/middleware.py) ----------------------------------------------
http_requests = Counter("ledger_http_requests", "HTTP requests answered, by route pattern and status code.", ["method", "route", "status"])
http_request_duration = Histogram("ledger_http_request_duration_seconds", "Time from the request entering Django to its response.",
                                  ["method", "route"], buckets=FAST)

# --- the transaction engine (transactions/settlement.py, services.py) -------------------------
transaction_submissions = Counter("ledger_transaction_submissions", "Transactions claimed and sent for the first time.", ["cluster"])
transaction_rebroadcasts = Counter("ledger_transaction_rebroadcasts", "Sends of the same signed bytes again (not found after the rebroadcast delay).",
                                   ["cluster"])
transaction_expiries = Counter("ledger_transaction_expiries", "Transactions ended EXPIRED: their blockhash or durable nonce provably dead.",
                               ["cluster", "lifetime"])
transaction_failures = Counter("ledger_transaction_failures", "Transactions ended FAILED, by reason: preflight (the node refused the first send), "
                               "on_chain (it executed and failed).", ["cluster", "reason"])
transaction_ended = Counter("ledger_transaction_ended", "Transactions reaching a final status.", ["cluster", "status"])
transaction_confirmation = Histogram("ledger_transaction_confirmation_seconds", "Time from the request that built a transaction to the pump "
                                     "seeing it CONFIRMED (or FINALIZED at once).", ["cluster"], buckets=SLOW)

# --- the order within a slot (chain/slot_order.py, read by the pump's prefetch) -------------
slot_order_slots = Counter("ledger_slot_order_slots", "Slots where two or more transactions of a recorded balance had to be ordered, by "
                           "where the order came from: index (transactionIndex), block (getBlock), unknown (not stated: the safe path).",
                           ["cluster", "source"])
slot_order_failures = Counter("ledger_slot_order_failures", "Pump prefetches whose read of the order within a slot failed or was refused "
                              "(the confirmations settle anyway; what was not read takes the safe path).", ["cluster"])
SLOT_ORDER_SOURCES = ("index", "block", "unknown")

# --- RPC (chain/rpc.py: every HTTP call to a cluster) ----------------------------
rpc_calls = Counter("ledger_rpc_calls", "JSON-RPC HTTP calls to a cluster, by method and outcome: ok, error (the node answered a "
                    "JSON-RPC error), unavailable (no answer or an HTTP error). A batch is one call.", ["cluster", "method", "outcome"])
rpc_duration = Histogram("ledger_rpc_duration_seconds", "Time of one JSON-RPC HTTP call.", ["cluster", "method"], buckets=FAST)

# --- webhooks (webhooks/delivery.py) -------------------------------------------------------
webhook_deliveries = Counter("ledger_webhook_deliveries", "Webhook delivery attempts, by outcome: delivered (2xx), failed (retried later), "
                             "dead_lettered (failed past the retry window).", ["outcome"])
webhook_attempt_duration = Histogram("ledger_webhook_attempt_duration_seconds", "Time of one delivery attempt (the HTTP call).", buckets=FAST)
webhook_delivery_latency = Histogram("ledger_webhook_delivery_latency_seconds", "Time from an event being recorded (or redelivered) to its "
                                     "delivery.", buckets=SLOW)

# --- market data, loans -------------------------------------------------------------------------
marketdata_evaluations = Counter("ledger_marketdata_evaluations", "Data source evaluations ended, by outcome (FAILED, REJECTED, SUBMITTED; "
                                 "then CONFIRMED or NOT_LANDED when the update lands or not).", ["outcome"])
keeper_actions = Counter("ledger_loan_keeper_actions", "What the loan keeper did: checked, synced, flagged, liquidated loans.", ["cluster", "action"])

WEBHOOK_OUTCOMES = ("delivered", "failed", "dead_lettered")
EVALUATION_OUTCOMES = ("FAILED", "REJECTED", "SUBMITTED", "CONFIRMED", "NOT_LANDED")
KEEPER_ACTIONS = ("checked", "synced", "flagged", "liquidated")


def meters_initialize(clusters) -> None:
    """Create every bounded label set at 0, so a series exists before its first event: alert
    rules then see a rate of 0 rather than nothing, and a scrape lists every family."""
    for outcome in WEBHOOK_OUTCOMES:
        webhook_deliveries.labels(outcome)
    for outcome in EVALUATION_OUTCOMES:
        marketdata_evaluations.labels(outcome)
    for cluster in clusters:
        transaction_submissions.labels(cluster)
        transaction_rebroadcasts.labels(cluster)
        for lifetime in ("RECENT_BLOCKHASH", "DURABLE_NONCE"):
            transaction_expiries.labels(cluster, lifetime)
        for reason in ("preflight", "on_chain"):
            transaction_failures.labels(cluster, reason)
        transaction_confirmation.labels(cluster)
        for status in ("FINALIZED", "FAILED", "EXPIRED", "CANCELLED"):
            transaction_ended.labels(cluster, status)
        for action in KEEPER_ACTIONS:
            keeper_actions.labels(cluster, action)
        for source in SLOT_ORDER_SOURCES:
            slot_order_slots.labels(cluster, source)
        slot_order_failures.labels(cluster)
        rpc_calls.labels(cluster, "getHealth", "ok")
        rpc_duration.labels(cluster, "getHealth")
