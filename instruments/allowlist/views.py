"""Allow-list endpoints: our extension of the spec's Financial instruments operations
(docs/instruments.md, "Allow-list")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from tenancy.idempotency import idempotent
from ledger_project.api.schema import api_responses, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from transactions.responses import attach_wait_all, mutation_response, transaction_result

from ..lookup import resolve_instrument
from ..models import FinancialInstrument
from . import selectors, services
from .serializers import AllowListOutput, ChangeAllowListInput, ChangeAllowListOutput, FetchAllowListInput, InitializeAllowListInput, InitializeAllowListOutput

TAG = ["Financial instruments"]
FIELD = "itemData.financialInstrument"
_HOOK = (
    " Only for instruments whose transferHookProgram is the project's allow-list program (400 EXTENSION_MISSING without a "
    "transfer hook, NOT_ALLOW_LIST_HOOK with another program; INSTRUMENT_CLOSED, INSTRUMENT_NOT_ONCHAIN). Our extension of the spec."
)
_SIGNED = (
    " Signed by the allow-list's authority: on platform when the service holds its key for the organization, else the "
    "transaction is PARTIALLY_SIGNED for Sign Transaction. One operation on an instrument at a time (409 OPERATION_IN_PROGRESS)."
)


class AllowListViewSet(TenantScopedViewSet):
    model = FinancialInstrument

    def _instrument(self, data: dict, writable: bool = True) -> FinancialInstrument:
        return resolve_instrument(self.tenant, self.cluster, data["financialInstrument"], field=FIELD, writable=writable)

    @extend_schema(
        operation_id="initializeAllowList", summary="Initialize Allow-List",
        description=(
            "Creates the hook's validation account and the instrument's empty allow-list (InitializeAllowList; Create Financial "
            "Instrument does it already when it names the allow-list program). The mint authority signs; the rent of both accounts "
            "comes from svmTransactionConfig.feePayer (400 FUNDING_ACCOUNT_REQUIRED without one, 403 DEBIT_LIMIT_EXCEEDED over its "
            "limits). 409 ALLOW_LIST_EXISTS when the list exists; 400 NO_AUTHORITY without a mint authority, AUTHORITY_MISMATCH "
            "when mintAuthority is not it, OUT_OF_RANGE for a capacity outside 1–256." + _HOOK
        ),
        request=InitializeAllowListInput, responses=api_responses({201: InitializeAllowListOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def initialize(self, request):
        ctx, body = self.operation(InitializeAllowListInput)
        data = body["itemData"]
        result = services.allow_list_initialize(ctx, instrument=self._instrument(data), data=data)
        return mutation_response(request, "initializedAllowList", services.allow_list_identifiers(result.instrument, result.allow_list), result.transactions[0], status=status.HTTP_201_CREATED)

    def _change(self, request, action: str):
        ctx, body = self.operation(ChangeAllowListInput)
        data = body["itemData"]
        result = services.allow_list_change(ctx, instrument=self._instrument(data), action=action, data=data)
        response = Response({"allowList": services.allow_list_identifiers(result.instrument, result.allow_list), "svmTransactions": [transaction_result(tx) for tx in result.transactions]})
        attach_wait_all(response, request, result.transactions)
        return response

    @extend_schema(
        operation_id="addAllowListOwners", summary="Add Allow-List Owners",
        description=(
            "Allows transfers to token accounts owned by each of owners (1–256): one AddOwner per owner, packed into as few "
            "transactions as fit. Checked against the list on chain first: 400 ALLOW_LIST_NOT_INITIALIZED, OWNER_ALREADY_ALLOWED "
            "and DUPLICATE_OWNER (naming owners[i]), INVALID_OWNER (the zero address), ALLOW_LIST_FULL (over the capacity), "
            "AUTHORITY_MISMATCH (authority is not the list's), ACCOUNT_INACTIVE." + _SIGNED + _HOOK
        ),
        request=ChangeAllowListInput, responses=api_responses({200: ChangeAllowListOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def add(self, request):
        return self._change(request, services.ADD)

    @extend_schema(
        operation_id="removeAllowListOwners", summary="Remove Allow-List Owners",
        description=(
            "Stops allowing each of owners (1–256): one RemoveOwner per owner, packed into as few transactions as fit. Positions "
            "they hold stay, but receive nothing more. 400 ALLOW_LIST_NOT_INITIALIZED, OWNER_NOT_LISTED and DUPLICATE_OWNER "
            "(naming owners[i]), AUTHORITY_MISMATCH." + _SIGNED + _HOOK
        ),
        request=ChangeAllowListInput, responses=api_responses({200: ChangeAllowListOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def remove(self, request):
        return self._change(request, services.REMOVE)

    @extend_schema(
        operation_id="fetchAllowList", summary="Fetch Allow-List",
        description=(
            "Creates no transaction. The allow-list as the chain has it now, decoded: authority, capacity, count, and a page of "
            "owners in list order (itemQuery.limit, default 100, at most 256; itemQuery.skip). initialized is false (and the page "
            "empty) before Initialize Allow-List." + _HOOK
        ),
        request=FetchAllowListInput, responses=api_responses({200: AllowListOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def details(self, request):
        body = validated(FetchAllowListInput, request)
        instrument = self._instrument(body["itemData"], writable=False)
        return Response(selectors.allow_list_page(tenant=self.tenant, instrument=instrument, page=body.get("itemQuery"), field=FIELD))
