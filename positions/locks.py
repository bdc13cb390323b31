"""Row locks of the positions area (transactions.locks: pk order, inside a write phase).

Order: position rows, then account rows (accounts.locks: the token account's record, a
funder), then hot shared rows last."""

from __future__ import annotations

from transactions.locks import lock_rows

from .models import Position


def lock_positions(*pks: int, tenant) -> dict[int, Position]:
    """Lock the tenant's positions (pk order) and return them by pk, fresh from the
    database. No select_related: FOR UPDATE would lock the joined instrument row too (every
    position of the instrument would queue behind it), and PostgreSQL refuses it on the
    nullable side of an outer join."""
    return {p.pk: p for p in lock_rows(Position.objects.for_tenant(tenant).filter(pk__in=[pk for pk in pks if pk is not None]))}


def lock_position(pk: int, *, tenant) -> Position:
    return lock_positions(pk, tenant=tenant)[pk]
