"""Financial instruments endpoints (spec: Financial instruments 1-8)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from accounts.serializers import BulkInput, value_output
from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from ledger_project.timestamps import timestamp_text
from chain.rpc import rpc_for
from transactions.responses import mutation_response

from . import changes as instrument_changes, extensions, render, selectors, services
from .lookup import resolve_instrument
from .models import FinancialInstrument
from .onchain import read_mint
from .serializers import (
    BulkInstrumentsCompactOutput,
    BulkInstrumentsIdentifiersOutput,
    BulkInstrumentsOutput,
    CalculatorInput,
    CalculatorOutput,
    CirculatingSupplyOutput,
    CloseInput,
    CloseInstrumentOutput,
    CreateInstrumentInput,
    CreateInstrumentOutput,
    InstrumentLookupInput,
    InstrumentOutput,
    PauseInput,
    PauseInstrumentOutput,
    UnpauseInstrumentOutput,
    UpdateInstrumentInput,
    UpdateInstrumentOutput,
)

TAG = ["Financial instruments"]
RENDERERS = {"compact": render.instrument_compact, "identifiers": render.instrument_identifiers}



class FinancialInstrumentViewSet(TenantScopedViewSet):
    model = FinancialInstrument

    @extend_schema(operation_id="createFinancialInstrument", summary="Create Financial Instrument", request=CreateInstrumentInput, responses=api_responses({201: CreateInstrumentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateInstrumentInput)
        result = services.instrument_create(ctx, data=body["itemData"])
        return mutation_response(request, "newFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="fetchFinancialInstrumentDetails", summary="Fetch Financial Instrument Details", description="Creates no transaction. Onchain fields are read from the network.", request=InstrumentLookupInput, responses=api_responses({200: InstrumentOutput}), parameters=operation_parameters(), tags=TAG)
    def details(self, request):
        lookup = validated(InstrumentLookupInput, request)["itemData"]
        item = selectors.instrument_get(tenant=self.tenant, cluster=self.cluster, lookup=lookup)
        chain = read_mint(self.cluster, item.address) if item.status != "CLOSED" else None
        return Response(render.instrument_detailed(item, render.account_responses(selectors.related_accounts([item], tenant=self.tenant)), chain))

    @extend_schema(operation_id="fetchFinancialInstrumentCirculatingSupply", summary="Fetch Financial Instrument Circulating Supply", description="Creates no transaction. The mint's supply on the network next to the service's own figure.", request=InstrumentLookupInput, responses=api_responses({200: CirculatingSupplyOutput}), parameters=operation_parameters(), tags=TAG)
    def circulating_supply(self, request):
        lookup = validated(InstrumentLookupInput, request)["itemData"]
        item = selectors.instrument_get(tenant=self.tenant, cluster=self.cluster, lookup=lookup)
        chain = read_mint(self.cluster, item.address)
        onchain = chain.mint.supply if chain is not None else 0
        decimals = chain.mint.decimals if chain is not None else item.decimals
        return Response({
            "financialInstrument": render.instrument_identifiers(item),
            "onchain": render.token_value(onchain, decimals),
            "offchain": render.token_value(item.supply_offchain, decimals),
            "inAgreement": int(item.supply_offchain) == onchain,
            "decimals": decimals,
            "at": timestamp_text(timezone.now()),
        })

    @extend_schema(operation_id=item_query("fetchFinancialInstruments", selectors.INSTRUMENT_QUERY), summary="Fetch Financial Instruments", description="Creates no transaction. detail-level: detailed, compact, identifiers.", request=BulkInput, responses=bulk_responses("BulkFinancialInstrumentsPage", BulkInstrumentsOutput, BulkInstrumentsCompactOutput, BulkInstrumentsIdentifiersOutput), parameters=[DETAIL_LEVEL, *operation_parameters()], tags=TAG)
    def bulk(self, request, detail_level: str):
        if detail_level not in ("detailed", "compact", "identifiers"):
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkInput, request)
        columns = {"compact": selectors.COMPACT_COLUMNS, "identifiers": selectors.IDENTIFIER_COLUMNS}.get(detail_level, selectors.DETAILED_COLUMNS)
        items, count = selectors.instrument_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"), columns=columns)
        if detail_level == "detailed":
            accounts = render.account_responses(selectors.related_accounts(items, tenant=self.tenant))
            return Response({"count": count, "items": [render.instrument_detailed(i, accounts) for i in items]})
        output = RENDERERS[detail_level]
        return Response({"count": count, "items": [output(i) for i in items]})

    @extend_schema(operation_id="updateFinancialInstrument", summary="Update Financial Instrument", description="Patch semantics: only fields present change.", request=UpdateInstrumentInput, responses=api_responses({200: UpdateInstrumentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdateInstrumentInput)
        data = body["itemData"]
        raw = request.data.get("itemData") or {}
        changes = {k: v for k, v in data.items() if k in raw and k != "mintAccount"}
        instrument = resolve_instrument(self.tenant, self.cluster, data["mintAccount"], field="itemData.mintAccount", writable=True)
        result = instrument_changes.instrument_update(ctx, instrument=instrument, changes=changes)
        return mutation_response(request, "updatedFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction)

    def _set_paused(self, request, paused: bool):
        ctx, body = self.operation(PauseInput)
        data = body["itemData"]
        instrument = resolve_instrument(self.tenant, self.cluster, data["financialInstrument"], field="itemData.financialInstrument", writable=True)
        result = instrument_changes.instrument_set_paused(ctx, instrument=instrument, paused=paused, authority_lookup=data.get("pausableAuthority"))
        return mutation_response(request, "pausedFinancialInstrument" if paused else "unpausedFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction)

    @extend_schema(operation_id="pauseFinancialInstrument", summary="Pause Financial Instrument", description="Token-2022 PAUSABLE: transfers, mints and burns stop until unpaused.", request=PauseInput, responses=api_responses({200: PauseInstrumentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def pause(self, request):
        return self._set_paused(request, True)

    @extend_schema(operation_id="unpauseFinancialInstrument", summary="Unpause Financial Instrument", request=PauseInput, responses=api_responses({200: UnpauseInstrumentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def unpause(self, request):
        return self._set_paused(request, False)

    @extend_schema(operation_id="closeFinancialInstrument", summary="Close Financial Instrument", description="Needs a close authority and circulating supply 0; rent goes to refundDestination.", request=CloseInput, responses=api_responses({200: CloseInstrumentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def close(self, request):
        ctx, body = self.operation(CloseInput)
        data = body["itemData"]
        instrument = resolve_instrument(self.tenant, self.cluster, data["financialInstrumentToClose"], field="itemData.financialInstrumentToClose", writable=True)
        result = instrument_changes.instrument_close(ctx, instrument=instrument, refund_lookup=data.get("refundDestination"), authority_lookup=data.get("closeAuthority"))
        return mutation_response(request, "closedFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction)

    @extend_schema(operation_id="tokenExtensionsCalculator", summary="Token Extensions Calculator", description="Creates no transaction. The mint account size for extensions and metadata, and its rent.", request=CalculatorInput, responses=api_responses({200: CalculatorOutput}, lookup=False), parameters=operation_parameters(), tags=TAG)
    def calculator(self, request):
        body = validated(CalculatorInput, request)
        size = extensions.calculate(body["extensions"], body.get("metadata"))
        rent = value_output(rpc_for(self.cluster).minimum_balance_for_rent_exemption(size))
        return Response({"mintAccountSize": size, "estimatedRent": rent, "estimatedRentAmount": rent["amount"]})
