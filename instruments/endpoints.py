"""Financial instruments' API: one declaration per operation (spec: Financial instruments 1-8;
tenancy/endpoints.py says what a row holds). The view set and routes are made from ``TABLE``
(instruments/urls.py); the allow-list's operations are instruments/allowlist/urls.py's."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import status
from rest_framework.response import Response

from accounts.serializers import BulkInput, value_output
from chain.rpc import rpc_for
from ledger_project.api.schema import api_responses
from ledger_project.timestamps import timestamp_text
from tenancy.endpoints import Endpoint, bulk_fetch
from transactions.responses import mutation_response

from . import changes as instrument_changes, extensions, render, selectors, services
from .lookup import resolve_instrument
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

TAG = ("Financial instruments",)
RENDERERS = {"compact": render.instrument_compact, "identifiers": render.instrument_identifiers}
_V = "FinancialInstrumentViewSet"


def _create(door, ctx, body):
    result = services.instrument_create(ctx, data=body["itemData"])
    return mutation_response(door.request, "newFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction, status=status.HTTP_201_CREATED)


def _details(door, ctx, body):
    item = selectors.instrument_get(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"])
    chain = read_mint(door.cluster, item.address) if item.status != "CLOSED" else None
    return Response(render.instrument_detailed(item, render.account_responses(selectors.related_accounts([item], tenant=door.tenant)), chain))


def _circulating_supply(door, ctx, body):
    item = selectors.instrument_get(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"])
    chain = read_mint(door.cluster, item.address)
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


def _page(door, body, detail_level: str):
    columns = {"compact": selectors.COMPACT_COLUMNS, "identifiers": selectors.IDENTIFIER_COLUMNS}.get(detail_level, selectors.DETAILED_COLUMNS)
    items, count = selectors.instrument_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=body.get("itemQuery"), columns=columns)
    if detail_level == "detailed":  # the related accounts of the whole page, in one read
        accounts = render.account_responses(selectors.related_accounts(items, tenant=door.tenant))
        return Response({"count": count, "items": [render.instrument_detailed(i, accounts) for i in items]})
    output = RENDERERS[detail_level]
    return Response({"count": count, "items": [output(i) for i in items]})


def _writable(door, data: dict, name: str):
    return resolve_instrument(door.tenant, door.cluster, data[name], field=f"itemData.{name}", writable=True)


def _update(door, ctx, body):
    data = body["itemData"]
    raw = door.request.data.get("itemData") or {}
    changes = {k: v for k, v in data.items() if k in raw and k != "mintAccount"}
    result = instrument_changes.instrument_update(ctx, instrument=_writable(door, data, "mintAccount"), changes=changes)
    return mutation_response(door.request, "updatedFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction)


def _set_paused(paused: bool):
    def run(door, ctx, body):
        data = body["itemData"]
        instrument = _writable(door, data, "financialInstrument")
        result = instrument_changes.instrument_set_paused(ctx, instrument=instrument, paused=paused, authority_lookup=data.get("pausableAuthority"))
        answer = "pausedFinancialInstrument" if paused else "unpausedFinancialInstrument"
        return mutation_response(door.request, answer, render.instrument_identifiers(result.instrument), result.transaction)
    return run


def _close(door, ctx, body):
    data = body["itemData"]
    instrument = _writable(door, data, "financialInstrumentToClose")
    result = instrument_changes.instrument_close(ctx, instrument=instrument, refund_lookup=data.get("refundDestination"), authority_lookup=data.get("closeAuthority"))
    return mutation_response(door.request, "closedFinancialInstrument", render.instrument_identifiers(result.instrument), result.transaction)


def _calculator(door, ctx, body):
    size = extensions.calculate(body["extensions"], body.get("metadata"))
    rent = value_output(rpc_for(door.cluster).minimum_balance_for_rent_exemption(size))
    return Response({"mintAccountSize": size, "estimatedRent": rent, "estimatedRentAmount": rent["amount"]})


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "create", "financial-instruments", "post", "instruments", "createFinancialInstrument", "Create Financial Instrument", None,
             CreateInstrumentInput, _create, {201: CreateInstrumentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "update", "financial-instruments", "patch", "instruments", "updateFinancialInstrument", "Update Financial Instrument",
             "Patch semantics: only fields present change.", UpdateInstrumentInput, _update, {200: UpdateInstrumentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "details", "financial-instruments/single", "post", "instrument-details", "fetchFinancialInstrumentDetails", "Fetch Financial Instrument Details",
             "Creates no transaction. Onchain fields are read from the network.", InstrumentLookupInput, _details, {200: InstrumentOutput}, mutation=False, tags=TAG),
    Endpoint(_V, "circulating_supply", "financial-instruments/single/circulating-supply", "post", "instrument-circulating-supply",
             "fetchFinancialInstrumentCirculatingSupply", "Fetch Financial Instrument Circulating Supply",
             "Creates no transaction. The mint's supply on the network next to the service's own figure.",
             InstrumentLookupInput, _circulating_supply, {200: CirculatingSupplyOutput}, mutation=False, tags=TAG),
    bulk_fetch(_V, "financial-instruments/bulk", "instruments-bulk", operation_id="fetchFinancialInstruments", query=selectors.INSTRUMENT_QUERY,
               summary="Fetch Financial Instruments", input=BulkInput, page="BulkFinancialInstrumentsPage",
               outputs=(BulkInstrumentsOutput, BulkInstrumentsCompactOutput, BulkInstrumentsIdentifiersOutput), tags=TAG, run=_page),
    Endpoint(_V, "pause", "financial-instruments/pause", "patch", "instrument-pause", "pauseFinancialInstrument", "Pause Financial Instrument",
             "Token-2022 PAUSABLE: transfers, mints and burns stop until unpaused.", PauseInput, _set_paused(True), {200: PauseInstrumentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "unpause", "financial-instruments/unpause", "patch", "instrument-unpause", "unpauseFinancialInstrument", "Unpause Financial Instrument", None,
             PauseInput, _set_paused(False), {200: UnpauseInstrumentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "close", "financial-instruments/close", "patch", "instrument-close", "closeFinancialInstrument", "Close Financial Instrument",
             "Needs a close authority and circulating supply 0; rent goes to refundDestination.", CloseInput, _close, {200: CloseInstrumentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "calculator", "financial-instruments/token-extensions-calculator", "post", "instrument-calculator", "tokenExtensionsCalculator",
             "Token Extensions Calculator", "Creates no transaction. The mint account size for extensions and metadata, and its rent.",
             CalculatorInput, _calculator, mutation=False, tags=TAG, schema={"responses": api_responses({200: CalculatorOutput}, lookup=False)}),
)
