"""Row locks of the vaults area (transactions.locks: pk order, inside a write phase).

Order: accounts (a debited owner, a funder), positions, then the vault row: the order the
confirmation effects lock in (accounts, then positions: positions/movement.py)."""

from __future__ import annotations

from transactions.locks import lock_rows

from .models import Vault


def lock_vault(pk: int, *, tenant) -> Vault:
    """The tenant's vault, locked and fresh from the database (no joins: FOR UPDATE would
    lock the joined rows too)."""
    return lock_rows(Vault.objects.for_tenant(tenant).filter(pk=pk))[0]
