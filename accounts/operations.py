"""The accounts area's operation names (docs/architecture.md, "Where a confirmation goes").

A transaction records the name of the operation that built it (``Transaction.operation``);
the handlers that apply its effects register under the same name
(``transactions.effects.effect_handler`` / ``failure_handler``). Both sides use these
constants, so a search for one finds the code that builds the transaction and the code that
settles it (tests/test_operation_handlers.py holds every name to its handlers)."""

from __future__ import annotations

CREATE = "accounts.create"
INACTIVATE = "accounts.inactivate"
#: a tenant's durable nonce account (accounts/nonces.py)
NONCE_CREATE = "nonces.create"
