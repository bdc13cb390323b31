"""The lookup-table area's operation names: shared by the code that builds each transaction and
the handlers of its effects (positions/operations.py says why; docs/architecture.md)."""

from __future__ import annotations

CREATE = "lookup_tables.create"
EXTEND = "lookup_tables.extend"
FREEZE = "lookup_tables.freeze"
DEACTIVATE = "lookup_tables.deactivate"
CLOSE = "lookup_tables.close"
ALL = (CREATE, EXTEND, FREEZE, DEACTIVATE, CLOSE)
