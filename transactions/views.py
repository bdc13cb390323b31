"""Blockchain transactions endpoints (spec: Blockchain transactions)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from ledger_project.api.schema import api_responses, operation_parameters
from ledger_project.api.viewsets import TenantScopedViewSet

from . import selectors
from .models import Transaction
from .serializers import TransactionResultOutput, TransactionStatusInput


class TransactionViewSet(TenantScopedViewSet):
    model = Transaction

    @extend_schema(
        operation_id="fetchTransactionStatus",
        summary="Fetch Transaction Status",
        description="Creates no transaction. The current transaction result of a transaction the service built.",
        request=TransactionStatusInput,
        responses=api_responses({200: TransactionResultOutput}),
        parameters=operation_parameters(),
        tags=["Blockchain transactions"],
    )
    def status(self, request):
        data = validated(TransactionStatusInput, request)["itemData"]["transaction"]
        tx = selectors.transaction_get(queryset=self.get_queryset(), onchain_id=data.get("onchainId"), offchain_id=data.get("offchainId"))
        return Response(TransactionResultOutput(tx).data)
