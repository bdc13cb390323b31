"""The operations dashboard on the admin index (docs/admin.md, "Dashboard"): figures read
from the database and, through chain/rpc.py, from each cluster — nothing
made up. A cluster that does not answer within LEDGER_ADMIN_NODE_TIMEOUT_SECONDS is shown
as not answering; the page never waits longer for it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min, Q
from django.urls import reverse
from django.utils import timezone

from transactions.models import NonceAccount, NonceState, PlatformFeePayer, PumpLease, Transaction, TransactionStatus
from transactions.shards import shard_count

from .metrics import OPEN_STATUSES, webhook_figures
from .models import Heartbeat
from .plots import plots

AGE_BUCKETS = (("under 1 min", 0, 60), ("1–10 min", 60, 600), ("10–60 min", 600, 3600), ("over 1 h", 3600, None))
HELD = Q(status=TransactionStatus.PENDING_APPROVAL) | Q(status=TransactionStatus.PARTIALLY_SIGNED, approval_required=True)


def transactions_open() -> list[dict]:
    """Per cluster and status: how many, by age since built, and the oldest."""
    now = timezone.now()
    buckets = {}
    for label, low, high in AGE_BUCKETS:
        cond = Q(txn_timestamp__lte=now - timedelta(seconds=low))
        if high is not None:
            cond &= Q(txn_timestamp__gt=now - timedelta(seconds=high))
        buckets[label] = Count("id", filter=cond)
    rows = (Transaction.unscoped.filter(status__in=OPEN_STATUSES).order_by().values("cluster", "status")
            .annotate(total=Count("id"), oldest=Min("txn_timestamp"), **{f"b{i}": agg for i, agg in enumerate(buckets.values())}))
    out = []
    changelist = reverse("admin:transactions_transaction_changelist")
    for row in sorted(rows, key=lambda r: (r["cluster"], OPEN_STATUSES.index(r["status"]))):
        out.append({
            "cluster": row["cluster"], "status": row["status"], "total": row["total"], "oldest": row["oldest"],
            "ages": [row[f"b{i}"] for i in range(len(AGE_BUCKETS))],
            "url": f"{changelist}?status__exact={row['status']}&cluster__exact={row['cluster']}",
        })
    return out


def held_waiting(limit: int = 10) -> dict:
    queryset = Transaction.unscoped.filter(HELD)
    oldest = list(queryset.select_related("tenant").order_by("txn_timestamp")[:limit])
    return {
        "count": queryset.count(),
        "oldest": oldest,
        "url": reverse("admin:transactions_transaction_changelist") + "?status__exact=PENDING_APPROVAL",
    }


def _cluster_figures(cluster: str, fee_payer: str | None, nonce_addresses: list[str]) -> dict:
    """Node health, fee payer balance and the nonce pool's lamports of one cluster: network
    reads only (run in a thread; the database was read before)."""
    from solders.pubkey import Pubkey

    from chain.rpc import rpc_for

    out = {"node": None, "error": "", "fee_payer_lamports": None, "nonce_lamports": None}
    try:
        rpc = rpc_for(cluster)
        out["node"] = rpc.node_status()
        if fee_payer:
            out["fee_payer_lamports"] = rpc.balance(Pubkey.from_string(fee_payer))
        if nonce_addresses:
            out["nonce_lamports"] = sum(a.lamports for a in rpc.read_accounts(nonce_addresses).accounts.values() if a is not None)
    except Exception as exc:  # noqa: BLE001 - the dashboard reports every failure, whatever it is
        out["error"] = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
    return out


def clusters() -> list[dict]:
    """One row per configured cluster; the clusters are read in parallel, with a bound on
    the wait."""
    # The platform's pool only: a tenant's own nonce accounts are never leased to others.
    open_nonces = Q(tenant__isnull=True) & ~Q(state=NonceState.CLOSED)
    pools = {row["cluster"]: row for row in NonceAccount.objects.filter(open_nonces).order_by().values("cluster").annotate(
        free=Count("id", filter=Q(state=NonceState.READY, leased_at__isnull=True, leased_by__isnull=True)),
        leased=Count("id", filter=Q(leased_at__isnull=False) | Q(leased_by__isnull=False)),
        total=Count("id"),
    )}
    payers = {row.cluster: row.managed_key.public_key for row in PlatformFeePayer.objects.select_related("managed_key")}
    live_leases: dict[str, list[PumpLease]] = {}
    for lease in PumpLease.objects.filter(lease_until__gt=timezone.now()):
        live_leases.setdefault(lease.cluster, []).append(lease)
    names = list(settings.LEDGER_CLUSTERS)
    addresses = {name: list(NonceAccount.objects.filter(open_nonces, cluster=name).values_list("address", flat=True)[:200]) for name in names if name in pools}
    executor = ThreadPoolExecutor(max_workers=max(1, len(names)))
    futures = {name: executor.submit(_cluster_figures, name, payers.get(name), addresses.get(name, [])) for name in names}
    done, _ = wait(futures.values(), timeout=settings.LEDGER_ADMIN_NODE_TIMEOUT_SECONDS)
    executor.shutdown(wait=False)
    out = []
    for name, future in futures.items():
        figures = future.result() if future in done else {"node": None, "fee_payer_lamports": None, "nonce_lamports": None,
                                                           "error": f"no answer within {settings.LEDGER_ADMIN_NODE_TIMEOUT_SECONDS:g} s"}
        pool = pools.get(name, {"free": 0, "leased": 0, "total": 0})
        pooled = name in settings.LEDGER_NONCE_POOL_CLUSTERS
        lamports = figures["fee_payer_lamports"]
        live = live_leases.get(name, [])
        out.append({
            "cluster": name, **figures, "fee_payer": payers.get(name),
            "healthy": bool(figures["node"]) and figures["node"].get("health") == "ok",
            "fee_payer_low": lamports is not None and lamports < settings.LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS,
            "nonce_free": pool["free"], "nonce_leased": pool["leased"], "nonce_total": pool["total"], "nonce_pooled": pooled,
            "nonce_low": pooled and pool["free"] < settings.LEDGER_NONCE_POOL_LOW_WATER,
            # Shards held and by how many worker processes (docs/transactions.md, "Shards").
            "pump": f"running: {len(live)} of {shard_count()} shards, {len({lease.holder for lease in live})} holder(s)" if live else "idle",
        })
    return out


def webhook_backlog() -> dict:
    """The outbox: events that will be sent (of enabled webhooks: how many are due, and
    since when the oldest is due; how many wait for a retry; being sent), events paused
    because their webhook is disabled (counted apart: they are not a backlog, nothing is
    late), dead letters; disabled subscriptions; whether the delivery loop runs. One
    grouped read over the (status, next_attempt_at) index (``metrics.webhook_figures``,
    the same figures /metrics reports)."""
    from webhooks.delivery import LEASE
    from webhooks.models import DeliveryStatus, WebhookStatus, WebhookSubscription

    now = timezone.now()
    figures = webhook_figures(now)
    lease = PumpLease.objects.filter(cluster=LEASE).first()
    changelist = reverse("admin:webhooks_webhookevent_changelist")
    subscriptions = reverse("admin:webhooks_webhooksubscription_changelist")
    return {
        "pending": figures["due"] + figures["scheduled"], "due": figures["due"], "scheduled": figures["scheduled"], "lag_seconds": figures["lag_seconds"],
        "delivering": figures["delivering"], "paused": figures["paused"], "dead": figures["dead"], "last_dead": figures["last_dead"],
        "disabled": WebhookSubscription.unscoped.filter(status=WebhookStatus.DISABLED).count(),
        "loop": "running" if lease is not None and lease.lease_until > now else "idle",
        "pending_url": f"{changelist}?status__exact={DeliveryStatus.PENDING}&subscription__status__exact={WebhookStatus.ACTIVE}",
        "paused_url": f"{changelist}?status__exact={DeliveryStatus.PENDING}&subscription__status__exact={WebhookStatus.DISABLED}",
        "dead_url": f"{changelist}?status__exact={DeliveryStatus.DEAD}",
        "disabled_url": f"{subscriptions}?status__exact={WebhookStatus.DISABLED}",
    }


def heartbeats() -> list[dict]:
    stale_after = timedelta(seconds=settings.LEDGER_ADMIN_HEARTBEAT_STALE_SECONDS)
    now = timezone.now()
    rows = {row.name: row for row in Heartbeat.objects.all()}
    out = []
    for name, what in (("beat", "beat (scheduler)"), ("worker", "worker")):
        row = rows.get(name)
        out.append({"name": what, "at": row.at if row else None, "detail": row.detail if row else "", "age": (now - row.at).total_seconds() if row else None,
                    "stale": row is None or now - row.at > stale_after})
    return out


def dashboard(request) -> dict:
    return {
        "now": timezone.now(),
        "open": transactions_open(),
        "age_labels": [label for label, _, _ in AGE_BUCKETS],
        "held": held_waiting(),
        "clusters": clusters(),
        "heartbeats": heartbeats(),
        "webhooks": webhook_backlog(),
        "plots": plots(),
        "stale_after": settings.LEDGER_ADMIN_HEARTBEAT_STALE_SECONDS,
        "fee_payer_low": settings.LEDGER_ADMIN_FEE_PAYER_LOW_LAMPORTS,
        "can_approve": request.user.has_perm("transactions.approve_transaction"),
    }
