"""Worker tasks of the market data area (docs/marketdata.md, "Refresh"): thin, named.

``refresh_data_source`` is what each data source's periodic task (beat, marketdata/schedule.py)
sends: it claims the source (refresh.py) and evaluates and updates it; a tick that finds it
busy or not ACTIVE does nothing. What it returns is stored as the task's result, visible
in the admin under Task results."""

from __future__ import annotations

from celery import shared_task

from .refresh import data_source_refresh_scheduled
from .schedule import TASK


@shared_task(name=TASK, acks_late=True)
def refresh_data_source(*, data_source_id: int) -> str:
    return data_source_refresh_scheduled(data_source_id=data_source_id)
