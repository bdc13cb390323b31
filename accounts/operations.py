"""The accounts area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

from __future__ import annotations

CREATE = "accounts.create"
INACTIVATE = "accounts.inactivate"
#: a tenant's durable nonce account (accounts/nonces.py)
NONCE_CREATE = "nonces.create"
