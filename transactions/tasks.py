"""Worker tasks of the transaction engine: thin, named, and claiming their work.

``pump`` (transactions/pump.py: each task takes its share of a cluster's shards) sends SIGNED
transactions and follows submitted ones in batches until nothing is in flight; a committed
request kicks one when its shard has no holder, and ``pump_watch`` (beat, and a worker
starting) starts one per shard whose holder died.
``reconcile_inflight`` runs on beat and when a worker starts: held transactions (never
submitted) end once their lifetime is over, and clusters with work get a pump.
``fill_nonce_pools`` (beat) and ``fill_nonce_pool`` (kicked by a lease that leaves the pool
low) create durable nonce accounts ahead of demand and close free ones beyond what the pool
keeps; ``sweep_nonce_leases`` frees tenants' nonce accounts whose lease was kept until their
nonce moved on. The webhook tasks are the webhooks app's
(webhooks/tasks.py).
"""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready

from django.conf import settings
from django.core.cache import cache

from ledger_project.shutdown import stopping

from . import nonce_pool, pump as pumping, settlement
from chain.errors import ChainUnavailable
from .models import Transaction, TransactionStatus


@shared_task(name="ledger.transactions.pump", acks_late=True)
def pump(*, cluster: str) -> None:
    try:
        more = pumping.pump_run(cluster, holder=pumping.new_holder())
    except ChainUnavailable:
        # The cluster does not answer: nothing changed; try again shortly.
        if not stopping():
            pump.apply_async(kwargs={"cluster": cluster}, countdown=1.0)
        return
    if more and not stopping():
        # Run over (or idle with work just committed): a fresh task carries on. A stopping
        # worker leaves the work to the rows: the next worker's start reconciles them.
        pump.delay(cluster=cluster)


@shared_task(name="ledger.transactions.pump_watch", acks_late=True)
def pump_watch() -> int:
    """One pump per shard with work and no live holder: each takes a share of the shards,
    so as many worker processes as there are such shards can join."""
    needed = pumping.pumps_needed()
    for cluster, shards in needed.items():
        for _ in range(shards):
            pump.delay(cluster=cluster)
    return sum(needed.values())


# Messages queued by a service version that had a task per transaction (a rolling upgrade)
# start the pump instead.
@shared_task(name="ledger.transactions.submit", acks_late=True)
def submit_transaction(*, transaction_id: int) -> None:
    pump_watch()


@shared_task(name="ledger.transactions.confirm", acks_late=True)
def confirm_transaction(*, transaction_id: int, check: int = 0) -> None:
    pump_watch()


@shared_task(name="ledger.transactions.reconcile_inflight", acks_late=True)
def reconcile_inflight(*, stale_seconds: float = 5.0) -> int:
    """Held transactions looked at for expiry, and pumps started: how many of both."""
    held = settlement.transactions_held(stale_after=timedelta(seconds=stale_seconds))
    for transaction_id in held:
        expire_held_transaction.delay(transaction_id=transaction_id)
    return len(held) + pump_watch()


@shared_task(name="ledger.transactions.expire_held", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def expire_held_transaction(*, transaction_id: int) -> None:
    if settlement.transaction_expire_held(transaction_id=transaction_id) == TransactionStatus.SUBMITTED:
        # It landed without the service sending it: follow it now, not at the next sweep.
        pump.delay(cluster=Transaction.unscoped.get(pk=transaction_id).cluster)


@shared_task(name="ledger.transactions.fill_nonce_pool", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def fill_nonce_pool(*, cluster: str) -> int:
    # One fill per cluster at a time (beat and low-water kicks overlap); a crashed holder's
    # lock expires, and the next fill finishes what it left CREATING.
    lock = f"ledger:nonce-fill:{cluster}"
    if not cache.add(lock, 1, timeout=300):
        return 0
    try:
        ready = nonce_pool.nonce_pool_fill(cluster=cluster)
        nonce_pool.nonce_pool_trim(cluster=cluster)  # free accounts beyond what is kept: rent back
        return ready
    finally:
        cache.delete(lock)


@shared_task(name="ledger.transactions.sweep_nonce_leases", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def sweep_nonce_leases(*, cluster: str) -> int:
    # Leases kept by transactions that ended while their nonce could not be advanced (a
    # tenant's off-platform authority): freed once the chain shows the nonce moved on.
    return nonce_pool.nonce_leases_sweep(cluster=cluster)


@shared_task(name="ledger.transactions.fill_nonce_pools", acks_late=True)
def fill_nonce_pools() -> None:
    nonce_pool.nonce_pool_reclaim()
    for cluster in settings.LEDGER_NONCE_POOL_CLUSTERS:
        if cluster in settings.LEDGER_CLUSTERS:
            fill_nonce_pool.delay(cluster=cluster)
    for cluster in nonce_pool.clusters_with_kept_leases():
        if cluster in settings.LEDGER_CLUSTERS:
            sweep_nonce_leases.delay(cluster=cluster)


@worker_ready.connect
def _reconcile_on_start(sender=None, **kwargs) -> None:
    # A restarted worker first looks again at everything left in flight (crash safety),
    # and once more when a pump lease its killed predecessor held has lapsed.
    reconcile_inflight.delay(stale_seconds=0)
    pump_watch.apply_async(countdown=settings.LEDGER_PUMP_LEASE_SECONDS + 0.5)
