"""Admission by backlog (docs/chain.md, "Admission by backlog"): under a provider's send
budget the engine accepts no more work than that budget can send within half a blockhash's life.

A cluster whose ``sendTransaction`` or total (``*``) is limited by LEDGER_RPC_BUDGETS can
send at most ``rate`` transactions a second: the send limit, or half the total (the other
half carries the pump's reads), whichever is lower. The pump's backlog is the SIGNED rows due
for submission and not yet sent (the partial index ``txn_signed_unsent_lvbh``). When it
holds what the budget sends in LEDGER_ADMISSION_HORIZON_SECONDS (30 s, half a blockhash's
life of 150 blocks: the backlog's last row still goes out on the blockhash it was signed
with, not re-signed on a fresh one, which would cost its LEDGER_RESIGN_MAX), a new operation
is refused before anything is built or stored: 503
CHAIN_BUSY with the Retry-After in which the budget sends the surplus. The same request, same
x-request-id, may be sent again. Without a send budget (the local node's default) nothing is
counted.

The count is read at most once per LEDGER_ADMISSION_REFRESH_SECONDS per process and cluster:
one indexed COUNT a second, whatever the request rate. So a process may admit up to a
second's worth of work past the line; the horizon is a bound on waiting, not a hard cap.
"""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings

from chain.budget import TOTAL, budget
from chain.errors import ChainBusy

from .models import Transaction, TransactionStatus

#: the share of a cluster's total budget (``*``) admission counts as sends: each sent
#: transaction costs about one read more (its status, in batches; its blockhash, shared)
TOTAL_SEND_SHARE = 0.5

_counted: dict[str, tuple[float, int]] = {}
_lock = threading.Lock()


class SendBacklogFull(ChainBusy):
    """503 CHAIN_BUSY at accept time: the cluster's unsent backlog already holds what its
    send budget carries within a blockhash's life."""

    def __init__(self, cluster: str, backlog: int, rate: float, retry_after: int):
        super().__init__(
            f"{cluster} has {backlog} signed transactions waiting for its send budget ({rate:g}/s); "
            f"nothing was stored. Retry after {retry_after} s.",
            retry_after=retry_after,
        )


def send_rate(cluster: str) -> float | None:
    """Transactions a second the budget lets ``cluster`` send (None: unlimited)."""
    limits = budget().limits.get(cluster, {})
    rates = [limits["sendTransaction"].rate] if "sendTransaction" in limits else []
    if TOTAL in limits:
        # The total carries the pump's reads too (statuses, blockhashes, the prefetch): the
        # sends are given TOTAL_SEND_SHARE of it, not all of it.
        rates.append(limits[TOTAL].rate * TOTAL_SEND_SHARE)
    return min(rates) if rates else None


def backlog(cluster: str) -> int:
    """The pump's unsent work on ``cluster``, read at most once per refresh period."""
    now = time.monotonic()
    seen = _counted.get(cluster)
    if seen is not None and now - seen[0] < settings.LEDGER_ADMISSION_REFRESH_SECONDS:
        return seen[1]
    count = Transaction.unscoped.filter(cluster=cluster, status=TransactionStatus.SIGNED, submit_attempts=0, submit_when_signed=True).count()
    with _lock:
        _counted[cluster] = (now, count)
    return count


def admit(cluster: str | None) -> None:
    """Refuse (``SendBacklogFull``) a new operation on ``cluster`` whose send budget is
    already promised for the horizon; else nothing."""
    if cluster is None or settings.LEDGER_ADMISSION_HORIZON_SECONDS <= 0:
        return
    rate = send_rate(cluster)
    if rate is None:
        return
    waiting = backlog(cluster)
    capacity = rate * settings.LEDGER_ADMISSION_HORIZON_SECONDS
    if waiting < capacity:
        return
    # The time the budget needs to bring the backlog back under the line, at least 1 s.
    retry_after = max(1, min(60, math.ceil((waiting - capacity) / rate) + 1))
    raise SendBacklogFull(cluster, waiting, rate, retry_after)


def forget() -> None:
    """Drop the cached counts (tests, after changing the budget)."""
    with _lock:
        _counted.clear()
