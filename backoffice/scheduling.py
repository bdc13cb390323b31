"""Periodic jobs kept in the database, changed by operators in the admin (docs/admin.md,
"Scheduling").

``LedgerDatabaseScheduler`` is django-celery-beat's DatabaseScheduler with two changes:

- the entries of settings.CELERY_BEAT_SCHEDULE are *seeded*: created when missing, never
  written over. django-celery-beat's own scheduler rewrites them from settings at every
  start, which would undo an operator's change at the next restart. A job added to
  settings in a later release appears by itself; one an operator disabled stays disabled.
- what beat sends stores its result (django-celery-results, visible in the admin), while
  the tasks the service sends itself (pumps, kicks) keep ``CELERY_TASK_IGNORE_RESULT``.
"""

from __future__ import annotations

from django.conf import settings
from django_celery_beat.schedulers import DatabaseScheduler, ModelEntry


def beat_schedule_seed(schedule: dict | None = None, *, app=None) -> list[str]:
    """Create the periodic tasks of ``schedule`` (default settings.CELERY_BEAT_SCHEDULE)
    that do not exist yet; returns their names. Existing rows are left as they are."""
    from django_celery_beat.models import PeriodicTask

    schedule = settings.CELERY_BEAT_SCHEDULE if schedule is None else schedule
    existing = set(PeriodicTask.objects.filter(name__in=list(schedule)).values_list("name", flat=True))
    created = []
    for name, entry in schedule.items():
        if name not in existing:
            ModelEntry.from_entry(name, app=app, **entry)
            created.append(name)
    return created


def beat_schedule_seed_after_migrate(sender=None, using: str = "default", plan=None, **kwargs) -> None:
    # After a migrate, not a flush (which passes no plan): beat seeds again when it starts.
    if using == "default" and plan is not None:
        beat_schedule_seed()


class LedgerDatabaseScheduler(DatabaseScheduler):
    def setup_schedule(self):
        self.install_default_entries(self.schedule)
        created = beat_schedule_seed(self.app.conf.beat_schedule, app=self.app)
        if created:
            # Rows created after the initial read: read the schedule again.
            self._initial_read = True

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry.options = {**entry.options, "ignore_result": False}
        return super().apply_async(entry, producer, advance, **kwargs)
