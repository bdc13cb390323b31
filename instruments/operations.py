"""The instruments area's operation names (docs/architecture.md, "Where a confirmation goes").

A transaction records the name of the operation that built it (``Transaction.operation``);
the handlers that apply its effects register under the same name
(``transactions.effects.effect_handler`` / ``failure_handler``). Both sides use these
constants, so a search for one finds the code that builds the transaction and the code that
settles it (tests/test_operation_handlers.py holds every name to its handlers)."""

from __future__ import annotations

CREATE = "instruments.create"
UPDATE = "instruments.update"
PAUSE = "instruments.pause"
UNPAUSE = "instruments.unpause"
CLOSE = "instruments.close"
#: the transfer-hook allow-list (instruments/allowlist/): on chain only
ALLOW_LIST_INITIALIZE = "instruments.allow_list_initialize"
ALLOW_LIST_ADD = "instruments.allow_list_add"
ALLOW_LIST_REMOVE = "instruments.allow_list_remove"
ALLOW_LIST = (ALLOW_LIST_INITIALIZE, ALLOW_LIST_ADD, ALLOW_LIST_REMOVE)
#: their confirmations change no record beyond the in-flight mark (the engine ends it:
#: marks_in_flight) and the mint hook; a failure ends the mark
ON_CHAIN_ONLY = (UPDATE, PAUSE, UNPAUSE, *ALLOW_LIST)
