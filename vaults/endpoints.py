"""Loan remittance vaults' API: one declaration per operation (spec: "Loan remittance vaults";
docs/vaults.md; tenancy/endpoints.py says what a row holds): all POST under
/api/v1/platform-programs/loan-remittance/. The view set and routes are made from ``TABLE``
(vaults/urls.py)."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response

from tenancy.endpoints import Endpoint
from transactions.responses import transaction_answer

from . import selectors, services
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

TAG = ("Loan remittance vaults",)
RESULT = "svmTransactionResult"
BASE = "platform-programs/loan-remittance"
PROGRAM_RULES = (" Rules of the vault itself are the loan_vault program's: its refusal in simulation is a 400 PROGRAM_ERROR naming the program's error "
                 "(docs/vaults.md, \"Errors\"); nothing is recorded then.")
_V = "VaultViewSet"


def _answer(door, body: dict, result, *, status_code: int = status.HTTP_200_OK):
    """``{…identifiers, svmTransactionResult}``."""
    return transaction_answer(door.request, body, result.transaction, status=status_code, key=RESULT)


def _vault(door, data: dict):
    return selectors.vault_get(tenant=door.tenant, cluster=door.cluster, lookup=data["vault"], field="itemData.vault")


def _create(door, ctx, body):
    result = services.vault_create(ctx, data=body["itemData"])
    return _answer(door, {"newVault": vault_identifiers(result.vault)}, result, status_code=status.HTTP_201_CREATED)


def _update_whitelist(door, ctx, body):
    data = body["itemData"]
    result = services.vault_update_whitelist(ctx, vault=_vault(door, data), action=data["action"], destination=data["destination"], admin=data.get("admin"))
    return _answer(door, {"updatedVault": vault_identifiers(result.vault), "destination": result.destination.identifiers}, result)


def _repayment(door, ctx, body):
    data = body["itemData"]
    result = services.vault_repayment(ctx, vault=_vault(door, data), destination=data["destination"], value=data["value"], admin=data.get("admin"))
    return _answer(door, {"vault": vault_identifiers(result.vault), "destination": result.destination.identifiers, "sequence": result.sequence}, result)


def _close(door, ctx, body):
    data = body["itemData"]
    result = services.vault_close(ctx, vault=_vault(door, data), refund=data.get("refundDestination"), admin=data.get("admin"))
    return _answer(door, {"closedVault": vault_identifiers(result.vault)}, result)


def _details(door, ctx, body):
    return Response(selectors.vault_details(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"]))


TABLE: tuple[Endpoint, ...] = (
    Endpoint(_V, "create_vault", f"{BASE}/create-vault", "post", "vault-create", "createLoanRemittanceVault", "Create Loan Remittance Vault",
             "Creates the vault of a (loan, payment instrument) pair on chain — the vault authority PDA, its token account of the payment instrument "
             "and the program-owned whitelist, with the admin recorded — signed by the loan mint's mint authority; its rent from svmTransactionConfig.feePayer "
             "(never the platform fee payer: 400 FUNDING_ACCOUNT_REQUIRED). Offchain: a FUNDS_TOKEN_ACCOUNT position representing the vault, PENDING until "
             "the transaction confirms. 409 VAULT_EXISTS when the organization has a live vault for the pair." + PROGRAM_RULES,
             CreateVaultInput, _create, {201: CreateVaultOutput}, wait=True, tags=TAG),
    Endpoint(_V, "update_whitelist", f"{BASE}/update-whitelist", "post", "vault-update-whitelist", "updateRepaymentDestinationsWhitelist",
             "Update Repayment Destinations Whitelist",
             "Adds (ADD) or removes (REMOVE) one destination of the vault's onchain whitelist, signed by the vault's admin." + PROGRAM_RULES,
             UpdateWhitelistInput, _update_whitelist, {200: UpdateWhitelistOutput}, wait=True, tags=TAG),
    Endpoint(_V, "repayment", f"{BASE}/repayment", "post", "vault-repayment", "loanRepayment", "Loan Repayment",
             "Moves value out of the vault to a whitelisted destination: the program checks the whitelist, the mint and the admin's signature and signs "
             "the token transfer with the vault authority PDA. Each repayment carries the vault's next sequence (replays fail on chain). The vault "
             "position's tokenDebitApiKeys (403 DEBIT_NOT_ALLOWED) and tokenDebitLimits apply: over a limit it is held PENDING_APPROVAL. One change of a "
             "vault at a time (409 OPERATION_IN_PROGRESS)." + PROGRAM_RULES,
             RepaymentInput, _repayment, {200: RepaymentOutput}, wait=True, tags=TAG),
    Endpoint(_V, "close_vault", f"{BASE}/close-vault", "post", "vault-close", "closeLoanRemittanceVault", "Close Loan Remittance Vault",
             "Closes the vault's token account and whitelist, their rent to refundDestination, signed by the admin. Preconditions (the program's): "
             "an empty whitelist (PROGRAM_ERROR WhitelistNotEmpty) and a zero balance (PROGRAM_ERROR VaultNotEmpty). CLOSED on confirmation, its position "
             "INACTIVE; the pair can be opened again." + PROGRAM_RULES,
             CloseVaultInput, _close, {200: CloseVaultOutput}, wait=True, tags=TAG),
    Endpoint(_V, "vault_details", f"{BASE}/vault-details", "post", "vault-details", "fetchVaultDetails", "Fetch Vault Details",
             "Creates no transaction. The vault (onchainId: its token account; offchainId) and the vault authority of a loan and payment instrument pair, with the rest of the record.",
             VaultDetailsInput, _details, {200: VaultOutput}, mutation=False, tags=TAG),
)
