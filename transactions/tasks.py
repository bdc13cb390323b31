"""Worker tasks of the transaction engine: thin, named, and claiming their work.

submit → confirm (rescheduled with backoff while in flight) → effects applied once.
``reconcile_inflight`` runs on beat and when a worker starts, so transactions whose tasks
were lost in a crash are looked up again by signature, and held ones (never submitted) end
once their lifetime is over. ``fill_nonce_pools`` (beat) and ``fill_nonce_pool`` (kicked by a
lease that leaves the pool low) create durable nonce accounts ahead of demand and close free
ones beyond what the pool keeps.
"""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready

from django.conf import settings
from django.core.cache import cache

from . import fee_payers, services
from .chain.errors import ChainUnavailable

# Seconds between confirmation checks: quick at first, then every 2 s.
_BACKOFF = (0.2, 0.3, 0.5, 0.5, 1.0, 1.0, 2.0)
_MAX_CHECKS = 400  # ~13 minutes; reconciliation takes over after that


@shared_task(name="ledger.transactions.submit", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def submit_transaction(*, transaction_id: int) -> None:
    services.transaction_submit(transaction_id=transaction_id)
    confirm_transaction.apply_async(kwargs={"transaction_id": transaction_id, "check": 0}, countdown=_BACKOFF[0])


@shared_task(name="ledger.transactions.confirm", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=10)
def confirm_transaction(*, transaction_id: int, check: int = 0) -> None:
    if services.transaction_confirm(transaction_id=transaction_id) and check < _MAX_CHECKS:
        delay = _BACKOFF[min(check + 1, len(_BACKOFF) - 1)]
        confirm_transaction.apply_async(kwargs={"transaction_id": transaction_id, "check": check + 1}, countdown=delay)


@shared_task(name="ledger.transactions.reconcile_inflight", acks_late=True)
def reconcile_inflight(*, stale_seconds: float = 5.0) -> int:
    rows = services.transactions_in_flight(stale_after=timedelta(seconds=stale_seconds))
    for transaction_id, status in rows:
        if status == "SIGNED":
            submit_transaction.delay(transaction_id=transaction_id)
        elif status == "HELD":
            expire_held_transaction.delay(transaction_id=transaction_id)
        else:
            confirm_transaction.delay(transaction_id=transaction_id, check=0)
    return len(rows)


@shared_task(name="ledger.transactions.expire_held", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def expire_held_transaction(*, transaction_id: int) -> None:
    if services.transaction_expire_held(transaction_id=transaction_id) == services.TransactionStatus.SUBMITTED:
        # It landed without the service sending it: follow it now, not at the next sweep.
        confirm_transaction.delay(transaction_id=transaction_id, check=0)


@shared_task(name="ledger.transactions.fill_nonce_pool", acks_late=True, autoretry_for=(ChainUnavailable,), retry_backoff=True, max_retries=5)
def fill_nonce_pool(*, cluster: str) -> int:
    # One fill per cluster at a time (beat and low-water kicks overlap); a crashed holder's
    # lock expires, and the next fill finishes what it left CREATING.
    lock = f"ledger:nonce-fill:{cluster}"
    if not cache.add(lock, 1, timeout=300):
        return 0
    try:
        ready = fee_payers.nonce_pool_fill(cluster=cluster)
        fee_payers.nonce_pool_trim(cluster=cluster)  # free accounts beyond what is kept: rent back
        return ready
    finally:
        cache.delete(lock)


@shared_task(name="ledger.transactions.fill_nonce_pools", acks_late=True)
def fill_nonce_pools() -> None:
    fee_payers.nonce_pool_reclaim()
    for cluster in settings.LEDGER_NONCE_POOL_CLUSTERS:
        if cluster in settings.LEDGER_CLUSTERS:
            fill_nonce_pool.delay(cluster=cluster)


@worker_ready.connect
def _reconcile_on_start(sender=None, **kwargs) -> None:
    # A restarted worker first looks again at everything left in flight (crash safety).
    reconcile_inflight.delay(stale_seconds=0)
