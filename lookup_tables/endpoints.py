"""The address lookup tables' API: one declaration per operation (spec: Blockchain
transactions 2 and 5; docs/lookup-tables.md; tenancy/endpoints.py says what a row holds).
The view set and routes are made from ``TABLE`` (lookup_tables/urls.py)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from tenancy.endpoints import Endpoint, bulk_fetch
from transactions.responses import transaction_answer

from . import selectors, services
from .serializers import (
    BulkLookupTablesCompactOutput,
    BulkLookupTablesIdentifiersOutput,
    BulkLookupTablesInput,
    BulkLookupTablesOutput,
    CreateLookupTableInput,
    CreateLookupTableOutput,
    ExtendLookupTableInput,
    ExtendLookupTableOutput,
    FetchLookupTableInput,
    LookupTableOutput,
    UpdateLookupTableInput,
    UpdateLookupTableOutput,
)

TAG = ("Blockchain transactions",)
RESULT = "svmTransactionResult"
_V = "AddressLookupTableViewSet"


def _answer(request, name: str, result, *, status_code: int = status.HTTP_200_OK):
    """``{<name>: {onchainId, offchainId}, svmTransactionResult}`` (the spec's Extend answer;
    Create and Update answer the same way)."""
    return transaction_answer(request, {name: selectors.identifiers(result.table)}, result.transaction, status=status_code, key=RESULT)


def _table(door, lookup: dict):
    return selectors.lookup_table_get(queryset=door.get_queryset(), cluster=door.cluster, lookup=lookup)


def _create(door, ctx, body):
    result = services.lookup_table_create(ctx, data=body["itemData"] or {})
    return _answer(door.request, "newAddressLookupTable", result, status_code=status.HTTP_201_CREATED)


def _extend(door, ctx, body):
    data = body["itemData"]
    result = services.lookup_table_extend(ctx, table=_table(door, data["addressLookupTable"]), components=data["componentAddresses"])
    return _answer(door.request, "extendedAddressLookupTable", result)


def _update(door, ctx, body):
    data = body["itemData"]
    result = services.lookup_table_update(ctx, table=_table(door, data["addressLookupTable"]), action=data["action"], recipient_lookup=data.get("recipient"))
    return _answer(door.request, "updatedAddressLookupTable", result)


def _details(door, ctx, body):
    return Response(selectors.detailed(_table(door, body["itemData"]["addressLookupTable"])))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "create", "address-lookup-tables", "post", "address-lookup-tables", "createAddressLookupTable", "Create Address Lookup Table",
             "Creates a lookup table on chain (CreateLookupTable on a recent slot) and stores componentAddresses in it in the same transaction. "
             "The rent comes from svmTransactionConfig.feePayer (never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). "
             "The table is CREATING until the transaction confirms, then ACTIVE with the addresses as stored on chain.",
             CreateLookupTableInput, _create, {201: CreateLookupTableOutput}, wait=True, tags=TAG),
    Endpoint(_V, "update", "address-lookup-tables", "patch", "address-lookup-tables", "updateAddressLookupTable", "Update Address Lookup Table",
             "action FREEZE, DEACTIVATE or CLOSE. CLOSE needs a deactivated table whose cool-down is over (the runtime's rule: its deactivation slot "
             "must leave the SlotHashes sysvar, 512 slots; earlier: 400 LOOKUP_TABLE_COOLING_DOWN); the rent goes to recipient.",
             UpdateLookupTableInput, _update, {200: UpdateLookupTableOutput}, wait=True, tags=TAG),
    Endpoint(_V, "extend", "address-lookup-tables/extend", "patch", "address-lookup-table-extend", "extendAddressLookupTable", "Extend Address Lookup Table",
             "Appends componentAddresses to an ACTIVE table (a frozen or deactivated one: 400; over 256 addresses: 400 LOOKUP_TABLE_FULL; "
             "an address named twice or already stored: 400 DUPLICATE_ADDRESS). The rent top-up comes from svmTransactionConfig.feePayer.",
             ExtendLookupTableInput, _extend, {200: ExtendLookupTableOutput}, wait=True, tags=TAG),
    Endpoint(_V, "details", "address-lookup-tables/single", "post", "address-lookup-table-details", "fetchAddressLookupTableDetails",
             "Fetch Address Lookup Table Details", "Creates no transaction. One of the organization's lookup tables, as of its last confirmed change.",
             FetchLookupTableInput, _details, {200: LookupTableOutput}, mutation=False, tags=TAG),
    bulk_fetch(_V, "address-lookup-tables/bulk", "address-lookup-tables-bulk", operation_id="fetchAddressLookupTables", query=selectors.LOOKUP_TABLE_QUERY,
               summary="Fetch Address Lookup Tables", input=BulkLookupTablesInput, page="BulkLookupTablesPage",
               outputs=(BulkLookupTablesOutput, BulkLookupTablesCompactOutput, BulkLookupTablesIdentifiersOutput), renderers=selectors.RENDERERS, tags=TAG,
               items=lambda door, query, level: selectors.lookup_table_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=query)),
)
