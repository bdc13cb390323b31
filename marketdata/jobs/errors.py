"""The one error of a job definition that cannot be saved."""

from __future__ import annotations

from ledger_project.api.errors import LedgerError


class JobDefinitionError(LedgerError):
    """A job definition refused when it is created or updated: a 400 whose ``field`` is the
    path of the bad part, e.g. ``jobDefinition.tasks[1].medianTask.jobs[0].tasks[0].httpTask.url``.
    ``code`` is INVALID_JOB_DEFINITION, or URL_NOT_ALLOWED for a URL the service may not call
    (ledger_project/outbound.py), as for webhook URLs."""

    code = "INVALID_JOB_DEFINITION"
    default_message = "The job definition is invalid."

    def __init__(self, message: str, path: str, *, code: str | None = None):
        super().__init__(message, field=path, code=code)
        self.path = path

    def __reduce__(self):  # picklable (Celery results, test workers)
        return (_rebuild, (self.message, self.path, self.code))


def _rebuild(message: str, path: str, code: str) -> JobDefinitionError:
    return JobDefinitionError(message, path, code=code)
