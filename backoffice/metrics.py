"""Figures of the database, read when /metrics is scraped (docs/operations.md, "Metrics").

Gauges of state — transactions not yet final, the pump's backlog and lag, the webhook
outbox, balances, the nonce pool, heartbeats; an area adds its own, as marketdata does its
feeds (marketdata/metrics.py) — are read from the database at scrape
time rather than kept by the processes that change them: the database is the one place
that knows them, so they are right however many workers and hosts run, and a process that
dies takes nothing with it. Each read is one grouped query over an index; every tenant's
rows are counted, and only numbers leave (no tenant, address or id is a label).

Acts for no tenant: workers' and the admin's ``unscoped`` managers.
"""

from __future__ import annotations

from collections import Counter

from django.conf import settings
from django.db.models import Count, Max, Min, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from ledger_project.metrics.collect import collector_register
from transactions.models import NonceAccount, NonceState, PumpLease, Transaction, TransactionStatus
from transactions.shards import shard_count, shard_of

from .models import BalanceAccount, BalanceSample, Heartbeat


#: statuses a transaction passes through before it ends (TERMINAL ones are over)
OPEN_STATUSES = (TransactionStatus.BUILT, TransactionStatus.PENDING_APPROVAL, TransactionStatus.PARTIALLY_SIGNED, TransactionStatus.SIGNED,
                 TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED)


def _age(now, at) -> float:
    return max(0.0, (now - at).total_seconds())


def transactions_state():
    now = timezone.now()
    clusters = list(settings.LEDGER_CLUSTERS)
    by_status = GaugeMetricFamily("ledger_transactions", "Transactions not yet final, by cluster and status (final ones: "
                                  "ledger_transaction_ended_total).", labels=["cluster", "status"])
    backlog = GaugeMetricFamily("ledger_pump_backlog", "SIGNED transactions queued for the pump and not yet sent, all shards of the "
                                "cluster.", labels=["cluster"])
    queue_age = GaugeMetricFamily("ledger_pump_oldest_queued_age_seconds", "Age of the oldest SIGNED transaction queued and not yet "
                                  "sent, since its request (0 when none).", labels=["cluster"])
    flight_age = GaugeMetricFamily("ledger_pump_oldest_in_flight_age_seconds", "Time since the oldest SUBMITTED transaction was sent "
                                   "(0 when none).", labels=["cluster"])
    lease = GaugeMetricFamily("ledger_pump_running", "1 when a pump holds a lease of one of the cluster's shards.", labels=["cluster"])
    held = GaugeMetricFamily("ledger_pump_shards_held", "Shards of the cluster's pump with a live holder (of LEDGER_PUMP_SHARDS).", labels=["cluster"])
    shard_backlog = GaugeMetricFamily("ledger_pump_shard_backlog", "SIGNED transactions queued and not yet sent, per pump shard "
                                      "(docs/transactions.md, \"Shards\"; bounded by LEDGER_PUMP_SHARDS).", labels=["cluster", "shard"])
    counts = {(c, s): 0 for c in clusters for s in OPEN_STATUSES}
    queued = dict.fromkeys(clusters, 0)
    oldest_queued, oldest_sent = {}, {}
    rows = (Transaction.unscoped.filter(status__in=OPEN_STATUSES).order_by().values("cluster", "status", "submit_when_signed")
            .annotate(n=Count("id"), built=Min("txn_timestamp"), sent=Min("submitted_at")))
    for row in rows:
        cluster, status = row["cluster"], row["status"]
        counts[(cluster, status)] = counts.get((cluster, status), 0) + row["n"]
        if status == TransactionStatus.SIGNED and row["submit_when_signed"]:
            queued[cluster] = queued.get(cluster, 0) + row["n"]
            oldest_queued[cluster] = min(filter(None, (oldest_queued.get(cluster), row["built"])))
        if status == TransactionStatus.SUBMITTED and row["sent"] is not None:
            oldest_sent[cluster] = min(filter(None, (oldest_sent.get(cluster), row["sent"])))
    for (cluster, status), n in sorted(counts.items()):
        by_status.add_metric([cluster, status], n)
    live = Counter(PumpLease.objects.filter(cluster__in=clusters, lease_until__gt=now).values_list("cluster", flat=True))
    per_shard: Counter = Counter()
    queued_rows = (Transaction.unscoped.filter(status=TransactionStatus.SIGNED, submit_when_signed=True).order_by()
                   .values_list("cluster", "shard_key").annotate(n=Count("id")))
    for cluster, bucket, n in queued_rows:
        per_shard[(cluster, shard_of(bucket))] += n
    for cluster in sorted(set(queued) | set(clusters)):
        backlog.add_metric([cluster], queued.get(cluster, 0))
        queue_age.add_metric([cluster], _age(now, oldest_queued[cluster]) if cluster in oldest_queued else 0)
        flight_age.add_metric([cluster], _age(now, oldest_sent[cluster]) if cluster in oldest_sent else 0)
        lease.add_metric([cluster], 1 if live.get(cluster) else 0)
        held.add_metric([cluster], live.get(cluster, 0))
        for shard in range(shard_count()):
            shard_backlog.add_metric([cluster, str(shard)], per_shard.get((cluster, shard), 0))
    return [by_status, backlog, queue_age, flight_age, lease, held, shard_backlog]


def webhooks_state():
    from webhooks.delivery import LEASE

    now = timezone.now()
    backlog = GaugeMetricFamily("ledger_webhook_backlog", "Webhook events waiting, by state: due (enabled webhook, due now), scheduled "
                                "(enabled, a retry later), delivering, paused (the webhook is disabled: sent once enabled).", labels=["state"])
    lag = GaugeMetricFamily("ledger_webhook_oldest_due_age_seconds", "How long the oldest due event of an enabled webhook has been due "
                            "(0 when none).")
    dead = GaugeMetricFamily("ledger_webhook_dead_letters", "Events dead-lettered (DEAD) and not redelivered.")
    running = GaugeMetricFamily("ledger_webhook_delivery_running", "1 when the delivery loop holds its lease.")
    figures = webhook_figures(now)
    for state in ("due", "scheduled", "delivering", "paused"):
        backlog.add_metric([state], figures[state])
    lag.add_metric([], figures["lag_seconds"])
    dead.add_metric([], figures["dead"])
    lease = PumpLease.objects.filter(cluster=LEASE).first()
    running.add_metric([], 1 if lease is not None and lease.lease_until > now else 0)
    return [backlog, lag, dead, running]


def webhook_figures(now) -> dict:
    """The outbox in one grouped read over the (status, next_attempt_at) index, joined to
    the subscription's status: only events of enabled (ACTIVE) webhooks will be sent, the
    others are paused, counted apart (the dashboard and /metrics read the same figures)."""
    from webhooks.models import DeliveryStatus, WebhookEvent, WebhookStatus

    out = {"due": 0, "scheduled": 0, "delivering": 0, "paused": 0, "dead": 0, "lag_seconds": 0.0, "first_due": None, "last_dead": None}
    rows = (WebhookEvent.unscoped.filter(status__in=[DeliveryStatus.PENDING, DeliveryStatus.DELIVERING, DeliveryStatus.DEAD]).order_by()
            .values("status", "subscription__status")
            .annotate(total=Count("id"), due=Count("id", filter=Q(next_attempt_at__lte=now)), first_due=Min("next_attempt_at", filter=Q(next_attempt_at__lte=now)),
                      last_dead=Max("dead_at")))
    for row in rows:
        enabled = row["subscription__status"] == WebhookStatus.ACTIVE
        if row["status"] == DeliveryStatus.DEAD:
            out["dead"] += row["total"]
            out["last_dead"] = max(filter(None, (out["last_dead"], row["last_dead"])), default=None)
        elif not enabled:
            out["paused"] += row["total"]
        elif row["status"] == DeliveryStatus.DELIVERING:
            out["delivering"] += row["total"]
        else:
            out["due"] += row["due"]
            out["scheduled"] += row["total"] - row["due"]
            if row["first_due"] is not None:
                out["first_due"] = min(filter(None, (out["first_due"], row["first_due"])))
    if out["first_due"] is not None:
        out["lag_seconds"] = _age(now, out["first_due"])
    return out


def balances_state():
    now = timezone.now()
    balance = GaugeMetricFamily("ledger_platform_balance_lamports", "The platform's balances as last sampled by the worker: the fee "
                                "payer, the lamports the durable nonce pool holds.", labels=["cluster", "account"])
    sampled = GaugeMetricFamily("ledger_platform_balance_sample_age_seconds", "Age of that sample (the worker samples every "
                                "LEDGER_BALANCE_SAMPLE_SECONDS).", labels=["cluster", "account"])
    low = GaugeMetricFamily("ledger_fee_payer_low_lamports", "The fee payer balance under which the dashboard and the alert flag it "
                            "(LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS).")
    low.add_metric([], settings.LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS)
    for cluster in settings.LEDGER_CLUSTERS:
        for account in BalanceAccount.values:
            row = BalanceSample.objects.filter(cluster=cluster, account=account).order_by("-at").first()
            if row is not None:
                balance.add_metric([cluster, account], float(row.lamports))
                sampled.add_metric([cluster, account], _age(now, row.at))
    return [balance, sampled, low]


def nonce_pool_state():
    pool = GaugeMetricFamily("ledger_nonce_pool_accounts", "The platform's durable nonce pool: free and leased accounts.", labels=["cluster", "state"])
    low = GaugeMetricFamily("ledger_nonce_pool_low_water", "The pool is refilled under this many free accounts (LEDGER_NONCE_POOL_LOW_WATER).",
                            labels=["cluster"])
    rows = {row["cluster"]: row for row in NonceAccount.objects.filter(Q(tenant__isnull=True) & ~Q(state=NonceState.CLOSED)).order_by()
            .values("cluster").annotate(free=Count("id", filter=Q(state=NonceState.READY, leased_at__isnull=True, leased_by__isnull=True)),
                                        leased=Count("id", filter=Q(leased_at__isnull=False) | Q(leased_by__isnull=False)))}
    for cluster in sorted(set(rows) | set(settings.LEDGER_NONCE_POOL_CLUSTERS)):
        row = rows.get(cluster, {"free": 0, "leased": 0})
        pool.add_metric([cluster, "free"], row["free"])
        pool.add_metric([cluster, "leased"], row["leased"])
        if cluster in settings.LEDGER_NONCE_POOL_CLUSTERS:
            low.add_metric([cluster], settings.LEDGER_NONCE_POOL_LOW_WATER)
    return [pool, low]


def heartbeats_state():
    now = timezone.now()
    age = GaugeMetricFamily("ledger_heartbeat_age_seconds", "Time since beat published, or a worker ran, the heartbeat task (every 10 s); "
                            "absent when never seen.", labels=["process"])
    at = GaugeMetricFamily("ledger_heartbeat_timestamp_seconds", "When that was (Unix time).", labels=["process"])
    for row in Heartbeat.objects.filter(name__in=["worker", "beat"]):
        age.add_metric([row.name], _age(now, row.at))
        at.add_metric([row.name], row.at.timestamp())
    return [age, at]


def metrics_register() -> None:
    for name, source in (("transactions", transactions_state), ("webhooks", webhooks_state), ("balances", balances_state),
                         ("nonce_pool", nonce_pool_state), ("heartbeats", heartbeats_state)):
        collector_register(name, source)
