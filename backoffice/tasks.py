"""Back office tasks: the heartbeat (backoffice/heartbeat.py), the balance samples
(backoffice/balances.py)."""

from __future__ import annotations

from celery import shared_task

from .heartbeat import HEARTBEAT_TASK, heartbeat_stamp


@shared_task(name=HEARTBEAT_TASK, acks_late=True)
def heartbeat() -> str:
    heartbeat_stamp("worker")
    return "ok"


@shared_task(name="ledger.backoffice.sample_balances", acks_late=True)
def sample_balances() -> int:
    from .balances import balances_sample

    return balances_sample()
