"""The transaction pump: each cluster's work in shards, each shard pumped by one holder at a time.

A pass claims a holder's SIGNED transactions and sends them in JSON-RPC batches
(``settlement.transactions_submit``), then looks up every submitted one in batched
getSignatureStatuses and settles what landed, applying effects in one database transaction
(``settlement.transactions_follow``). Passes repeat while anything is in flight; the pump stops
after LEDGER_PUMP_IDLE_SECONDS with nothing to do.

Shards (transactions/shards.py; docs/transactions.md, "Shards"): a cluster's transactions are
dealt into LEDGER_PUMP_SHARDS shards by their ordering key, and each shard has a
``PumpLease``, taken and renewed by a compare-and-set UPDATE, so one shard is never pumped by
two holders. A holder (one pump task, in any worker process on any machine) counts itself
among the cluster's ``PumpMember`` rows and takes at most ceil(shards / members) shards; one
holding more gives the surplus back, split by the rows waiting in each shard so that the
taker gets about half the work, and a worker that starts gets its share within
``_REBALANCE_SECONDS``. A holder's pass covers all the shards it holds at once (one claim,
one follow: the cost per transaction does not grow with the number of shards), so one
process holding every shard pumps as the single pump did. A holder killed with SIGKILL
leaves leases that lapse after LEDGER_PUMP_LEASE_SECONDS; then the next request's kick, the
watch (beat, every 2 s), a worker starting or another holder's rebalance takes over. Nothing
is lost meanwhile: the rows are the queue (docs/transactions.md, "The pump").

A pass can wait on the network far longer than a lease: a node that hangs holds each call up
to its deadline, and a pass makes several calls (``_LeaseKeeper``). A thread of the running
pump renews its leases every third of a lease while a pass is under way, so a slow pass keeps
its shards instead of another holder taking them and the two stopping each other in turn
(measured under the fault front's flaky profile: docs/chain.md). It only extends leases the
loop holds; taking and giving back stay the loop's, and a loop that has not come back from
a pass for LEDGER_PUMP_STALL_SECONDS is let go (its leases lapse as a killed holder's do).

Kicks are cheap and race-free: a request that commits a SIGNED row enqueues a pump only
when it sees no live lease on its row's shard (``pump_kick``); a pump about to stop releases
its leases first and then looks for work once more, so a row committed by a request that saw
a lease live is always found.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, connections, transaction as db_transaction
from django.db.models import Count, Q
from django.utils import timezone

from ledger_project.shutdown import stopping
from tenancy.scoping import worker_only

from . import resign, settlement
from .models import PumpLease, PumpMember, Transaction, TransactionStatus
from .shards import buckets_of, shard_count, shard_of

logger = logging.getLogger("ledger.transactions")

# Per pass: a pass applies effects at ~15-20 queries a transaction, so it is bounded to stay
# well inside the lease (renewed between its phases) and to keep confirmation latency even.
_SEND_BATCH = 100
_FOLLOW_BATCH = 200
_IDLE_SLEEP = 0.05  # between passes that moved nothing
# How often a holder counts the members and renews, takes or gives back shards (a few
# statements on small tables: not every pass).
_REBALANCE_SECONDS = 0.5


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _lease_seconds() -> timedelta:
    return timedelta(seconds=settings.LEDGER_PUMP_LEASE_SECONDS)


def lease_take(cluster: str, holder: str, shard: int = 0) -> bool:
    """Take or renew ``cluster``'s ``shard`` lease for ``holder``: it is ours, or it lapsed."""
    now = timezone.now()
    taken = PumpLease.objects.filter(Q(holder=holder) | Q(lease_until__lt=now), cluster=cluster, shard=shard).update(holder=holder, lease_until=now + _lease_seconds())
    if taken:
        return True
    try:
        with db_transaction.atomic():
            PumpLease.objects.create(cluster=cluster, shard=shard, holder=holder, lease_until=now + _lease_seconds())
        return True
    except IntegrityError:
        return False  # it exists and is someone else's


def leases_renew(cluster: str, holder: str, shards: frozenset[int]) -> frozenset[int]:
    """Renew ``holder``'s leases of ``shards``; the ones still ours (one UPDATE, and a read
    only when some were lost: they lapsed and another holder took them)."""
    if not shards:
        return frozenset()
    if _leases_extend(cluster, holder, shards) == len(shards):
        return shards
    kept = frozenset(PumpLease.objects.filter(cluster=cluster, holder=holder, shard__in=shards).values_list("shard", flat=True))
    logger.warning("pump of %s lost shards %s to another holder", cluster, sorted(shards - kept))
    return kept


def _leases_extend(cluster: str, holder: str, shards: frozenset[int]) -> int:
    """One UPDATE: a lease's time more on those of ``shards`` ``holder`` still holds; how many."""
    return PumpLease.objects.filter(cluster=cluster, holder=holder, shard__in=shards).update(lease_until=timezone.now() + _lease_seconds())


def lease_release(cluster: str, holder: str, shards=None) -> None:
    """Give up ``holder``'s leases of ``cluster`` (of ``shards`` only, when given)."""
    ours = PumpLease.objects.filter(cluster=cluster, holder=holder)
    if shards is not None:
        ours = ours.filter(shard__in=shards)
    ours.update(holder="", lease_until=timezone.now())


def lease_live(cluster: str, shard: int | None = None) -> bool:
    """Whether ``cluster``'s ``shard`` (None: any of its shards) has a live holder."""
    live = PumpLease.objects.filter(cluster=cluster, lease_until__gt=timezone.now())
    return (live if shard is None else live.filter(shard=shard)).exists()


def _work(cluster: str):
    return Transaction.unscoped.filter(Q(status=TransactionStatus.SIGNED, submit_when_signed=True) | Q(status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED]), cluster=cluster)


def _in_flight(cluster: str, buckets: list[int] | None):
    rows = Transaction.unscoped.filter(cluster=cluster, status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED])
    return rows if buckets is None else rows.filter(shard_key__in=buckets)


@worker_only  # the pump acts for no tenant
def work_pending(cluster: str, shards=None) -> bool:
    """Anything to send or follow in ``cluster`` (in ``shards``, when given)."""
    buckets = buckets_of(shards)
    return (_work(cluster) if buckets is None else _work(cluster).filter(shard_key__in=buckets)).exists()


@worker_only  # the pump acts for no tenant
def shards_with_work(cluster: str) -> set[int]:
    return {shard_of(bucket) for bucket in _work(cluster).order_by().values_list("shard_key", flat=True).distinct()}


@worker_only  # the pump acts for no tenant
def pump_pass(cluster: str, renew=None, shards=None) -> tuple[int, int]:
    """One pass over ``shards`` (None: all of the cluster's): send what is SIGNED, follow
    what is in flight — submitted ones first, then CONFIRMED ones (waiting for finalization)
    not looked at for LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS. ``renew()`` (the leases) runs
    between the phases and answers the shards still held; none stops the pass. Returns
    (sent, still in flight).

    First, unsent SIGNED rows near their blockhash's end are signed again on a fresh one
    (``resign.resign_unsent``), so the claim below never sends bytes that are about to die.
    A pass that sent sends again after following: under a send budget the next window has
    often opened meanwhile (docs/chain.md, "Budgets as windows")."""
    resign.resign_unsent(cluster=cluster, buckets=buckets_of(shards))
    sent = len(settlement.transactions_submit(cluster=cluster, limit=_SEND_BATCH, buckets=buckets_of(shards)))
    if renew is not None:
        shards = renew()
        if not shards:
            return sent, 0
    in_flight = _in_flight(cluster, buckets_of(shards))
    recheck = timezone.now() - timedelta(seconds=settings.LEDGER_PUMP_RECHECK_CONFIRMED_SECONDS)
    due = list(in_flight.filter(status=TransactionStatus.SUBMITTED).order_by("pk")[:_FOLLOW_BATCH])
    if len(due) < _FOLLOW_BATCH:
        due += list(in_flight.filter(status=TransactionStatus.CONFIRMED, updated_at__lte=recheck).order_by("pk")[:_FOLLOW_BATCH - len(due)])
    still = settlement.transactions_follow(due)
    if sent:
        # What was queued behind the first send (the budget's next window may have opened
        # while following): sent now rather than a pass later.
        sent += len(settlement.transactions_submit(cluster=cluster, limit=_SEND_BATCH, buckets=buckets_of(shards)))
    return sent, len(still)


@worker_only  # the pump acts for no tenant
def shard_loads(cluster: str) -> dict[int, int]:
    """Shard → rows to send or follow (one GROUP BY over the work's index)."""
    loads: dict[int, int] = {}
    for bucket, rows in _work(cluster).order_by().values_list("shard_key").annotate(rows=Count("pk")).values_list("shard_key", "rows"):
        loads[shard_of(bucket)] = loads.get(shard_of(bucket), 0) + rows
    return loads


def shards_kept(held: frozenset[int], share: int, loads: dict[int, int]) -> frozenset[int]:
    """Which ``share`` of ``held`` a holder keeps when it gives the rest back: the heaviest
    first, each to the lighter side (kept or given) that has room, so the holder that takes
    the surplus gets about as much work as is kept — not the idle shards, which would leave
    it nothing to do while this one drains the rest alone."""
    kept: list[int] = []
    given: list[int] = []
    kept_rows = given_rows = 0
    for shard in sorted(held, key=lambda s: (-loads.get(s, 0), s)):
        if len(kept) < share and (len(given) >= len(held) - share or kept_rows <= given_rows):
            kept.append(shard)
            kept_rows += loads.get(shard, 0)
        else:
            given.append(shard)
            given_rows += loads.get(shard, 0)
    return frozenset(kept)


def _member_count(cluster: str, holder: str) -> int:
    """Note ``holder`` as a member of ``cluster``'s pump for a lease's time; the live
    members, this one included."""
    now = timezone.now()
    if not PumpMember.objects.filter(cluster=cluster, holder=holder).update(seen_until=now + _lease_seconds()):
        PumpMember.objects.create(cluster=cluster, holder=holder, seen_until=now + _lease_seconds())  # holders are unique: no race
    return PumpMember.objects.filter(cluster=cluster, seen_until__gt=now).count()


def _member_leave(cluster: str, holder: str) -> None:
    # And rows of members killed long ago (they lapsed already; this only tidies the table).
    PumpMember.objects.filter(Q(holder=holder) | Q(seen_until__lt=timezone.now() - timedelta(minutes=5)), cluster=cluster).delete()


def _rebalance(cluster: str, holder: str, held: frozenset[int]) -> tuple[frozenset[int], bool]:
    """Renew what ``holder`` holds, give back what is beyond its share, take free or lapsed
    shards up to it (those with work first). Returns the shards held and whether it should
    wait for some: it holds none and another holder holds more than its share."""
    count = shard_count()
    share = math.ceil(count / _member_count(cluster, holder))
    held = leases_renew(cluster, holder, held)
    if len(held) > share:
        surplus = held - shards_kept(held, share, shard_loads(cluster))
        lease_release(cluster, holder, surplus)
        return held - surplus, False
    now = timezone.now()
    leases = list(PumpLease.objects.filter(cluster=cluster, shard__lt=count).values_list("shard", "holder", "lease_until"))
    live = {shard: other for shard, other, until in leases if until > now}
    if len(held) < share:
        free = [shard for shard in range(count) if shard not in live]
        if free:
            busy = shards_with_work(cluster)
            for shard in sorted(free, key=lambda s: (s not in busy, s)):
                if len(held) >= share:
                    break
                if lease_take(cluster, holder, shard):
                    held |= {shard}
    others: dict[str, int] = {}
    for other in live.values():
        if other != holder:
            others[other] = others.get(other, 0) + 1
    return held, not held and any(n > share for n in others.values())


def _worth_joining(cluster: str) -> bool:
    """Whether a new holder would get a shard: one has no live holder, or a holder holds more
    than its share once the newcomer counts. Two reads and no write, so that a backlog of
    kicks (requests accepted while no worker ran) costs little once a holder runs."""
    count = shard_count()
    now = timezone.now()
    live = list(PumpLease.objects.filter(cluster=cluster, shard__lt=count, lease_until__gt=now).values_list("holder", flat=True))
    if len(live) < count:
        return True
    share = math.ceil(count / (PumpMember.objects.filter(cluster=cluster, seen_until__gt=now).count() + 1))
    return any(live.count(holder) > share for holder in set(live))


class _LeaseKeeper:
    """Renews a running pump's leases from a thread of its own while a pass is under way.

    ``shards`` is what the loop holds (the loop sets it after every renewal and rebalance);
    the thread extends those leases every third of a lease with one UPDATE and never takes,
    gives back or reports a loss (the loop's renewal does: it reads what is still ours).
    The thread stops renewing once the loop has not come back for LEDGER_PUMP_STALL_SECONDS,
    so a wedged process loses its shards as a killed one does. Not started when the pump
    runs inside a database transaction (a test's): another connection would not see its
    rows."""

    def __init__(self, cluster: str, holder: str):
        self.cluster = cluster
        self.holder = holder
        self.shards: frozenset[int] = frozenset()
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "_LeaseKeeper":
        if not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._run, name=f"pump-lease-{self.cluster}", daemon=True)
            self._thread.start()
        return self

    def beat(self, shards: frozenset[int]) -> None:
        """The loop is alive and holds ``shards``."""
        self.shards = shards
        self._beat = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=settings.LEDGER_PUMP_LEASE_SECONDS)

    def _run(self) -> None:
        every = settings.LEDGER_PUMP_LEASE_SECONDS / 3
        try:
            while not self._stop.wait(every):
                shards = self.shards
                if not shards or time.monotonic() - self._beat > settings.LEDGER_PUMP_STALL_SECONDS:
                    continue
                try:
                    _leases_extend(self.cluster, self.holder, shards)
                except Exception:  # the database away for a moment: the loop's own renewal tells
                    logger.warning("pump of %s could not renew its leases from its keeper", self.cluster, exc_info=True)
        finally:
            connections.close_all()


def pump_run(cluster: str, *, holder: str, run_seconds: float | None = None) -> bool:
    """Pump the shards of ``cluster`` this holder can take: passes until nothing is in flight
    in them for LEDGER_PUMP_IDLE_SECONDS or ``run_seconds`` (default LEDGER_PUMP_RUN_SECONDS)
    are over, it holds no shard and none is due to come to it, or the worker stops (between
    passes: a pass's effects are applied in one database transaction, so the next holder
    carries on from the rows). Returns whether work is
    left that no live holder pumps (looked for after the leases are released)."""
    run_seconds = settings.LEDGER_PUMP_RUN_SECONDS if run_seconds is None else run_seconds
    if not _worth_joining(cluster):
        return False  # every shard has a holder at its share; they find any new row
    held: frozenset[int] = frozenset()
    started = time.monotonic()
    next_rebalance = started
    idle_since: float | None = None

    keeper = _LeaseKeeper(cluster, holder).start()

    def renew() -> frozenset[int]:
        nonlocal held
        held = leases_renew(cluster, holder, held)
        keeper.beat(held)
        return held

    try:
        while time.monotonic() - started < run_seconds and not stopping():
            if time.monotonic() >= next_rebalance:
                had = bool(held)
                held, waiting = _rebalance(cluster, holder, held)
                keeper.beat(held)
                next_rebalance = time.monotonic() + _REBALANCE_SECONDS
                if not held and had:
                    logger.warning("pump of %s lost its leases; stopping", cluster)
                    break
                if not held and not waiting:
                    break  # every shard has a holder at its share: nothing for this one
            if not held:
                time.sleep(_IDLE_SLEEP)  # until a holder over its share gives some back
                continue
            began = time.perf_counter()
            sent, in_flight = pump_pass(cluster, renew=renew, shards=held)
            if sent or in_flight:
                logger.debug("pump pass on %s shards %s: %d sent, %d in flight, %.1f ms", cluster, sorted(held), sent, in_flight, (time.perf_counter() - began) * 1000)
            if not renew():
                logger.warning("pump of %s lost its leases; stopping", cluster)
                break
            if sent or in_flight or work_pending(cluster, held):
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= settings.LEDGER_PUMP_IDLE_SECONDS:
                    break
            if not sent:
                _pause(cluster)
    finally:
        keeper.stop()
        lease_release(cluster, holder)
        _member_leave(cluster, holder)
    # A holder that lost its shards reports them too when no live holder has them now (the
    # taker stopped meanwhile): work is never left to the watch alone.
    return bool(shards_needing_pump(cluster))


def _pause(cluster: str) -> None:
    """Between passes that sent nothing: _IDLE_SLEEP, or until the send budget that refused
    the last claim has room when that is sooner than the next pass would find it (a pass
    follows first: under a budget that lag was 5 % of the sends, docs/chain.md)."""
    from chain.rpc import send_wait

    wait = send_wait(cluster)
    time.sleep(_IDLE_SLEEP if wait is None else min(wait, _IDLE_SLEEP))


def pump_kick(cluster: str, shard: int | None = None) -> None:
    """After a commit that left a SIGNED row in ``shard``: start a pump unless that shard
    (None: any of the cluster's) has a live holder."""
    from .tasks import pump

    if not lease_live(cluster, shard):
        pump.delay(cluster=cluster)


@worker_only  # the pump acts for no tenant
def shards_needing_pump(cluster: str) -> set[int]:
    """``cluster``'s shards with work and no live holder."""
    busy = shards_with_work(cluster)
    if not busy:
        return set()
    live = set(PumpLease.objects.filter(cluster=cluster, lease_until__gt=timezone.now()).values_list("shard", flat=True))
    return busy - live


@worker_only  # the watch sweeps every cluster
def pumps_needed() -> dict[str, int]:
    """Cluster → how many of its shards have work and no live holder (of the clusters this
    process has an RPC URL for)."""
    busy = Transaction.unscoped.filter(
        Q(status=TransactionStatus.SIGNED, submit_when_signed=True) | Q(status__in=[TransactionStatus.SUBMITTED, TransactionStatus.CONFIRMED])
    ).order_by().values_list("cluster", flat=True).distinct()
    out = {}
    for cluster in busy:
        if cluster in settings.LEDGER_CLUSTERS:
            needy = shards_needing_pump(cluster)
            if needy:
                out[cluster] = len(needy)
    return out


def clusters_needing_pump() -> list[str]:
    """Clusters with a shard that has work and no live holder."""
    return list(pumps_needed())
