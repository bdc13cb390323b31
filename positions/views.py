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

from . import render, selectors, services
from .models import Position
from .serializers import InitializePositionInput, InitializePositionOutput, PositionLookupInput, PositionOutput

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


from . import movement  # noqa: E402  (appended block: Mint, Burn, Transfer, Trade)
from .serializers import BurnInput, BurnPositionOutput, MintInput, MintPositionOutput, TradeInput, TradeOutput, TransferInput, TransferPositionOutput  # noqa: E402


class PositionMovementViewSet(TenantScopedViewSet):
    """Mint, Burn, Transfer Financial Instrument, Trade (positions/movement.py): 200, or
    201 when the request recorded a new position on the way."""

    model = Position

    @extend_schema(operation_id="mintToPosition", summary="Mint", description="MintToChecked into the position, signed by the instrument's mint authority; with createIfMissing the owner's associated position is created in the same transaction (201).", request=MintInput, responses=api_responses({200: MintPositionOutput, 201: MintPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def mint(self, request):
        body = validated(MintInput, request)
        data = body["itemData"]
        result = movement.position_mint(tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, lookup=data["position"], value=data["value"], create_if_missing=data.get("createIfMissing", False),
                                        svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id)
        return mutation_response(request, "mintedPosition", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(operation_id="burnFromPosition", summary="Burn", description="BurnChecked from the position, signed by its owner, its delegate or the instrument's permanent delegate.", request=BurnInput, responses=api_responses({200: BurnPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def burn(self, request):
        body = validated(BurnInput, request)
        data = body["itemData"]
        result = movement.position_burn(tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, lookup=data["position"], value=data["value"], authority_lookup=data.get("authority"),
                                        svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id)
        return mutation_response(request, "burnedPosition", result.identifiers, result.transaction)

    @extend_schema(operation_id="transferFinancialInstrument", summary="Transfer Financial Instrument", description="TransferChecked from the source position to the destination (created on the way when it is missing: 201).", request=TransferInput, responses=api_responses({200: TransferPositionOutput, 201: TransferPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def transfer(self, request):
        body = validated(TransferInput, request)
        result = movement.position_transfer(tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, data=body["itemData"], svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id)
        return mutation_response(request, "destinationPosition", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(operation_id="trade", summary="Trade", description="Delivery versus payment: every leg is a transfer, all in one transaction (every leg settles or none). `trade` names that transaction.", request=TradeInput, responses=api_responses({200: TradeOutput, 201: TradeOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def trade(self, request):
        body = validated(TradeInput, request)
        result = movement.position_trade(tenant=self.tenant, cluster=self.cluster, api_key=self.api_key, legs=body["itemData"]["legs"], svm_config=body.get("svmTransactionConfig"), request_id=request.client_request_id)
        return mutation_response(request, "trade", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)
