"""Loan remittance vault endpoints (spec: "Loan remittance vaults"; docs/vaults.md): all POST
under /api/v1/platform-programs/loan-remittance/."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from ledger_project.api.envelope import validated
from tenancy.idempotency import idempotent
from ledger_project.api.schema import api_responses, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from transactions.responses import attach_wait, transaction_result

from . import selectors, services
from .models import Vault
from .render import vault_identifiers
from .serializers import (
    CloseVaultInput,
    CloseVaultOutput,
    CreateVaultInput,
    CreateVaultOutput,
    RepaymentInput,
    RepaymentOutput,
    UpdateWhitelistInput,
    UpdateWhitelistOutput,
    VaultDetailsInput,
    VaultOutput,
)

TAG = ["Loan remittance vaults"]
RESULT = "svmTransactionResult"
PROGRAM_RULES = (" Rules of the vault itself are the loan_vault program's: its refusal in simulation is a 400 PROGRAM_ERROR naming the program's error "
                 "(docs/vaults.md, \"Errors\"); nothing is recorded then.")


def _answer(request, body: dict, result, *, status_code: int = status.HTTP_200_OK) -> Response:
    """``{…identifiers, svmTransactionResult}``, waiting after commit when ``?wait=`` asks."""
    response = Response({**body, RESULT: transaction_result(result.transaction)}, status=status_code)
    attach_wait(response, request, result.transaction, transaction_result, path=(RESULT,))
    return response


class VaultViewSet(TenantScopedViewSet):
    model = Vault

    def _vault(self, data: dict):
        return selectors.vault_get(tenant=self.tenant, cluster=self.cluster, lookup=data["vault"], field="itemData.vault")

    @extend_schema(
        operation_id="createLoanRemittanceVault", summary="Create Loan Remittance Vault",
        description=(
            "Creates the vault of a (loan, payment instrument) pair on chain — the vault authority PDA, its token account of the payment instrument "
            "and the program-owned whitelist, with the admin recorded — signed by the loan mint's mint authority; its rent from svmTransactionConfig.feePayer "
            "(never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). Offchain: a FUNDS_TOKEN_ACCOUNT position representing the vault, PENDING until "
            "the transaction confirms. 409 VAULT_EXISTS when the organization has a live vault for the pair." + PROGRAM_RULES
        ),
        request=CreateVaultInput, responses=api_responses({201: CreateVaultOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def create_vault(self, request):
        ctx, body = self.operation(CreateVaultInput)
        result = services.vault_create(ctx, data=body["itemData"])
        return _answer(request, {"newVault": vault_identifiers(result.vault)}, result, status_code=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="updateRepaymentDestinationsWhitelist", summary="Update Repayment Destinations Whitelist",
        description="Adds (ADD) or removes (REMOVE) one destination of the vault's onchain whitelist, signed by the vault's admin." + PROGRAM_RULES,
        request=UpdateWhitelistInput, responses=api_responses({200: UpdateWhitelistOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def update_whitelist(self, request):
        ctx, body = self.operation(UpdateWhitelistInput)
        data = body["itemData"]
        result = services.vault_update_whitelist(ctx, vault=self._vault(data), action=data["action"], destination=data["destination"], admin=data.get("admin"))
        return _answer(request, {"updatedVault": vault_identifiers(result.vault), "destination": result.destination.identifiers}, result)

    @extend_schema(
        operation_id="loanRepayment", summary="Loan Repayment",
        description=(
            "Moves value out of the vault to a whitelisted destination: the program checks the whitelist, the mint and the admin's signature and signs "
            "the token transfer with the vault authority PDA. Each repayment carries the vault's next sequence (replays fail on chain). The vault "
            "position's tokenDebitApiKeys (403 DEBIT_NOT_ALLOWED) and tokenDebitLimits apply: over a limit it is held PENDING_APPROVAL. One change of a "
            "vault at a time (409 OPERATION_IN_PROGRESS)." + PROGRAM_RULES
        ),
        request=RepaymentInput, responses=api_responses({200: RepaymentOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def repayment(self, request):
        ctx, body = self.operation(RepaymentInput)
        data = body["itemData"]
        result = services.vault_repayment(ctx, vault=self._vault(data), destination=data["destination"], value=data["value"], admin=data.get("admin"))
        return _answer(request, {"vault": vault_identifiers(result.vault), "destination": result.destination.identifiers, "sequence": result.sequence}, result)

    @extend_schema(
        operation_id="closeLoanRemittanceVault", summary="Close Loan Remittance Vault",
        description=(
            "Closes the vault's token account and whitelist, their rent to refundDestination, signed by the admin. Preconditions (the program's): "
            "an empty whitelist (PROGRAM_ERROR WhitelistNotEmpty) and a zero balance (PROGRAM_ERROR VaultNotEmpty). CLOSED on confirmation, its position "
            "INACTIVE; the pair can be opened again." + PROGRAM_RULES
        ),
        request=CloseVaultInput, responses=api_responses({200: CloseVaultOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG,
    )
    @idempotent
    def close_vault(self, request):
        ctx, body = self.operation(CloseVaultInput)
        data = body["itemData"]
        result = services.vault_close(ctx, vault=self._vault(data), refund=data.get("refundDestination"), admin=data.get("admin"))
        return _answer(request, {"closedVault": vault_identifiers(result.vault)}, result)

    @extend_schema(
        operation_id="fetchVaultDetails", summary="Fetch Vault Details",
        description="Creates no transaction. The vault (onchainId: its token account; offchainId) and the vault authority of a loan and payment instrument pair, with the rest of the record.",
        request=VaultDetailsInput, responses=api_responses({200: VaultOutput}), parameters=operation_parameters(), tags=TAG,
    )
    def vault_details(self, request):
        lookup = validated(VaultDetailsInput, request)["itemData"]
        return Response(selectors.vault_details(tenant=self.tenant, cluster=self.cluster, lookup=lookup))
