"""The positions area's API: one declaration per operation (spec: Positions; paths and
bodies in docs/positions.md; tenancy/endpoints.py says what a row holds).

The view sets and URL routes are made from ``TABLE`` (positions/urls.py). A row's ``run``
reads the validated body, hands the service its context and Python values, and answers;
the service is in the operation's family module (``lifecycle``, ``movement``,
``transfers``, ``batches``). Adding an operation: its service in its family, its name in
operations.py when it builds a transaction, and its row here (docs/architecture.md)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from accounts.lookup import resolve_account
from instruments.lookup import resolve_instrument
from tenancy.endpoints import Endpoint, bulk_fetch
from transactions.responses import mutation_response

from . import batch_render, batches, lifecycle, movement, render, selectors, services, transfers
from .lookup import resolve_own_position
from .models import BatchKind
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
    TransferInput,
    TransferNetworkCurrencyBatchInput,
    TransferNetworkCurrencyInput,
    TransferNetworkCurrencyOutput,
    TransferPositionOutput,
    UnfreezePositionOutput,
    UpdatePositionInput,
    UpdatePositionOutput,
)

TAG = ("Positions",)
BATCH_TAG = ("Positions: batch payouts",)


def _created_or_ok(result) -> int:
    return status.HTTP_201_CREATED if result.created else status.HTTP_200_OK


# --- a position's life (positions/services.py, lifecycle.py) ------------------------------------


def _initialize(door, ctx, body):
    data = body["itemData"]
    owner = resolve_account(door.tenant, door.cluster, data["owner"], field="itemData.owner")
    instrument = resolve_instrument(door.tenant, door.cluster, data["financialInstrument"], field="itemData.financialInstrument")
    result = services.position_initialize(ctx, owner=owner, instrument=instrument, data=data)
    return mutation_response(door.request, "newPosition", render.position_identifiers(result.position), result.transaction, status=status.HTTP_201_CREATED)


def _own_position(door, data: dict):
    return resolve_own_position(door.tenant, door.cluster, data["position"], field="itemData.position")


def _update(door, ctx, body):
    data = body["itemData"]
    raw = door.request.data.get("itemData") or {}
    changes = {k: v for k, v in data.items() if k in raw and k != "position"}
    if changes.get("offchainReferences"):
        changes["offchainReferences"] = {k: v for k, v in changes["offchainReferences"].items() if k in (raw.get("offchainReferences") or {})}
    position = _own_position(door, data)
    result = lifecycle.position_update(ctx, position=position, changes=changes)
    return mutation_response(door.request, "updatedPosition", render.position_identifiers(result.position), result.transaction)


def _inactivate(door, ctx, body):
    data = body["itemData"]
    position = _own_position(door, data)
    refund = None
    if data.get("refundDestination"):
        refund = resolve_account(door.tenant, door.cluster, data["refundDestination"], field="itemData.refundDestination", allow_off_platform=True)
    result = lifecycle.position_inactivate(ctx, position=position, refund_to=refund)
    return mutation_response(door.request, "inactivatedPosition", render.position_identifiers(result.position), result.transaction)


def _set_frozen(frozen: bool):
    def run(door, ctx, body):
        lookup = body["itemData"]["position"]
        position = _own_position(door, body["itemData"])
        result = lifecycle.position_set_frozen(ctx, position=position, frozen=frozen, authority_lookup=lookup.get("freezeAuthority"))
        answer = "frozenPosition" if frozen else "unfrozenPosition"
        return mutation_response(door.request, answer, render.position_identifiers(result.position), result.transaction)
    return run


def _details(door, ctx, body):
    return Response(render.position_detailed(selectors.position_get(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"])))


def _balance(door, ctx, body):
    data = body["itemData"]
    at = data.pop("at", None)
    return Response(selectors.position_balance(tenant=door.tenant, cluster=door.cluster, lookup=data, at=at))


# --- moving lamports (positions/transfers.py) and tokens (positions/movement.py) ----------------


def _transfer_network_currency(door, ctx, body):
    data = body["itemData"]
    source = resolve_account(door.tenant, door.cluster, data["source"], field="itemData.source")
    destination = resolve_account(door.tenant, door.cluster, data["destination"], field="itemData.destination", allow_off_platform=True)
    result = transfers.network_currency_transfer(ctx, source=source, destination=destination, value=data["value"])
    identifiers = {"onchainId": result.destination.address, "offchainId": str(result.destination.offchain_id) if hasattr(result.destination, "offchain_id") else None}
    return mutation_response(door.request, "destinationAccount", identifiers, result.transaction)


def _mint(door, ctx, body):
    data = body["itemData"]
    result = movement.position_mint(ctx, lookup=data["position"], value=data["value"], create_if_missing=data.get("createIfMissing", False))
    return mutation_response(door.request, "mintedPosition", result.identifiers, result.transaction, status=_created_or_ok(result))


def _burn(door, ctx, body):
    data = body["itemData"]
    result = movement.position_burn(ctx, lookup=data["position"], value=data["value"], authority_lookup=data.get("authority"))
    return mutation_response(door.request, "burnedPosition", result.identifiers, result.transaction)


def _transfer(door, ctx, body):
    result = movement.position_transfer(ctx, data=body["itemData"])
    return mutation_response(door.request, "destinationPosition", result.identifiers, result.transaction, status=_created_or_ok(result))


def _trade(door, ctx, body):
    result = movement.position_trade(ctx, legs=body["itemData"]["legs"])
    return mutation_response(door.request, "trade", result.identifiers, result.transaction, status=_created_or_ok(result))


# --- batch payouts (beyond the spec: positions/batches.py, docs/positions.md) -------------------


def _batch_of(kind: str):
    def run(door, ctx, body):
        return Response(batch_render.batch_render(batches.transfer_batch(ctx, items=body["itemData"]["items"], kind=kind)))
    return run


def _batch_details(door, ctx, body):
    offchain_id = body["itemData"]["batch"]["offchainId"]
    return Response(batch_render.batch_render(batch_render.batch_get(tenant=door.tenant, cluster=door.cluster, offchain_id=offchain_id)))


def _batch_weight(request) -> int:
    """A batch costs one rate-limit unit per item (tenancy/throttling.py), up to the most a
    batch may hold; Fetch Batch costs one."""
    item_data = request.data.get("itemData") if isinstance(request.data, dict) else None
    items = item_data.get("items") if isinstance(item_data, dict) else None
    return min(len(items), batches.MAX_BATCH_ITEMS) if isinstance(items, list) else 1


VIEWSET_DOCS = {
    "PositionMovementViewSet": "Mint, Burn, Transfer Financial Instrument, Trade (positions/movement.py): 200, or 201 when the request recorded a new position on the way.",
    "PositionBatchViewSet": "Batch payouts (beyond the spec: positions/batches.py, docs/positions.md \"Batch payouts\"): 200 with one result per item, whatever became of each.",
}

_P, _M, _B = "PositionViewSet", "PositionMovementViewSet", "PositionBatchViewSet"

TABLE: tuple[Endpoint, ...] = (
    Endpoint(_P, "initialize", "positions", "post", "positions", "initializePosition", "Initialize Position",
             "Creates the owner's token account for the instrument (its associated token account by default).",
             InitializePositionInput, _initialize, {201: InitializePositionOutput}, wait=True, tags=TAG),
    Endpoint(_P, "update", "positions", "patch", "positions", "updatePosition", "Update Position",
             "Patch semantics: only fields present change. Offchain fields change at once; `delegate` approves (or, null, revokes) a delegate on the network, signed by the owner.",
             UpdatePositionInput, _update, {200: UpdatePositionOutput}, wait=True, tags=TAG),
    Endpoint(_P, "details", "positions/single", "post", "position-details", "fetchPositionDetails", "Fetch Position Details", "Creates no transaction.",
             PositionLookupInput, _details, {200: PositionOutput}, mutation=False, tags=TAG),
    Endpoint(_P, "balance", "positions/single/balance", "post", "position-balance", "fetchPositionBalance", "Fetch Position Balance",
             "Creates no transaction. The current offchain and onchain token balance, or the offchain balance at a past time (`at`).",
             PositionBalanceInput, _balance, {200: PositionBalanceOutput}, mutation=False, tags=TAG),
    Endpoint(_P, "transfer_network_currency", "positions/transfer-network-currency", "post", "position-transfer-network-currency",
             "transferNetworkCurrency", "Transfer Network Currency",
             "A System transfer of lamports from the source account (which signs) to an account or an off-platform address. "
             "The source must stay rent exempt or end at exactly 0; a new destination must receive at least the rent-exempt minimum. "
             "The source's networkCurrencyDebitApiKeys apply (403 DEBIT_NOT_ALLOWED); over its networkCurrencyDebitLimits the transaction is "
             "built and signed but held PENDING_APPROVAL until approved (PATCH /api/v1/transactions/approve).",
             TransferNetworkCurrencyInput, _transfer_network_currency, {200: TransferNetworkCurrencyOutput}, wait=True, tags=TAG),
    Endpoint(_P, "inactivate", "positions/inactivate", "patch", "position-inactivate", "inactivatePosition", "Inactivate Position",
             "Closes the empty token account (CloseAccount; its rent to refundDestination, default the owner); INACTIVE once confirmed.",
             InactivatePositionInput, _inactivate, {200: InactivatePositionOutput}, wait=True, tags=TAG),
    Endpoint(_P, "freeze", "positions/freeze", "patch", "position-freeze", "freezePosition", "Freeze Position",
             "FreezeAccount, signed by the mint's freeze authority: the token account can then neither send nor receive.",
             FreezePositionInput, _set_frozen(True), {200: FreezePositionOutput}, wait=True, tags=TAG),
    Endpoint(_P, "unfreeze", "positions/unfreeze", "patch", "position-unfreeze", "unfreezePosition", "Unfreeze Position",
             "ThawAccount, signed by the mint's freeze authority.",
             FreezePositionInput, _set_frozen(False), {200: UnfreezePositionOutput}, wait=True, tags=TAG),
    bulk_fetch(_P, "positions/bulk", "positions-bulk", operation_id="fetchPositions", query=selectors.POSITION_QUERY, summary="Fetch Positions",
               input=BulkPositionsInput, page="BulkPositionsPage", outputs=(BulkPositionsOutput, BulkPositionsCompactOutput, BulkPositionsIdentifiersOutput),
               renderers=render.RENDERERS, tags=TAG,
               items=lambda door, query, level: selectors.position_list(queryset=door.get_queryset(), tenant=door.tenant, cluster=door.cluster, item_query=query, detail_level=level)),
    Endpoint(_M, "mint", "positions/mint", "post", "position-mint", "mintToPosition", "Mint",
             "MintToChecked into the position, signed by the instrument's mint authority; with createIfMissing the owner's associated position is created in the same transaction (201).",
             MintInput, _mint, {200: MintPositionOutput, 201: MintPositionOutput}, wait=True, tags=TAG),
    Endpoint(_M, "burn", "positions/burn", "post", "position-burn", "burnFromPosition", "Burn",
             "BurnChecked from the position, signed by its owner, its delegate or the instrument's permanent delegate.",
             BurnInput, _burn, {200: BurnPositionOutput}, wait=True, tags=TAG),
    Endpoint(_M, "transfer", "positions/transfer", "post", "position-transfer", "transferFinancialInstrument", "Transfer Financial Instrument",
             "TransferChecked from the source position to the destination (created on the way when it is missing: 201).",
             TransferInput, _transfer, {200: TransferPositionOutput, 201: TransferPositionOutput}, wait=True, tags=TAG),
    Endpoint(_M, "trade", "positions/trade", "post", "position-trade", "trade", "Trade",
             "Delivery versus payment: every leg is a transfer, all in one transaction (every leg settles or none). `trade` names that transaction.",
             TradeInput, _trade, {200: TradeOutput, 201: TradeOutput}, wait=True, tags=TAG),
    Endpoint(_B, "transfer", "positions/transfer/batch", "post", "position-transfer-batch", "transferFinancialInstrumentBatch", "Transfer Financial Instrument, batch",
             "Beyond the spec. Up to 1,000 transfers, each shaped like Transfer Financial Instrument's itemData. Each item gets its own result: "
             "the transaction that carries it (items sharing their signer are packed into one transaction while it fits 1,232 bytes), or its own "
             "4xx (httpStatus, errors) without failing the others. An item over a debit limit is held alone, PENDING_APPROVAL. A packed transaction "
             "that fails on chain has its items built again alone (status RETRYING meanwhile). Idempotent as a whole on x-request-id.",
             TransferBatchInput, _batch_of(BatchKind.TRANSFER), {200: BatchOutput}, tags=BATCH_TAG, weight=_batch_weight),
    Endpoint(_B, "transfer_network_currency", "positions/transfer-network-currency/batch", "post", "position-transfer-network-currency-batch",
             "transferNetworkCurrencyBatch", "Transfer Network Currency, batch",
             "Beyond the spec. Up to 1,000 network-currency transfers, each shaped like Transfer Network Currency's itemData, with the rules of "
             "Transfer Financial Instrument, batch: one result per item, a source's items packed into one transaction, an item over a debit limit "
             "held alone, a failed packed transaction retried item by item. The rent guard counts the batch's earlier items.",
             TransferNetworkCurrencyBatchInput, _batch_of(BatchKind.NETWORK_CURRENCY_TRANSFER), {200: BatchOutput}, tags=BATCH_TAG, weight=_batch_weight),
    Endpoint(_B, "details", "positions/batches/single", "post", "position-batch-details", "fetchBatch", "Fetch Batch",
             "Creates no transaction. The batch, its items' counts by status and every item's result (beyond the spec).",
             BatchLookupInput, _batch_details, {200: BatchOutput}, mutation=False, tags=BATCH_TAG),
)
