from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class LedgerAdminConfig(AdminConfig):
    """django.contrib.admin with the back office's site as the default ``admin.site``:
    every ModelAdmin registered anywhere (ours, auth's, django-celery-beat's) is audited,
    keeps chain-truth fields read-only and pages without counting (backoffice/site.py)."""

    default_site = "backoffice.site.LedgerAdminSite"


class BackofficeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "backoffice"
    verbose_name = "Back office"

    def ready(self) -> None:
        from celery.signals import before_task_publish
        from django.db.models.signals import post_migrate

        from django.core import checks

        from . import heartbeat, lockout, roles, scheduling

        checks.register(lockout.retired_window_check)

        # Roles follow the models: a migration that adds a model adds its view permission
        # to the viewer role, and so on (backoffice/roles.py); the periodic tasks of
        # settings.CELERY_BEAT_SCHEDULE exist in the admin before beat first starts.
        post_migrate.connect(roles.roles_sync_after_migrate, sender=self, weak=False, dispatch_uid="backoffice.roles")
        post_migrate.connect(scheduling.beat_schedule_seed_after_migrate, sender=self, weak=False, dispatch_uid="backoffice.beat")
        # Beat is the only publisher of the heartbeat task: publishing it stamps beat's heartbeat.
        before_task_publish.connect(heartbeat.beat_published, weak=False, dispatch_uid="backoffice.heartbeat")
        self._metrics_ready()

    @staticmethod
    def _metrics_ready() -> None:
        """/metrics (docs/operations.md, "Metrics"): the database figures join every scrape;
        every bounded label set exists from the start; a Celery worker starting removes what
        dead processes left in the multiprocess folder (gunicorn's master does the same,
        gunicorn.conf.py)."""
        from celery.signals import worker_init
        from django.conf import settings

        from ledger_project.metrics.meters import meters_initialize
        from ledger_project.metrics.multiproc import directory_clean

        from .metrics import metrics_register

        metrics_register()
        meters_initialize(settings.LEDGER_CLUSTERS)
        worker_init.connect(lambda **kwargs: directory_clean(), weak=False, dispatch_uid="backoffice.metrics_clean")
