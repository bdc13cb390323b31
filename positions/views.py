"""Positions endpoints (spec: Positions; paths and bodies in docs/positions.md)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from accounts.lookup import resolve_account
from instruments.lookup import resolve_instrument
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from transactions.responses import mutation_response

from . import batch_render, batches, lifecycle, movement, render, selectors, services, transfers
from .lookup import resolve_own_position
from .models import BatchKind, Position
from .serializers import (
    BatchLookupInput,
    BatchOutput,
    BulkPositionsCompactOutput,
    BulkPositionsIdentifiersOutput,
    BulkPositionsInput,
    BulkPositionsOutput,
    BurnInput,
    BurnPositionOutput,
    FreezePositionInput,
    FreezePositionOutput,
    InactivatePositionInput,
    InactivatePositionOutput,
    InitializePositionInput,
    InitializePositionOutput,
    MintInput,
    MintPositionOutput,
    PositionBalanceInput,
    PositionBalanceOutput,
    PositionLookupInput,
    PositionOutput,
    TradeInput,
    TradeOutput,
    TransferBatchInput,
    TransferNetworkCurrencyBatchInput,
    TransferInput,
    TransferNetworkCurrencyInput,
    TransferNetworkCurrencyOutput,
    TransferPositionOutput,
    UnfreezePositionOutput,
    UpdatePositionInput,
    UpdatePositionOutput,
)

TAG = ["Positions"]


class PositionViewSet(TenantScopedViewSet):
    model = Position

    @extend_schema(operation_id="initializePosition", summary="Initialize Position", description="Creates the owner's token account for the instrument (its associated token account by default).", request=InitializePositionInput, responses=api_responses({201: InitializePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def initialize(self, request):
        ctx, body = self.operation(InitializePositionInput)
        data = body["itemData"]
        owner = resolve_account(self.tenant, self.cluster, data["owner"], field="itemData.owner")
        instrument = resolve_instrument(self.tenant, self.cluster, data["financialInstrument"], field="itemData.financialInstrument")
        result = services.position_initialize(ctx, owner=owner, instrument=instrument, data=data)
        return mutation_response(request, "newPosition", render.position_identifiers(result.position), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="fetchPositionBalance", summary="Fetch Position Balance", description="Creates no transaction. The current offchain and onchain token balance, or the offchain balance at a past time (`at`).", request=PositionBalanceInput, responses=api_responses({200: PositionBalanceOutput}), parameters=operation_parameters(), tags=TAG)
    def balance(self, request):
        data = validated(PositionBalanceInput, request)["itemData"]
        at = data.pop("at", None)
        return Response(selectors.position_balance(tenant=self.tenant, cluster=self.cluster, lookup=data, at=at))

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
        ctx, body = self.operation(TransferNetworkCurrencyInput)
        data = body["itemData"]
        source = resolve_account(self.tenant, self.cluster, data["source"], field="itemData.source")
        destination = resolve_account(self.tenant, self.cluster, data["destination"], field="itemData.destination", allow_off_platform=True)
        result = transfers.network_currency_transfer(ctx, source=source, destination=destination, value=data["value"])
        identifiers = {"onchainId": result.destination.address, "offchainId": str(result.destination.offchain_id) if hasattr(result.destination, "offchain_id") else None}
        return mutation_response(request, "destinationAccount", identifiers, result.transaction)
    # --- lifecycle (positions/lifecycle.py) and Fetch Positions -----------------------------

    def _lifecycle_position(self, data: dict):
        return resolve_own_position(self.tenant, self.cluster, data["position"], field="itemData.position")

    @extend_schema(operation_id="updatePosition", summary="Update Position", description="Patch semantics: only fields present change. Offchain fields change at once; `delegate` approves (or, null, revokes) a delegate on the network, signed by the owner.", request=UpdatePositionInput, responses=api_responses({200: UpdatePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdatePositionInput)
        data = body["itemData"]
        raw = request.data.get("itemData") or {}
        changes = {k: v for k, v in data.items() if k in raw and k != "position"}
        if changes.get("offchainReferences"):
            changes["offchainReferences"] = {k: v for k, v in changes["offchainReferences"].items() if k in (raw.get("offchainReferences") or {})}
        position = self._lifecycle_position(data)
        result = lifecycle.position_update(ctx, position=position, changes=changes)
        return mutation_response(request, "updatedPosition", render.position_identifiers(result.position), result.transaction)

    @extend_schema(operation_id="inactivatePosition", summary="Inactivate Position", description="Closes the empty token account (CloseAccount; its rent to refundDestination, default the owner); INACTIVE once confirmed.", request=InactivatePositionInput, responses=api_responses({200: InactivatePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def inactivate(self, request):
        ctx, body = self.operation(InactivatePositionInput)
        data = body["itemData"]
        position = self._lifecycle_position(data)
        refund = None
        if data.get("refundDestination"):
            refund = resolve_account(self.tenant, self.cluster, data["refundDestination"], field="itemData.refundDestination", allow_off_platform=True)
        result = lifecycle.position_inactivate(ctx, position=position, refund_to=refund)
        return mutation_response(request, "inactivatedPosition", render.position_identifiers(result.position), result.transaction)

    def _set_frozen(self, request, frozen: bool):
        ctx, body = self.operation(FreezePositionInput)
        lookup = body["itemData"]["position"]
        position = self._lifecycle_position(body["itemData"])
        result = lifecycle.position_set_frozen(ctx, position=position, frozen=frozen, authority_lookup=lookup.get("freezeAuthority"))
        return mutation_response(request, "frozenPosition" if frozen else "unfrozenPosition", render.position_identifiers(result.position), result.transaction)

    @extend_schema(operation_id="freezePosition", summary="Freeze Position", description="FreezeAccount, signed by the mint's freeze authority: the token account can then neither send nor receive.", request=FreezePositionInput, responses=api_responses({200: FreezePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def freeze(self, request):
        return self._set_frozen(request, True)

    @extend_schema(operation_id="unfreezePosition", summary="Unfreeze Position", description="ThawAccount, signed by the mint's freeze authority.", request=FreezePositionInput, responses=api_responses({200: UnfreezePositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def unfreeze(self, request):
        return self._set_frozen(request, False)

    @extend_schema(operation_id=item_query("fetchPositions", selectors.POSITION_QUERY), summary="Fetch Positions", description="Creates no transaction. detail-level: detailed, compact, identifiers.", request=BulkPositionsInput, responses=bulk_responses("BulkPositionsPage", BulkPositionsOutput, BulkPositionsCompactOutput, BulkPositionsIdentifiersOutput), parameters=[DETAIL_LEVEL, *operation_parameters()], tags=TAG)
    def bulk(self, request, detail_level: str):
        output = render.RENDERERS.get(detail_level)
        if output is None:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkPositionsInput, request)
        items, count = selectors.position_list(queryset=self.get_queryset(), tenant=self.tenant, cluster=self.cluster, item_query=body.get("itemQuery"), detail_level=detail_level)
        return Response({"count": count, "items": [output(p) for p in items]})



class PositionMovementViewSet(TenantScopedViewSet):
    """Mint, Burn, Transfer Financial Instrument, Trade (positions/movement.py): 200, or
    201 when the request recorded a new position on the way."""

    model = Position

    @extend_schema(operation_id="mintToPosition", summary="Mint", description="MintToChecked into the position, signed by the instrument's mint authority; with createIfMissing the owner's associated position is created in the same transaction (201).", request=MintInput, responses=api_responses({200: MintPositionOutput, 201: MintPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def mint(self, request):
        ctx, body = self.operation(MintInput)
        data = body["itemData"]
        result = movement.position_mint(ctx, lookup=data["position"], value=data["value"], create_if_missing=data.get("createIfMissing", False))
        return mutation_response(request, "mintedPosition", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(operation_id="burnFromPosition", summary="Burn", description="BurnChecked from the position, signed by its owner, its delegate or the instrument's permanent delegate.", request=BurnInput, responses=api_responses({200: BurnPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def burn(self, request):
        ctx, body = self.operation(BurnInput)
        data = body["itemData"]
        result = movement.position_burn(ctx, lookup=data["position"], value=data["value"], authority_lookup=data.get("authority"))
        return mutation_response(request, "burnedPosition", result.identifiers, result.transaction)

    @extend_schema(operation_id="transferFinancialInstrument", summary="Transfer Financial Instrument", description="TransferChecked from the source position to the destination (created on the way when it is missing: 201).", request=TransferInput, responses=api_responses({200: TransferPositionOutput, 201: TransferPositionOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def transfer(self, request):
        ctx, body = self.operation(TransferInput)
        result = movement.position_transfer(ctx, data=body["itemData"])
        return mutation_response(request, "destinationPosition", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)

    @extend_schema(operation_id="trade", summary="Trade", description="Delivery versus payment: every leg is a transfer, all in one transaction (every leg settles or none). `trade` names that transaction.", request=TradeInput, responses=api_responses({200: TradeOutput, 201: TradeOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def trade(self, request):
        ctx, body = self.operation(TradeInput)
        result = movement.position_trade(ctx, legs=body["itemData"]["legs"])
        return mutation_response(request, "trade", result.identifiers, result.transaction, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


BATCH_TAG = ["Positions: batch payouts"]


class PositionBatchViewSet(TenantScopedViewSet):
    """Batch payouts (beyond the spec: positions/batches.py, docs/positions.md "Batch
    payouts"): 200 with one result per item, whatever became of each."""

    model = Position

    def throttle_weight(self, request) -> int:
        """A batch costs one rate-limit unit per item (tenancy/throttling.py), up to the most
        a batch may hold; Fetch Batch costs one."""
        if self.action not in ("transfer", "transfer_network_currency"):
            return 1
        item_data = request.data.get("itemData") if isinstance(request.data, dict) else None
        items = item_data.get("items") if isinstance(item_data, dict) else None
        return min(len(items), batches.MAX_BATCH_ITEMS) if isinstance(items, list) else 1

    @extend_schema(
        operation_id="transferFinancialInstrumentBatch", summary="Transfer Financial Instrument, batch",
        description=(
            "Beyond the spec. Up to 1,000 transfers, each shaped like Transfer Financial Instrument's itemData. Each item gets its own result: "
            "the transaction that carries it (items sharing their signer are packed into one transaction while it fits 1,232 bytes), or its own "
            "4xx (httpStatus, errors) without failing the others. An item over a debit limit is held alone, PENDING_APPROVAL. A packed transaction "
            "that fails on chain has its items built again alone (status RETRYING meanwhile). Idempotent as a whole on x-request-id."
        ),
        request=TransferBatchInput, responses=api_responses({200: BatchOutput}, mutation=True), parameters=operation_parameters(), tags=BATCH_TAG,
    )
    @idempotent
    def transfer(self, request):
        ctx, body = self.operation(TransferBatchInput)
        batch = batches.transfer_batch(ctx, items=body["itemData"]["items"])
        return Response(batch_render.batch_render(batch))

    @extend_schema(
        operation_id="transferNetworkCurrencyBatch", summary="Transfer Network Currency, batch",
        description=(
            "Beyond the spec. Up to 1,000 network-currency transfers, each shaped like Transfer Network Currency's itemData, with the rules of "
            "Transfer Financial Instrument, batch: one result per item, a source's items packed into one transaction, an item over a debit limit "
            "held alone, a failed packed transaction retried item by item. The rent guard counts the batch's earlier items."
        ),
        request=TransferNetworkCurrencyBatchInput, responses=api_responses({200: BatchOutput}, mutation=True), parameters=operation_parameters(), tags=BATCH_TAG,
    )
    @idempotent
    def transfer_network_currency(self, request):
        ctx, body = self.operation(TransferNetworkCurrencyBatchInput)
        batch = batches.transfer_batch(ctx, items=body["itemData"]["items"], kind=BatchKind.NETWORK_CURRENCY_TRANSFER)
        return Response(batch_render.batch_render(batch))

    @extend_schema(
        operation_id="fetchBatch", summary="Fetch Batch", description="Creates no transaction. The batch, its items' counts by status and every item's result (beyond the spec).",
        request=BatchLookupInput, responses=api_responses({200: BatchOutput}), parameters=operation_parameters(), tags=BATCH_TAG,
    )
    def details(self, request):
        data = validated(BatchLookupInput, request)["itemData"]
        return Response(batch_render.batch_render(batch_render.batch_get(tenant=self.tenant, cluster=self.cluster, offchain_id=data["batch"]["offchainId"])))
