"""Row locks of the market data area (transactions.locks: pk order, inside a write phase).

Order: accounts (a funder), then the data source row."""

from __future__ import annotations

from transactions.locks import lock_rows

from .models import OnchainDataSource


def lock_source(pk: int, *, tenant) -> OnchainDataSource:
    """The tenant's data source, locked and fresh from the database (no joins: FOR UPDATE
    would lock the joined rows too)."""
    return lock_rows(OnchainDataSource.objects.for_tenant(tenant).filter(pk=pk))[0]
