"""Blockchain accounts' API: one declaration per operation (spec: Blockchain accounts 1-8, and
the durable nonce accounts of Blockchain transactions; tenancy/endpoints.py says what a row
holds). The view sets and routes are made from ``TABLE`` (accounts/urls.py); threshold keys'
sessions are accounts/mpc/endpoints.py's."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response
from solders.pubkey import Pubkey

from chain.rpc import rpc_for
from ledger_project.timestamps import timestamp_text
from tenancy.endpoints import Endpoint, bulk_fetch
from transactions.responses import attach_wait_all, mutation_response, transaction_result

from . import nonces, render, selectors, services
from .lookup import resolve_account, resolve_own_account
from .models import AccountType
from .mpc.keygen_plan import has_dkg_keys
from .mpc.endpoints import create_account_response
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

TAG = ("Blockchain accounts",)
NONCE_TAG = ("Blockchain transactions",)
_A, _N = "AccountViewSet", "DurableNonceAccountViewSet"


def _create(door, ctx, body):
    if has_dkg_keys(body["itemData"]):  # a threshold key: key generation among its players (accounts/mpc)
        return create_account_response(ctx, body)
    result = services.account_create(ctx, data=body["itemData"])
    return mutation_response(door.request, "newAccount", render.account_identifiers(result.account), result.transaction, status=status.HTTP_201_CREATED)


def _details(door, ctx, body):
    return Response(render.account_detailed(selectors.account_get(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"])))


def _private_key(door, ctx, body):
    account = resolve_own_account(door.tenant, door.cluster, body["itemData"], field="itemData")
    secret = services.account_private_key_export(tenant=door.tenant, api_key=door.api_key, account=account, request_id=door.request.request_id)
    response = Response({**render.account_identifiers(account), "privateKey": secret, "encoding": "base58"})
    response["Cache-Control"] = "no-store"
    return response


def _balance(door, ctx, body):
    data = body["itemData"]
    account = selectors.account_get(tenant=door.tenant, cluster=door.cluster, lookup=data["account"], field="itemData.account")
    at = data.get("at")
    if at is not None:
        offchain, onchain = selectors.balance_at(account=account, at=at), None
    else:
        chain_account = rpc_for(door.cluster).account(Pubkey.from_string(account.address))
        offchain, onchain = int(account.lamports_balance), value_output(chain_account.lamports if chain_account else 0)
    return Response({"account": render.account_identifiers(account), "at": timestamp_text(at), "offchain": value_output(offchain), "onchain": onchain})


def _update(door, ctx, body):
    data = body["itemData"]
    raw = door.request.data.get("itemData") or {}
    changes = {k: v for k, v in data.items() if k in raw and k != "account"}
    if "offchainReferences" in changes:
        changes["offchainReferences"] = {k: v for k, v in changes["offchainReferences"].items() if k in (raw.get("offchainReferences") or {})}
    account = resolve_own_account(door.tenant, door.cluster, data["account"], field="itemData.account")
    account = services.account_update(ctx, account=account, changes=changes)
    return Response({"updatedAccount": render.account_identifiers(account)})


def _inactivate(door, ctx, body):
    data = body["itemData"]
    account = resolve_own_account(door.tenant, door.cluster, data["account"], field="itemData.account")
    refund = None
    if data.get("refundDestination"):
        refund = resolve_account(door.tenant, door.cluster, data["refundDestination"], field="itemData.refundDestination", allow_off_platform=True)
    result = services.account_inactivate(ctx, account=account, refund_to=refund)
    return mutation_response(door.request, "inactivatedAccount", render.account_identifiers(result.account), result.transaction)


def _tenant_info(door, ctx, body):
    account = selectors.account_get(tenant=door.tenant, cluster=door.cluster, lookup=body["itemData"])
    return Response({
        **render.account_identifiers(account),
        "tenantOrganizationId": account.tenant.external_id,
        "tenantOrganizationName": account.tenant.name,
        "sharedAcrossTenants": account.shared_across_tenants,
        "managed": account.managed,
        "isOwnOrganization": account.tenant_id == door.tenant.pk,
    })


# --- durable nonce accounts (docs/transactions.md, "Tenant durable nonce accounts") -----------


def _nonces_create(door, ctx, body):
    created = nonces.durable_nonce_accounts_create(ctx, data=body["itemData"])
    response = Response({
        "newDurableNonceAccounts": [render.account_identifiers(a) for a in created.accounts],
        "svmTransactions": [transaction_result(tx) for tx in created.transactions],
    }, status=status.HTTP_201_CREATED)
    attach_wait_all(response, door.request, created.transactions)
    return response


def _nonce_details(door, ctx, body):
    lookup = body["itemData"]["durableNonceAccount"]
    return Response(DurableNonceAccountOutput(nonces.nonce_account_get(queryset=door.get_queryset(), cluster=door.cluster, lookup=lookup)).data)


_NONCE_OUTPUTS = {"detailed": DurableNonceAccountOutput, "compact": DurableNonceAccountCompactOutput, "identifiers": DurableNonceAccountIdentifiersOutput}


def _nonce_page(door, body, detail_level: str):
    rows, count = nonces.nonce_account_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=body.get("itemQuery"), read_nonces=detail_level == "detailed")
    return Response({"count": count, "items": _NONCE_OUTPUTS[detail_level](rows, many=True).data})


def _nonce_accounts_only(self, queryset):
    return queryset.filter(type=AccountType.NONCE)


VIEWSET_DOCS = {
    _N: "Create Durable Nonce Accounts, Fetch Durable Nonce Account(s): the acting organization's own nonce accounts (Account records of type NONCE).",
}
MEMBERS = {_N: {"scoped_queryset": _nonce_accounts_only}}

TABLE: tuple[Endpoint, ...] = (
    Endpoint(_A, "create", "accounts", "post", "accounts", "createAccount", "Create Account", None,
             CreateAccountInput, _create, {201: CreateAccountOutput}, wait=True, tags=TAG),
    Endpoint(_A, "update", "accounts", "patch", "accounts", "updateAccount", "Update Account", "Patch semantics: only fields present change.",
             UpdateAccountInput, _update, {200: UpdateAccountOutput}, tags=TAG),
    Endpoint(_A, "details", "accounts/single", "post", "account-details", "fetchAccountDetails", "Fetch Account Details", "Creates no transaction.",
             LookupInput, _details, {200: AccountOutput}, mutation=False, tags=TAG),
    Endpoint(_A, "private_key", "accounts/single/private-key", "post", "account-private-key", "fetchAccountPrivateKey", "Fetch Account Private Key",
             "Needs role PLATFORM_SENSITIVE_DATA_ACCESS; every call is audited.", OwnLookupInput, _private_key, {200: PrivateKeyOutput}, mutation=False, tags=TAG),
    Endpoint(_A, "balance", "accounts/single/balance", "post", "account-balance", "fetchAccountBalance", "Fetch Account Balance",
             "Creates no transaction. Current offchain and onchain balances, or the offchain balance at a past time (`at`).",
             BalanceInput, _balance, {200: BalanceOutput}, mutation=False, tags=TAG),
    Endpoint(_A, "tenant_info", "accounts/single/tenant-info", "post", "account-tenant-info", "fetchAccountTenantInfo", "Fetch Account Tenant Info",
             "Creates no transaction. Which organization owns an account you can see.", LookupInput, _tenant_info, {200: TenantInfoOutput}, mutation=False, tags=TAG),
    bulk_fetch(_A, "accounts/bulk", "accounts-bulk", operation_id="fetchAccounts", query=selectors.ACCOUNT_QUERY, summary="Fetch Accounts",
               input=BulkInput, page="BulkAccountsPage", outputs=(BulkAccountsOutput, BulkAccountsCompactOutput, BulkAccountsIdentifiersOutput),
               renderers=render.RENDERERS, tags=TAG,
               items=lambda door, query, level: selectors.account_list(queryset=door.get_queryset(), cluster=door.cluster, item_query=query)),
    Endpoint(_A, "inactivate", "accounts/inactivate", "patch", "account-inactivate", "inactivateAccount", "Inactivate Account",
             "Closes the account on the network (lamports to refundDestination) and inactivates it.",
             InactivateInput, _inactivate, {200: InactivateAccountOutput}, wait=True, tags=TAG),
    # Durable nonce accounts are accounts of type NONCE (spec: the specialized endpoint for NONCE).
    Endpoint(_N, "create", "durable-nonce-accounts", "post", "durable-nonce-accounts", "createDurableNonceAccounts", "Create Durable Nonce Accounts",
             "Creates `count` durable nonce accounts (1 to 20) in as few network transactions as fit. Their rent is paid by "
             "svmTransactionConfig.feePayer (400 FUNDING_ACCOUNT_REQUIRED without one). They are READY once their transaction confirms; "
             "DURABLE_NONCE transactions then use them (svmTransactionConfig.durableNonceAccount, or picked from yours first).",
             CreateDurableNonceAccountsInput, _nonces_create, {201: CreateDurableNonceAccountsOutput}, wait=True, tags=NONCE_TAG),
    Endpoint(_N, "details", "durable-nonce-accounts/single", "post", "durable-nonce-account-details", "fetchDurableNonceAccount", "Fetch Durable Nonce Account",
             "Creates no transaction. One of your durable nonce accounts, with the nonce it holds on chain now.",
             DurableNonceAccountInput, _nonce_details, {200: DurableNonceAccountOutput}, mutation=False, tags=NONCE_TAG),
    bulk_fetch(_N, "durable-nonce-accounts/bulk", "durable-nonce-accounts-bulk", operation_id="fetchDurableNonceAccounts", query=nonces.NONCE_ACCOUNT_QUERY,
               summary="Fetch Durable Nonce Accounts", input=BulkInput, page="BulkDurableNonceAccountsPage",
               outputs=(BulkDurableNonceAccountsOutput, BulkDurableNonceAccountsCompactOutput, BulkDurableNonceAccountsIdentifiersOutput), tags=NONCE_TAG,
               run=_nonce_page, description="Creates no transaction. detail-level: detailed (with each nonce read from the chain), compact, identifiers."),
)
