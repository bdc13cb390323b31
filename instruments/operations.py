"""The instruments area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

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
