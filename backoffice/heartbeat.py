"""Worker and beat heartbeats (docs/admin.md, "Dashboard").

Beat sends ``ledger.backoffice.heartbeat`` every few seconds (settings.CELERY_BEAT_SCHEDULE,
seeded into the database schedule): publishing it stamps ``beat``; the worker that runs it
stamps ``worker``. Rows, not cache keys: the embedded cache is per process, and the
dashboard runs in the web process.
"""

from __future__ import annotations

import os
import socket

from django.utils import timezone

HEARTBEAT_TASK = "ledger.backoffice.heartbeat"


def heartbeat_stamp(name: str) -> None:
    from .models import Heartbeat

    detail = f"{socket.gethostname()}:{os.getpid()}"
    Heartbeat.objects.update_or_create(name=name, defaults={"at": timezone.now(), "detail": detail})


def beat_published(sender=None, headers=None, **kwargs) -> None:
    """before_task_publish: the heartbeat task leaves beat (its only publisher)."""
    if sender != HEARTBEAT_TASK:
        return
    try:
        heartbeat_stamp("beat")
    except Exception:  # noqa: BLE001 - a heartbeat must never stop beat from publishing
        import logging

        logging.getLogger("ledger.backoffice").warning("could not stamp beat's heartbeat", exc_info=True)
