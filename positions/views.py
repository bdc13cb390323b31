"""Positions endpoints (spec: Positions; paths and bodies in docs/positions.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from accounts.lookup import resolve_account
from instruments.lookup import resolve_instrument
from ledger_project.api.envelope import validated
from ledger_project.api.idempotency import idempotent
from ledger_project.api.schema import api_responses, operation_parameters
from ledger_project.api.viewsets import TenantScopedViewSet
from transactions.responses import mutation_response

from . import render, selectors, services, transfers
from .models import Position
from .serializers import InitializePositionInput, InitializePositionOutput, PositionLookupInput, PositionOutput
from .serializers import TransferNetworkCurrencyInput, TransferNetworkCurrencyOutput

TAG = ["Positions"]


class PositionViewSet(TenantScopedViewSet):
    model = Position

    @extend_schema(operation_id="initializePosition", summary="Initialize Position", description="Creates the owner's token account for the instrument (its associated token account by default).", request=InitializePositionInput, responses=api_responses({201: InitializePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def initialize(self, request):
        body = validated(InitializePositionInput, request)
        data = body["itemData"]
        owner = resolve_account(self.tenant, self.cluster, data["owner"], field="itemData.owner")
        instrument = resolve_instrument(self.tenant, self.cluster, data["financialInstrument"], field="itemData.financialInstrument")
        result = services.position_initialize(tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, owner=owner, instrument=instrument, data=data, svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id)
        return mutation_response(request, "newPosition", render.position_identifiers(result.position), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="fetchPositionDetails", summary="Fetch Position Details", description="Creates no transaction.", request=PositionLookupInput, responses=api_responses({200: PositionOutput}), parameters=operation_parameters(), tags=TAG)
    def details(self, request):
        lookup = validated(PositionLookupInput, request)["itemData"]
        return Response(render.position_detailed(selectors.position_get(tenant=self.tenant, cluster=self.cluster, lookup=lookup)))

    @extend_schema(
        operation_id="transferNetworkCurrency", summary="Transfer Network Currency",
        description=(
            "A System transfer of lamports from the source account (which signs) to an account or an off-platform address. "
            "The source must stay rent exempt or end at exactly 0; a new destination must receive at least the rent-exempt minimum. "
            "The source's networkCurrencyDebitApiKeys apply (403 DEBIT_NOT_ALLOWED); over its networkCurrencyDebitLimits the transaction is "
            "built and signed but held PENDING_APPROVAL until approved (PATCH /api/v1/transactions/approve)."
        ),
        request=TransferNetworkCurrencyInput, responses=api_responses({200: TransferNetworkCurrencyOutput}, mutation=True),
        parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def transfer_network_currency(self, request):
        body = validated(TransferNetworkCurrencyInput, request)
        data = body["itemData"]
        source = resolve_account(self.tenant, self.cluster, data["source"], field="itemData.source")
        destination = resolve_account(self.tenant, self.cluster, data["destination"], field="itemData.destination", allow_off_platform=True)
        result = transfers.network_currency_transfer(
            tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, source=source, destination=destination, value=data["value"],
            svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id,
        )
        identifiers = {"onchainId": result.destination.address, "offchainId": str(result.destination.offchain_id) if hasattr(result.destination, "offchain_id") else None}
        return mutation_response(request, "destinationAccount", identifiers, result.transaction)
