"""Row-lock helpers (docs/style.md, "Locks and races"): rows of one table are locked in pk order, tables
in a fixed order (records first, hot shared rows such as sequences last), and only inside
a write phase (tenancy.idempotency.write_phase), never across a network call.
On SQLite ``select_for_update`` is a no-op: BEGIN IMMEDIATE already serializes writers."""

from __future__ import annotations

from django.db.models import QuerySet

from ledger_project.statements import Statement

_LOCK = Statement("transactions.locks")


def lock_rows(queryset: QuerySet) -> list:
    """Lock every row of ``queryset`` in pk order; returns them in that order. Only the
    queryset's own rows: on PostgreSQL a FOR UPDATE without ``OF`` would also lock every
    row a ``select_related`` joins (e.g. a position's instrument, shared by every transfer
    of it), serializing unrelated writers and inviting deadlocks."""
    return _LOCK.fetch(queryset.select_for_update(of=("self",)).order_by("pk"))
