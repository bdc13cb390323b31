"""Back office tasks: the heartbeat (backoffice/heartbeat.py)."""

from __future__ import annotations

from celery import shared_task

from .heartbeat import HEARTBEAT_TASK, heartbeat_stamp


@shared_task(name=HEARTBEAT_TASK, acks_late=True)
def heartbeat() -> str:
    heartbeat_stamp("worker")
    return "ok"
