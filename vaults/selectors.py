"""Reads of the vaults area."""

from __future__ import annotations

from django.db.models import prefetch_related_objects

from . import render
from .lookup import resolve_vault
from .models import Vault


def vault_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> Vault:
    return resolve_vault(tenant, cluster, lookup, field=field)


def vault_details(*, tenant, cluster: str, lookup: dict) -> dict:
    """Fetch Vault Details: the vault, its authority and the rest (render.vault_detailed)."""
    vault = resolve_vault(tenant, cluster, lookup, field="itemData")
    prefetch_related_objects([vault], "destinations__position")
    return render.vault_detailed(vault)
