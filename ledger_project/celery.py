"""Celery application: settings come from Django settings under the CELERY_ namespace."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledger_project.settings")

app = Celery("ledger_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _redact_urls_on_handlers(logger=None, **kwargs):
    # The worker installs its own handlers on the root and task loggers: give them the
    # same URL redaction as settings.LOGGING's (ledger_project/logging.py).
    from ledger_project.logging import RedactUrlsFilter

    for handler in (logger.handlers if logger is not None else []):
        if not any(isinstance(f, RedactUrlsFilter) for f in handler.filters):
            handler.addFilter(RedactUrlsFilter())


from celery import signals  # noqa: E402

signals.after_setup_logger.connect(_redact_urls_on_handlers, weak=False)
signals.after_setup_task_logger.connect(_redact_urls_on_handlers, weak=False)

# SIGTERM stops the pump and delivery loops at their next safe point, in whichever process
# gets it (ledger_project/shutdown.py, docs/operations.md "Stopping").
from ledger_project import shutdown  # noqa: E402

signals.worker_process_init.connect(shutdown.on_pool_child_start, weak=False)
signals.worker_shutting_down.connect(shutdown.on_worker_shutting_down, weak=False)
