"""Worker tasks of the market data area (docs/marketdata.md, "Refresh"): thin, named,
claiming their work (refresh.py).

- ``refresh_data_source``: what each data source's periodic task (beat,
  marketdata/schedule.py) sends; it evaluates and updates the source unless it is busy or
  not ACTIVE. What it returns is stored as the task's result (the admin's Task results).
- ``evaluate_data_source``: an evaluation asked for (Refresh Oracle Data Source, the back
  office's "refresh now"), sent once the request committed.
"""

from __future__ import annotations

from celery import shared_task

from .refresh import data_source_refresh_scheduled, evaluation_run
from .schedule import TASK


@shared_task(name=TASK, acks_late=True)
def refresh_data_source(*, data_source_id: int) -> str:
    return data_source_refresh_scheduled(data_source_id=data_source_id)


@shared_task(name="ledger.marketdata.evaluate", acks_late=True)
def evaluate_data_source(*, evaluation_id: int) -> str:
    return evaluation_run(evaluation_id=evaluation_id)
