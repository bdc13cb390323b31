"""A data source's refresh schedule: one django-celery-beat periodic task per source
(docs/marketdata.md, "Refresh"), so operators see and change it under Periodic tasks like
every other job, and beat (backoffice.scheduling.LedgerDatabaseScheduler) picks a change
up within seconds. The API's ``refreshIntervalSeconds`` is the task's interval.

The task runs ``ledger.marketdata.refresh_data_source`` with the source's id; it refreshes
only an ACTIVE source (a PENDING one waits for its creation to confirm), so the schedule
is made with the source and switched off when the source is INACTIVE or FAILED."""

from __future__ import annotations

import json

from django_celery_beat.models import IntervalSchedule, PeriodicTask

TASK = "ledger.marketdata.refresh_data_source"


def schedule_name(source) -> str:
    return f"marketdata: refresh {source.offchain_id}"


def interval_of(source) -> int | None:
    """The source's refresh interval in seconds: None without an enabled interval task
    (an operator may also have given it a crontab: it runs, but has no interval)."""
    task = source.schedule
    if task is None or not task.enabled or task.interval is None:
        return None
    return int(task.interval.every * _SECONDS[task.interval.period])


_SECONDS = {
    IntervalSchedule.MICROSECONDS: 1e-6, IntervalSchedule.SECONDS: 1, IntervalSchedule.MINUTES: 60,
    IntervalSchedule.HOURS: 3600, IntervalSchedule.DAYS: 86400,
}


def schedule_set(source, *, every: int | None, enabled: bool | None = None) -> PeriodicTask | None:
    """Give ``source`` a periodic task refreshing it every ``every`` seconds (None: no
    schedule — an existing one is switched off, kept for the operator's history).
    ``enabled`` None keeps the task's switch (on for a new task). In the caller's database
    transaction, the source saved (its pk names it in the task's kwargs) and saved again by
    the caller (``source.schedule``); model saves, so beat notices (PeriodicTasks.last_update)."""
    task = source.schedule
    if every is None:
        if task is not None and task.enabled:
            task.enabled = False
            task.save(update_fields=["enabled"])
        return task
    interval, _ = IntervalSchedule.objects.get_or_create(every=every, period=IntervalSchedule.SECONDS)
    if task is None:
        task = PeriodicTask(name=schedule_name(source), task=TASK, kwargs=json.dumps({"data_source_id": source.pk}),
                            description=f"Refresh the {source.data_kind} feed {source.address} (docs/marketdata.md).")
        task.enabled = True if enabled is None else enabled
    elif enabled is not None:
        task.enabled = enabled
    task.interval, task.crontab, task.solar, task.clocked = interval, None, None, None
    task.save()
    source.schedule = task  # the caller saves the source
    return task


def schedule_switch(source, *, enabled: bool) -> None:
    """Switch the source's task on or off (INACTIVE / FAILED sources: off)."""
    task = source.schedule
    if task is not None and task.enabled != enabled:
        task.enabled = enabled
        task.save(update_fields=["enabled"])
