"""Reads of address lookup tables, always the acting tenant's own, and how responses show them."""

from __future__ import annotations

from django.db.models import QuerySet

from ledger_project.api.errors import NotFoundError
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from ledger_project.timestamps import timestamp_text
from tenancy.scoping import scoped_tenant

from .models import AddressLookupTable, LookupTableState

#: Fetch Address Lookup Tables fieldNames (docs/lookup-tables.md): every one filters and sorts.
LOOKUP_TABLE_QUERY = QuerySpec(
    fields={
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "state": QueryField("TEXT", "state"),
        "authorityOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "authority"),
        "addressesCount": QueryField("NUMBER", "addresses_count"),
        "lastExtendedSlot": QueryField("NUMBER", "last_extended_slot", nullable=True),
        "deactivationSlot": QueryField("NUMBER", "deactivation_slot", nullable=True),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
    },
    default_sort=(("createdAt", "DESC"),),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
)

_RELATED = ("pending_transaction", "last_transaction", "authority_account__managed_key", "authority_key")


def lookup_table_get(*, queryset: QuerySet, cluster: str, lookup: dict, field: str = "itemData.addressLookupTable") -> AddressLookupTable:
    """The table ``lookup`` names among ``queryset`` (the view's get_queryset(): the
    tenant's own) on ``cluster``; both identifiers given must name the same one."""
    scoped_tenant(queryset, own=True)
    queryset = queryset.filter(cluster=cluster).select_related(*_RELATED)
    by_offchain = queryset.filter(offchain_id=lookup["offchainId"]).first() if lookup.get("offchainId") else None
    by_onchain = queryset.filter(address=lookup["onchainId"]).first() if lookup.get("onchainId") else None
    table = by_offchain or by_onchain
    if lookup.get("offchainId") and lookup.get("onchainId") and table is not None and (by_offchain is None or by_onchain is None or by_offchain.pk != by_onchain.pk):
        # As accounts/lookup.py: no table matches every field given, so it is a 404.
        raise NotFoundError("No lookup table matches both onchainId and offchainId.", field=field, code="CONFLICTING_LOOKUP")
    if table is None:
        raise NotFoundError("No such address lookup table.", field=field)
    return table


def lookup_table_list(*, queryset: QuerySet, cluster: str, item_query: dict | None) -> tuple[list[AddressLookupTable], int]:
    """A page of ``queryset`` (the tenant's own tables) on ``cluster``."""
    scoped_tenant(queryset, own=True)
    page, count = apply_item_query(queryset.filter(cluster=cluster), item_query, LOOKUP_TABLE_QUERY, present=lambda q: q.select_related("last_transaction", "authority_account"))
    return list(page), count


# --- rendering -----------------------------------------------------------------------------


def identifiers(table: AddressLookupTable) -> dict:
    return {"onchainId": table.address, "offchainId": str(table.offchain_id)}


def compact(table: AddressLookupTable) -> dict:
    return {**identifiers(table), "state": table.state, "addressesCount": table.addresses_count}


def detailed(table: AddressLookupTable) -> dict:
    account = table.authority_account
    tx = table.last_transaction
    return {
        **identifiers(table),
        "state": table.state,
        "authority": None if table.state == LookupTableState.FROZEN else {"onchainId": table.authority, "offchainId": str(account.offchain_id) if account else None},
        "addresses": list(table.addresses),
        "addressesCount": table.addresses_count,
        "lastExtendedSlot": table.last_extended_slot,
        "deactivationSlot": table.deactivation_slot,
        "createdAt": timestamp_text(table.created_at),
        "closedAt": timestamp_text(table.closed_at),
        "lastTransaction": {"onchainId": None if tx.approval_required else tx.onchain_id, "offchainId": str(tx.offchain_id)} if tx is not None else None,
    }


RENDERERS = {"detailed": detailed, "compact": compact, "identifiers": identifiers}
