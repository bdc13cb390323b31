"""The marketdata area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

from __future__ import annotations

CREATE = "marketdata.create"
UPDATE = "marketdata.update"
SET_JOB_HASH = "marketdata.set_job_hash"
ALL = (CREATE, UPDATE, SET_JOB_HASH)
