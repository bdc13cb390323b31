"""The transaction pump: one per cluster, sending and following every transaction in flight.

A pass claims the cluster's SIGNED transactions and sends them in JSON-RPC batches
(``settlement.transactions_submit``), then looks up every submitted one in batched
getSignatureStatuses and settles what landed, applying effects in one database transaction
(``settlement.transactions_follow``). Passes repeat while anything is in flight; the pump stops
after LEDGER_PUMP_IDLE_SECONDS with nothing to do.

One holder per cluster: ``PumpLease`` is taken and renewed by a compare-and-set UPDATE, so
several worker processes never pump one cluster together. A holder killed with SIGKILL
leaves a lease that lapses after LEDGER_PUMP_LEASE_SECONDS; then the next request's kick,
the watch (beat, every 2 s) or a worker starting takes over. Nothing is lost meanwhile: the
rows are the queue (docs/transactions.md, "The pump").

Kicks are cheap and race-free: a request that commits a SIGNED row enqueues a pump only
when it sees no live lease (``pump_kick``); a pump about to stop releases its lease first
and then looks for work once more, so a row committed by a request that saw the lease live
is always found.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction as db_transaction
from django.db.models import Q
from django.utils import timezone

from ledger_project.shutdown import stopping
from tenancy.scoping import worker_only

from . import settlement
from .models import PumpLease, Transaction, TransactionStatus

logger = logging.getLogger("ledger.transactions")

# Per pass: a pass applies effects at ~15-20 queries a transaction, so it is bounded to stay
# well inside the lease (renewed between its phases) and to keep confirmation latency even.
_SEND_BATCH = 100
_FOLLOW_BATCH = 200
_IDLE_SLEEP = 0.05  # between passes that moved nothing


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _lease_seconds() -> timedelta:
    return timedelta(seconds=settings.LEDGER_PUMP_LEASE_SECONDS)


def lease_take(cluster: str, holder: str) -> bool:
    """Take or renew ``cluster``'s lease for ``holder``: it is ours, or it lapsed."""
    now = timezone.now()
    taken = PumpLease.objects.filter(Q(holder=holder) | Q(lease_until__lt=now), cluster=cluster).update(holder=holder, lease_until=now + _lease_seconds())
    if taken:
        return True
    try:
        with db_transaction.atomic():
            PumpLease.objects.create(cluster=cluster, holder=holder, lease_until=now + _lease_seconds())
        return True
    except IntegrityError:
        return False  # it exists and is someone else's


def lease_release(cluster: str, holder: str) -> None:
    PumpLease.objects.filter(cluster=cluster, holder=holder).update(holder="", lease_until=timezone.now())


def lease_live(cluster: str) -> bool:
    return PumpLease.objects.filter(cluster=cluster, lease_until__gt=timezone.now()).exists()


def _due_to_send(cluster: str):
    return Transaction.unscoped.filter(cluster=cluster, status=TransactionStatus.SIGNED, submit_when_signed=True)


def _in_flight(cluster: str):
    return Transaction.unscoped.filter(cluster=cluster, status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED])


@worker_only  # the pump acts for no tenant
def work_pending(cluster: str) -> bool:
    return _due_to_send(cluster).exists() or _in_flight(cluster).exists()


@worker_only  # the pump acts for no tenant
def pump_pass(cluster: str, renew=lambda: True) -> tuple[int, int]:
    """One pass: send what is SIGNED, follow what is in flight — submitted ones first, then
    CONFIRMED ones (waiting for finalization) not looked at for
    LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS. ``renew()`` (the lease) runs between the
    phases; False stops the pass. Returns (sent, still in flight)."""
    sent = len(settlement.transactions_submit(cluster=cluster, limit=_SEND_BATCH))
    if not renew():
        return sent, 0
    recheck = timezone.now() - timedelta(seconds=settings.LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS)
    due = list(_in_flight(cluster).filter(status=TransactionStatus.SUBMITTED).order_by("pk")[:_FOLLOW_BATCH])
    if len(due) < _FOLLOW_BATCH:
        due += list(_in_flight(cluster).filter(status=TransactionStatus.CONFIRMED, updated_at__lte=recheck).order_by("pk")[:_FOLLOW_BATCH - len(due)])
    still = settlement.transactions_follow(due)
    return sent, len(still)


def pump_run(cluster: str, *, holder: str, run_seconds: float | None = None) -> bool:
    """Pump ``cluster`` while it holds the lease: passes until nothing is in flight for
    LEDGER_PUMP_IDLE_SECONDS or ``run_seconds`` (default LEDGER_PUMP_RUN_SECONDS) are
    over, or the worker stops (between passes: a pass's effects are applied in one database
    transaction, so the next worker's pump carries on from the rows). Returns whether work
    is left for another run (looked for after the lease is released)."""
    run_seconds = settings.LEDGER_PUMP_RUN_SECONDS if run_seconds is None else run_seconds
    if not lease_take(cluster, holder):
        return False
    started = time.monotonic()
    idle_since: float | None = None
    try:
        while time.monotonic() - started < run_seconds and not stopping():
            began = time.perf_counter()
            sent, in_flight = pump_pass(cluster, renew=lambda: lease_take(cluster, holder))
            if sent or in_flight:
                logger.debug("pump pass on %s: %d sent, %d in flight, %.1f ms", cluster, sent, in_flight, (time.perf_counter() - began) * 1000)
            if not lease_take(cluster, holder):
                logger.warning("pump of %s lost its lease; stopping", cluster)
                return False
            if sent or in_flight or work_pending(cluster):
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= settings.LEDGER_PUMP_IDLE_SECONDS:
                    break
            if not sent:
                time.sleep(_IDLE_SLEEP)
    finally:
        lease_release(cluster, holder)
    return work_pending(cluster)


def pump_kick(cluster: str) -> None:
    """After a commit that left a SIGNED row: start the cluster's pump unless one runs."""
    from .tasks import pump

    if not lease_live(cluster):
        pump.delay(cluster=cluster)


@worker_only  # the watch sweeps every cluster
def clusters_needing_pump() -> list[str]:
    """Clusters with transactions to send or follow and no live pump (of those this
    process has an RPC URL for)."""
    busy = Transaction.unscoped.filter(
        Q(status=TransactionStatus.SIGNED, submit_when_signed=True) | Q(status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED])
    ).values_list("cluster", flat=True).distinct()
    return [cluster for cluster in busy if cluster in settings.LEDGER_CLUSTERS and not lease_live(cluster)]
