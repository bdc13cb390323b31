"""Blockchain accounts endpoints (spec: Blockchain accounts 1-8)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from solders.pubkey import Pubkey

from ledger_project.api.envelope import validated
from ledger_project.api.errors import LedgerError
from tenancy.idempotency import idempotent
from ledger_project.api.schema import DETAIL_LEVEL, api_responses, bulk_responses, item_query, operation_parameters
from tenancy.viewsets import TenantScopedViewSet
from ledger_project.timestamps import timestamp_text
from chain.rpc import rpc_for
from transactions.responses import attach_wait_all, mutation_response, transaction_result

from . import nonces, render, selectors, services
from .lookup import resolve_account, resolve_own_account
from .models import Account, AccountType
from .mpc.keygen_plan import has_dkg_keys
from .mpc.views import create_account_response
from .serializers import (
    AccountOutput,
    BalanceInput,
    BalanceOutput,
    BulkAccountsCompactOutput,
    BulkAccountsIdentifiersOutput,
    BulkAccountsOutput,
    BulkDurableNonceAccountsCompactOutput,
    BulkDurableNonceAccountsIdentifiersOutput,
    BulkDurableNonceAccountsOutput,
    BulkInput,
    CreateAccountInput,
    CreateAccountOutput,
    CreateDurableNonceAccountsInput,
    CreateDurableNonceAccountsOutput,
    DurableNonceAccountCompactOutput,
    DurableNonceAccountIdentifiersOutput,
    DurableNonceAccountInput,
    DurableNonceAccountOutput,
    InactivateAccountOutput,
    InactivateInput,
    LookupInput,
    OwnLookupInput,
    PrivateKeyOutput,
    TenantInfoOutput,
    UpdateAccountInput,
    UpdateAccountOutput,
    value_output,
)

TAG = ["Blockchain accounts"]



class AccountViewSet(TenantScopedViewSet):
    model = Account

    @extend_schema(operation_id="createAccount", summary="Create Account", request=CreateAccountInput, responses=api_responses({201: CreateAccountOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateAccountInput)
        if has_dkg_keys(body["itemData"]):  # a threshold key: key generation among its players (accounts/mpc)
            return create_account_response(ctx, body)
        result = services.account_create(ctx, data=body["itemData"])
        return mutation_response(request, "newAccount", render.account_identifiers(result.account), result.transaction, status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="fetchAccountDetails", summary="Fetch Account Details", description="Creates no transaction.", request=LookupInput, responses=api_responses({200: AccountOutput}), parameters=operation_parameters(), tags=TAG)
    def details(self, request):
        lookup = validated(LookupInput, request)["itemData"]
        return Response(render.account_detailed(selectors.account_get(tenant=self.tenant, cluster=self.cluster, lookup=lookup)))

    @extend_schema(operation_id="fetchAccountPrivateKey", summary="Fetch Account Private Key", description="Needs role PLATFORM_SENSITIVE_DATA_ACCESS; every call is audited.", request=OwnLookupInput, responses=api_responses({200: PrivateKeyOutput}), parameters=operation_parameters(), tags=TAG)
    def private_key(self, request):
        lookup = validated(OwnLookupInput, request)["itemData"]
        account = resolve_own_account(self.tenant, self.cluster, lookup, field="itemData")
        secret = services.account_private_key_export(tenant=self.tenant, api_key=self.api_key, account=account, request_id=request.request_id)
        response = Response({**render.account_identifiers(account), "privateKey": secret, "encoding": "base58"})
        response["Cache-Control"] = "no-store"
        return response

    @extend_schema(operation_id="fetchAccountBalance", summary="Fetch Account Balance", description="Creates no transaction. Current offchain and onchain balances, or the offchain balance at a past time (`at`).", request=BalanceInput, responses=api_responses({200: BalanceOutput}), parameters=operation_parameters(), tags=TAG)
    def balance(self, request):
        data = validated(BalanceInput, request)["itemData"]
        account = selectors.account_get(tenant=self.tenant, cluster=self.cluster, lookup=data["account"], field="itemData.account")
        at = data.get("at")
        if at is not None:
            offchain, onchain = selectors.balance_at(account=account, at=at), None
        else:
            chain_account = rpc_for(self.cluster).account(Pubkey.from_string(account.address))
            offchain, onchain = int(account.lamports_balance), value_output(chain_account.lamports if chain_account else 0)
        return Response({"account": render.account_identifiers(account), "at": timestamp_text(at), "offchain": value_output(offchain), "onchain": onchain})

    @extend_schema(operation_id=item_query("fetchAccounts", selectors.ACCOUNT_QUERY), summary="Fetch Accounts", description="Creates no transaction. detail-level: detailed, compact, identifiers.", request=BulkInput, responses=bulk_responses("BulkAccountsPage", BulkAccountsOutput, BulkAccountsCompactOutput, BulkAccountsIdentifiersOutput), parameters=[DETAIL_LEVEL, *operation_parameters()], tags=TAG)
    def bulk(self, request, detail_level: str):
        output = render.RENDERERS.get(detail_level)
        if output is None:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkInput, request)
        items, count = selectors.account_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"))
        return Response({"count": count, "items": [output(a) for a in items]})

    @extend_schema(operation_id="updateAccount", summary="Update Account", description="Patch semantics: only fields present change.", request=UpdateAccountInput, responses=api_responses({200: UpdateAccountOutput}, mutation=True), parameters=operation_parameters(), tags=TAG)
    @idempotent
    def update(self, request):
        ctx, body = self.operation(UpdateAccountInput)
        data = body["itemData"]
        raw = request.data.get("itemData") or {}
        changes = {k: v for k, v in data.items() if k in raw and k != "account"}
        if "offchainReferences" in changes:
            changes["offchainReferences"] = {k: v for k, v in changes["offchainReferences"].items() if k in (raw.get("offchainReferences") or {})}
        account = resolve_own_account(self.tenant, self.cluster, data["account"], field="itemData.account")
        account = services.account_update(ctx, account=account, changes=changes)
        return Response({"updatedAccount": render.account_identifiers(account)})

    @extend_schema(operation_id="inactivateAccount", summary="Inactivate Account", description="Closes the account on the network (lamports to refundDestination) and inactivates it.", request=InactivateInput, responses=api_responses({200: InactivateAccountOutput}, mutation=True), parameters=operation_parameters(wait=True), tags=TAG)
    @idempotent
    def inactivate(self, request):
        ctx, body = self.operation(InactivateInput)
        data = body["itemData"]
        account = resolve_own_account(self.tenant, self.cluster, data["account"], field="itemData.account")
        refund = None
        if data.get("refundDestination"):
            refund = resolve_account(self.tenant, self.cluster, data["refundDestination"], field="itemData.refundDestination", allow_off_platform=True)
        result = services.account_inactivate(ctx, account=account, refund_to=refund)
        return mutation_response(request, "inactivatedAccount", render.account_identifiers(result.account), result.transaction)

    @extend_schema(operation_id="fetchAccountTenantInfo", summary="Fetch Account Tenant Info", description="Creates no transaction. Which organization owns an account you can see.", request=LookupInput, responses=api_responses({200: TenantInfoOutput}), parameters=operation_parameters(), tags=TAG)
    def tenant_info(self, request):
        lookup = validated(LookupInput, request)["itemData"]
        account = selectors.account_get(tenant=self.tenant, cluster=self.cluster, lookup=lookup)
        return Response({
            **render.account_identifiers(account),
            "tenantOrganizationId": account.tenant.external_id,
            "tenantOrganizationName": account.tenant.name,
            "sharedAcrossTenants": account.shared_across_tenants,
            "managed": account.managed,
            "isOwnOrganization": account.tenant_id == self.tenant.pk,
        })



# --- durable nonce accounts (docs/transactions.md, "Tenant durable nonce accounts") ---------

NONCE_TAG = ["Blockchain transactions"]


class DurableNonceAccountViewSet(TenantScopedViewSet):
    """Create Durable Nonce Accounts, Fetch Durable Nonce Account(s): the acting
    organization's own nonce accounts (Account records of type NONCE)."""

    model = Account

    def scoped_queryset(self, queryset):
        return queryset.filter(type=AccountType.NONCE)

    @extend_schema(
        operation_id="createDurableNonceAccounts", summary="Create Durable Nonce Accounts",
        description=(
            "Creates `count` durable nonce accounts (1 to 20) in as few network transactions as fit. Their rent is paid by "
            "svmTransactionConfig.feePayer (400 FUNDING_ACCOUNT_REQUIRED without one). They are READY once their transaction confirms; "
            "DURABLE_NONCE transactions then use them (svmTransactionConfig.durableNonceAccount, or picked from yours first)."
        ),
        request=CreateDurableNonceAccountsInput, responses=api_responses({201: CreateDurableNonceAccountsOutput}, mutation=True),
        parameters=operation_parameters(wait=True), tags=NONCE_TAG,
    )
    @idempotent
    def create(self, request):
        ctx, body = self.operation(CreateDurableNonceAccountsInput)
        created = nonces.durable_nonce_accounts_create(ctx, data=body["itemData"])
        response = Response({
            "newDurableNonceAccounts": [render.account_identifiers(a) for a in created.accounts],
            "svmTransactions": [transaction_result(tx) for tx in created.transactions],
        }, status=status.HTTP_201_CREATED)
        attach_wait_all(response, request, created.transactions)
        return response

    @extend_schema(
        operation_id="fetchDurableNonceAccount", summary="Fetch Durable Nonce Account",
        description="Creates no transaction. One of your durable nonce accounts, with the nonce it holds on chain now.",
        request=DurableNonceAccountInput, responses=api_responses({200: DurableNonceAccountOutput}), parameters=operation_parameters(), tags=NONCE_TAG,
    )
    def details(self, request):
        lookup = validated(DurableNonceAccountInput, request)["itemData"]["durableNonceAccount"]
        return Response(DurableNonceAccountOutput(nonces.nonce_account_get(queryset=self.get_queryset(), cluster=self.cluster, lookup=lookup)).data)

    @extend_schema(
        operation_id=item_query("fetchDurableNonceAccounts", nonces.NONCE_ACCOUNT_QUERY), summary="Fetch Durable Nonce Accounts",
        description="Creates no transaction. detail-level: detailed (with each nonce read from the chain), compact, identifiers.",
        request=BulkInput, responses=bulk_responses("BulkDurableNonceAccountsPage", BulkDurableNonceAccountsOutput, BulkDurableNonceAccountsCompactOutput, BulkDurableNonceAccountsIdentifiersOutput),
        parameters=[DETAIL_LEVEL, *operation_parameters()], tags=NONCE_TAG,
    )
    def bulk(self, request, detail_level: str):
        output = {"detailed": DurableNonceAccountOutput, "compact": DurableNonceAccountCompactOutput, "identifiers": DurableNonceAccountIdentifiersOutput}.get(detail_level)
        if output is None:
            raise LedgerError("detail-level must be detailed, compact or identifiers.", field="detail-level", code="INVALID_ENUM")
        body = validated(BulkInput, request)
        rows, count = nonces.nonce_account_list(queryset=self.get_queryset(), cluster=self.cluster, item_query=body.get("itemQuery"), read_nonces=detail_level == "detailed")
        return Response({"count": count, "items": output(rows, many=True).data})
