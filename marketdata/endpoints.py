"""Market data's API: one declaration per operation (spec: "Market data"; docs/marketdata.md;
tenancy/endpoints.py says what a row holds), under /api/v1/market-data/onchain-data-source.
The view set and routes are made from ``TABLE`` (marketdata/urls.py)."""

from __future__ import annotations

from rest_framework.response import Response

from ledger_project.api.commands import command
from tenancy.endpoints import Endpoint, bulk_fetch
from transactions.responses import transaction_answer, transaction_result, wait_level

from . import refresh, render, selectors, services
from .commands import CreateDataSource, NamedDataSource, UpdateDataSource
from .models import EvaluationTrigger
from .serializers import (
    BulkDataSourcesCompactOutput,
    BulkDataSourcesIdentifiersOutput,
    BulkDataSourcesInput,
    BulkDataSourcesOutput,
    CreateDataSourceInput,
    CreateDataSourceOutput,
    DataSourceOutput,
    FetchDataSourceInput,
    RefreshDataSourceInput,
    RefreshDataSourceOutput,
    UpdateDataSourceInput,
    UpdateDataSourceOutput,
)

TAG = ("Market data",)
RESULT = "svmTransaction"
BASE = "market-data/onchain-data-source"
PROGRAM_RULES = (" The feed's own rules are the price_feed program's: its refusal in simulation is a 400 PROGRAM_ERROR naming the program's error "
                 "(docs/marketdata.md, \"Errors\"); nothing is recorded then.")
_V = "OnchainDataSourceViewSet"


def _source(door, lookup: dict):
    return selectors.data_source_get(tenant=door.tenant, cluster=door.cluster, lookup=lookup)


def _create(door, ctx, body):
    result = services.data_source_create(ctx, data=command(CreateDataSource, body["itemData"]))
    return transaction_answer(door.request, {"newOnchainDataSource": render.identifiers(result.source)}, result.transaction)


def _update(door, ctx, body):
    data = command(UpdateDataSource, body["itemData"])
    result = services.data_source_update(ctx, source=_source(door, data.onchain_data_source), data=data)
    return transaction_answer(door.request, {"updatedOnchainDataSource": render.identifiers(result.source)}, result.transaction)


def _refresh(door, ctx, body):
    named = command(NamedDataSource, body["itemData"])
    result = refresh.data_source_refresh(ctx, source=_source(door, named.onchain_data_source), trigger=EvaluationTrigger.API)
    exponent = result.source.exponent
    response = Response({"refreshedOnchainDataSource": render.identifiers(result.source), "evaluation": render.evaluation(result.evaluation, exponent),
                         RESULT: None})
    level = wait_level(door.request)
    if level is not None:
        def evaluated(resp):
            row = refresh.evaluation_wait(result.evaluation, level)
            resp.data["evaluation"], resp.data[RESULT] = render.evaluation(row, exponent), transaction_result(row.transaction)

        response.after_commit = evaluated
    return response


def _details(door, ctx, body):
    named = command(NamedDataSource, body["itemData"])
    return Response(selectors.data_source_details(tenant=door.tenant, cluster=door.cluster, lookup=named.onchain_data_source))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "create", BASE, "post", "onchain-data-source", "createOnchainDataSource", "Create Onchain Data Source",
             "Creates a feed account of the price_feed program pricing financialInstrument (System CreateAccount and the program's Initialize in one "
             "transaction: the mint, the exponent, the staleness bound, the job definition's hash and the authority recorded on chain), its rent from "
             "svmTransactionConfig.feePayer (never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). PENDING until the transaction confirms, then "
             "ACTIVE and refreshed every refreshIntervalSeconds by the worker. With alreadyOnchain, the feed at existingOnchainDataSourceAccount is read "
             "from the chain and onboarded (no transaction: svmTransaction null). 409 DATA_SOURCE_EXISTS when the instrument has an active source of "
             "dataDetails.kind. A bad job definition is a 400 whose field is the bad task's path." + PROGRAM_RULES,
             CreateDataSourceInput, _create, {200: CreateDataSourceOutput}, wait=True, tags=TAG),
    Endpoint(_V, "update", BASE, "patch", "onchain-data-source", "updateOracleDataSourceDefinition", "Update Oracle Data Source Definition",
             "Patch semantics. A new jobDefinition (another hash) is recorded on chain — SetJobHash signed by the feed's authority — and evaluated once "
             "that confirms (one change of a feed at a time: 409 OPERATION_IN_PROGRESS); ratingProvider, refreshIntervalSeconds and status (ACTIVE / "
             "INACTIVE) change at once, with no transaction (svmTransaction null)." + PROGRAM_RULES,
             UpdateDataSourceInput, _update, {200: UpdateDataSourceOutput}, wait=True, tags=TAG),
    Endpoint(_V, "refresh", f"{BASE}/refresh", "patch", "onchain-data-source-refresh", "refreshOracleDataSource", "Refresh Oracle Data Source",
             "Queues an evaluation of the job for the worker (evaluation.status REQUESTED; svmTransaction null): it calls each source under the outbound "
             "URL rules within LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS and, with a value, sends the program's Update — the next round, the value at "
             "the feed's exponent, observed then — signed by the feed's authority. With ?wait= the answer comes once the evaluation is done and its "
             "update reached that status: FAILED (no value: nothing is sent, the feed keeps its value), REJECTED (the update was refused before "
             "sending, e.g. the program's AuthorityMismatch), or SUBMITTED / CONFIRMED with svmTransaction. An ACTIVE source only (400 "
             "DATA_SOURCE_NOT_ACTIVE); one refresh or change of a feed at a time (409 OPERATION_IN_PROGRESS).",
             RefreshDataSourceInput, _refresh, {200: RefreshDataSourceOutput}, wait=True, tags=TAG),
    Endpoint(_V, "details", f"{BASE}/single", "post", "onchain-data-source-details", "fetchOnchainDataSourceDetails", "Fetch Onchain Data Source Details",
             "Creates no transaction. The data source, its feed read from the chain now (onchainValue, readFrom CHAIN; null while no feed is there) "
             "next to its last evaluation.",
             FetchDataSourceInput, _details, {200: DataSourceOutput}, mutation=False, tags=TAG),
    bulk_fetch(_V, f"{BASE}/bulk", "onchain-data-sources-bulk", operation_id="fetchOracleDataSources", query=selectors.DATA_SOURCE_QUERY,
               summary="Fetch Oracle Data Sources", input=BulkDataSourcesInput, page="BulkDataSourcesPage",
               outputs=(BulkDataSourcesOutput, BulkDataSourcesCompactOutput, BulkDataSourcesIdentifiersOutput), renderers=render.RENDERERS, tags=TAG,
               items=lambda door, query, level: selectors.data_source_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=query),
               description="Creates no transaction. detail-level: detailed, compact, identifiers. onchainValue is the record's copy of the feed after its last "
                           "confirmed change (readFrom RECORD)."),
)
