"""Address lookup table endpoints (spec: Blockchain transactions 2 and 5; docs/lookup-tables.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet

from transactions.responses import attach_wait, transaction_result

from . import selectors, services
from .models import AddressLookupTable
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

TAG = ["Blockchain transactions"]
RESULT = "svmTransactionResult"


def _answer(request, name: str, result, *, status_code: int = status.HTTP_200_OK) -> Response:
    """``{<name>: {onchainId, offchainId}, svmTransactionResult}`` (the spec's Extend answer;
    Create and Update answer the same way), waiting after commit when ``?wait=`` asks."""
    response = Response({name: selectors.identifiers(result.table), RESULT: transaction_result(result.transaction)}, status=status_code)
    attach_wait(response, request, result.transaction, transaction_result, path=(RESULT,))
    return response


class AddressLookupTableViewSet(TenantScopedViewSet):
    model = AddressLookupTable

    def _table(self, lookup: dict):
        return selectors.lookup_table_get(queryset=self.get_queryset(), cluster=self.cluster, lookup=lookup)

    @extend_schema(
        operation_id="createAddressLookupTable",
        summary="Create Address Lookup Table",
        description=(
            "Creates a lookup table on chain (CreateLookupTable on a recent slot) and stores componentAddresses in it in the same transaction. "
            "The rent comes from svmTransactionConfig.feePayer (never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). "
            "The table is CREATING until the transaction confirms, then ACTIVE with the addresses as stored on chain."
        ),
        request=CreateLookupTableInput,
        responses=api_responses({201: CreateLookupTableOutput}, mutation=True),
        parameters=operation_parameters(wait=True),
        tags=TAG,
    )
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateLookupTableInput)
        result = services.lookup_table_create(ctx, data=body["itemData"] or {})
        return _answer(request, "newAddressLookupTable", result, status_code=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="extendAddressLookupTable",
        summary="Extend Address Lookup Table",
        description=(
            "Appends componentAddresses to an ACTIVE table (a frozen or deactivated one: 400; over 256 addresses: 400 LOOKUP_TABLE_FULL; "
            "an address named twice or already stored: 400 DUPLICATE_ADDRESS). The rent top-up comes from svmTransactionConfig.feePayer."
        ),
        request=ExtendLookupTableInput,
        responses=api_responses({200: ExtendLookupTableOutput}, mutation=True),
        parameters=operation_parameters(wait=True),
        tags=TAG,
    )
    @idempotent
    def extend(self, request):
        ctx, body = self.operation(ExtendLookupTableInput)
        data = body["itemData"]
        table = self._table(data["addressLookupTable"])
        result = services.lookup_table_extend(ctx, table=table, components=data["componentAddresses"])
        return _answer(request, "extendedAddressLookupTable", result)

    @extend_schema(
        operation_id="updateAddressLookupTable",
        summary="Update Address Lookup Table",
        description=(
            "action FREEZE, DEACTIVATE or CLOSE. CLOSE needs a deactivated table whose cool-down is over (the runtime's rule: its deactivation slot "
            "must leave the SlotHashes sysvar, 512 slots; earlier: 400 LOOKUP_TABLE_COOLING_DOWN); the rent goes to recipient."
        ),
        request=UpdateLookupTableInput,
        responses=api_responses({200: UpdateLookupTableOutput}, mutation=True),
        parameters=operation_parameters(wait=True),
        tags=TAG,
    )
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdateLookupTableInput)
        data = body["itemData"]
        table = self._table(data["addressLookupTable"])
        result = services.lookup_table_update(ctx, table=table, action=data["action"], recipient_lookup=data.get("recipient"))
        return _answer(request, "updatedAddressLookupTable", result)

    @extend_schema(
        operation_id="fetchAddressLookupTableDetails",
        summary="Fetch Address Lookup Table Details",
        description="Creates no transaction. One of the organization's lookup tables, as of its last confirmed change.",
        request=FetchLookupTableInput,
        responses=api_responses({200: LookupTableOutput}),
        parameters=operation_parameters(),
        tags=TAG,
    )
    def details(self, request):
        lookup = validated(FetchLookupTableInput, request)["itemData"]["addressLookupTable"]
        return Response(selectors.detailed(self._table(lookup)))

    @extend_schema(
        operation_id=item_query("fetchAddressLookupTables", selectors.LOOKUP_TABLE_QUERY),
        summary="Fetch Address Lookup Tables",
        description="Creates no transaction. detail-level: detailed, compact, identifiers.",
        request=BulkLookupTablesInput,
        responses=bulk_responses("BulkLookupTablesPage", BulkLookupTablesOutput, BulkLookupTablesCompactOutput, BulkLookupTablesIdentifiersOutput),
        parameters=[DETAIL_LEVEL, *operation_parameters()],
        tags=TAG,
    )
    def bulk(self, request, detail_level: str):
        render = selectors.RENDERERS.get(detail_level)
        if render is None:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkLookupTablesInput, request)
        items, count = selectors.lookup_table_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"))
        return Response({"count": count, "items": [render(t) for t in items]})
