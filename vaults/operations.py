"""The vaults area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

from __future__ import annotations

CREATE = "vaults.create"
UPDATE_WHITELIST = "vaults.update_whitelist"
REPAYMENT = "vaults.repayment"
CLOSE = "vaults.close"
ALL = (CREATE, UPDATE_WHITELIST, REPAYMENT, CLOSE)
