"""Reads of the accounts area, scoped to the acting tenant."""

from __future__ import annotations

from django.db.models import QuerySet

from ledger_project.api.query import QueryField, QuerySpec, apply_item_query

from .lookup import resolve_account
from .models import Account, BalanceSnapshot

_TEXT_NULL = {"nullable": True, "blank_is_null": True}

#: Fetch Accounts fieldNames (docs/accounts.md): every one filters and sorts.
ACCOUNT_QUERY = QuerySpec(
    fields={
        "type": QueryField("TEXT", "type"),
        "managed": QueryField("BOOLEAN", "managed"),
        "status": QueryField("TEXT", "status"),
        "alId": QueryField("TEXT", "al_id", **_TEXT_NULL),
        "code": QueryField("TEXT", "code", **_TEXT_NULL),
        "accountNumber": QueryField("TEXT", "account_number", **_TEXT_NULL),
        "organizationExternalId": QueryField("TEXT", "organization_external_id", **_TEXT_NULL),
        "offchainReferenceName": QueryField("TEXT", "name", **_TEXT_NULL),
        "comments": QueryField("TEXT", "comments", **_TEXT_NULL),
        "domain": QueryField("TEXT", "domain", **_TEXT_NULL),
        "lastTransactionAt": QueryField("TIMESTAMP", "last_transaction_at", nullable=True),
        "creationTransactionAt": QueryField("TIMESTAMP", "creation_transaction_at", nullable=True),
        "wasAlreadyOnchain": QueryField("BOOLEAN", "was_onchain_already"),
        "sharedAccrossTenants": QueryField("BOOLEAN", "shared_across_tenants"),
        "subscribeToNetworkEvents": QueryField("BOOLEAN", "subscribe_to_network_events"),
        "tenantOrganizationId": QueryField("TEXT", "tenant__external_id"),
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "lamportsBalance": QueryField("NUMBER", "lamports_balance"),
        "tokenBalance": QueryField("NUMBER", "token_balance", nullable=True),
    },
    # Newest first; "id" (insertion order) stands for creation time, which is null
    # until the creation transaction confirms.
    default_sort=(("managed", "DESC"),),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
)


def _with_relations(queryset: QuerySet) -> QuerySet:
    return queryset.select_related("tenant", "last_transaction", "creation_transaction")


def account_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> Account:
    account = resolve_account(tenant, cluster, lookup, field=field)
    return _with_relations(Account.objects.filter(pk=account.pk)).get()


def account_list(*, tenant, cluster: str, item_query: dict | None) -> tuple[list[Account], int]:
    queryset = _with_relations(Account.objects.for_tenant(tenant).filter(cluster=cluster))
    page, count = apply_item_query(queryset, item_query, ACCOUNT_QUERY)
    return list(page), count


def balance_at(*, account: Account, at) -> int:
    snapshot = BalanceSnapshot.objects.filter(account=account, at__lte=at).order_by("-at", "-pk").first()
    return int(snapshot.lamports) if snapshot is not None else 0
