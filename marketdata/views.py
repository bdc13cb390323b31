"""Market data endpoints (spec: "Market data"; docs/marketdata.md), under
/api/v1/market-data/onchain-data-source."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from transactions.responses import attach_wait, transaction_result, wait_level

from . import refresh, render, selectors, services
from .models import EvaluationTrigger, OnchainDataSource
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

TAG = ["Market data"]
RESULT = "svmTransaction"
PROGRAM_RULES = (" The feed's own rules are the price_feed program's: its refusal in simulation is a 400 PROGRAM_ERROR naming the program's error "
                 "(docs/marketdata.md, \"Errors\"); nothing is recorded then.")


def _answer(request, body: dict, result) -> Response:
    """``{…identifiers, svmTransaction}`` (null when no transaction was made), waiting after
    commit when ``?wait=`` asks."""
    response = Response({**body, RESULT: transaction_result(result.transaction)})
    if result.transaction is not None:
        attach_wait(response, request, result.transaction, transaction_result, path=(RESULT,))
    return response


class OnchainDataSourceViewSet(TenantScopedViewSet):
    model = OnchainDataSource

    def _source(self, data: dict):
        return selectors.data_source_get(tenant=self.tenant, cluster=self.cluster, lookup=data["onchainDataSource"])

    @extend_schema(
        operation_id="createOnchainDataSource", summary="Create Onchain Data Source",
        description=(
            "Creates a feed account of the price_feed program pricing financialInstrument (System CreateAccount and the program's Initialize in one "
            "transaction: the mint, the exponent, the staleness bound, the job definition's hash and the authority recorded on chain), its rent from "
            "svmTransactionConfig.feePayer (never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). PENDING until the transaction confirms, then "
            "ACTIVE and refreshed every refreshIntervalSeconds by the worker. With alreadyOnchain, the feed at existingOnchainDataSourceAccount is read "
            "from the chain and onboarded (no transaction: svmTransaction null). 409 DATA_SOURCE_EXISTS when the instrument has an active source of "
            "dataDetails.kind. A bad job definition is a 400 whose field is the bad task's path." + PROGRAM_RULES
        ),
        request=CreateDataSourceInput, responses=api_responses({200: CreateDataSourceOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateDataSourceInput)
        result = services.data_source_create(ctx, data=body["itemData"])
        return _answer(request, {"newOnchainDataSource": render.identifiers(result.source)}, result)

    @extend_schema(
        operation_id="updateOracleDataSourceDefinition", summary="Update Oracle Data Source Definition",
        description=(
            "Patch semantics. A new jobDefinition (another hash) is recorded on chain — SetJobHash signed by the feed's authority — and evaluated once "
            "that confirms (one change of a feed at a time: 409 OPERATION_IN_PROGRESS); ratingProvider, refreshIntervalSeconds and status (ACTIVE / "
            "INACTIVE) change at once, with no transaction (svmTransaction null)." + PROGRAM_RULES
        ),
        request=UpdateDataSourceInput, responses=api_responses({200: UpdateDataSourceOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdateDataSourceInput)
        data = body["itemData"]
        result = services.data_source_update(ctx, source=self._source(data), data=data)
        return _answer(request, {"updatedOnchainDataSource": render.identifiers(result.source)}, result)

    @extend_schema(
        operation_id="refreshOracleDataSource", summary="Refresh Oracle Data Source",
        description=(
            "Queues an evaluation of the job for the worker (evaluation.status REQUESTED; svmTransaction null): it calls each source under the outbound "
            "URL rules within LEDGER_MARKETDATA_EVALUATION_TIMEOUT_SECONDS and, with a value, sends the program's Update — the next round, the value at "
            "the feed's exponent, observed then — signed by the feed's authority. With ?wait= the answer comes once the evaluation is done and its "
            "update reached that status: FAILED (no value: nothing is sent, the feed keeps its value), REJECTED (the update was refused before "
            "sending, e.g. the program's AuthorityMismatch), or SUBMITTED / CONFIRMED with svmTransaction. An ACTIVE source only (400 "
            "DATA_SOURCE_NOT_ACTIVE); one refresh or change of a feed at a time (409 OPERATION_IN_PROGRESS)."
        ),
        request=RefreshDataSourceInput, responses=api_responses({200: RefreshDataSourceOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def refresh(self, request):
        ctx, body = self.operation(RefreshDataSourceInput)
        result = refresh.data_source_refresh(ctx, source=self._source(body["itemData"]), trigger=EvaluationTrigger.API)
        exponent = result.source.exponent
        response = Response({"refreshedOnchainDataSource": render.identifiers(result.source), "evaluation": render.evaluation(result.evaluation, exponent),
                             RESULT: None})
        level = wait_level(request)
        if level is not None:
            def evaluated(resp):
                row = refresh.evaluation_wait(result.evaluation, level)
                resp.data["evaluation"], resp.data[RESULT] = render.evaluation(row, exponent), transaction_result(row.transaction)

            response.after_commit = evaluated
        return response

    @extend_schema(
        operation_id="fetchOnchainDataSourceDetails", summary="Fetch Onchain Data Source Details",
        description="Creates no transaction. The data source, its feed read from the chain now (onchainValue, readFrom CHAIN; null while no feed is there) "
                    "next to its last evaluation.",
        request=FetchDataSourceInput, responses=api_responses({200: DataSourceOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def details(self, request):
        lookup = validated(FetchDataSourceInput, request)["itemData"]["onchainDataSource"]
        return Response(selectors.data_source_details(tenant=self.tenant, cluster=self.cluster, lookup=lookup))

    @extend_schema(
        operation_id=item_query("fetchOracleDataSources", selectors.DATA_SOURCE_QUERY),
        summary="Fetch Oracle Data Sources",
        description="Creates no transaction. detail-level: detailed, compact, identifiers. onchainValue is the record's copy of the feed after its last "
                    "confirmed change (readFrom RECORD).",
        request=BulkDataSourcesInput,
        responses=bulk_responses("BulkDataSourcesPage", BulkDataSourcesOutput, BulkDataSourcesCompactOutput, BulkDataSourcesIdentifiersOutput),
        parameters=[DETAIL_LEVEL, *operation_parameters()], tags=TAG,
    )
    def bulk(self, request, detail_level: str):
        draw = render.RENDERERS.get(detail_level)
        if draw is None:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkDataSourcesInput, request)
        items, count = selectors.data_source_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"))
        return Response({"count": count, "items": [draw(s) for s in items]})
