"""Reads of the accounts area, scoped to the acting tenant."""

from __future__ import annotations

from types import SimpleNamespace

from django.db.models import QuerySet

from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant
from transactions.models import PlatformFeePayer

from .lookup import display_account, for_display
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


def account_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> Account:
    return display_account(tenant, cluster, lookup, field=field)


#: Columns the renderers read (accounts/render.py); the page is read as rows, not models:
#: instantiating 100 wide Account objects costs more than the query itself.
DISPLAY_COLUMNS = (
    "address", "offchain_id", "type", "code", "al_id", "organization_external_id", "account_number", "name",
    "lamports_balance", "token_balance", "token_decimals", "managed", "status", "private_key_location", "is_derived",
    "comments", "subscribe_to_network_events", "shared_across_tenants", "was_onchain_already", "can_pay_fees",
    "global_fee_payer_for_orgs", "network_currency_debit_api_keys", "token_debit_api_keys", "domain",
    "last_transaction_at", "creation_transaction_at", "orgs_allowed_to_sign", "data_length",
    "network_currency_debit_limits", "token_debit_limits",
    "tenant_external_id", "last_tx_signature", "last_tx_offchain", "creation_tx_signature", "creation_tx_offchain",
)


def account_list(*, queryset: QuerySet, cluster: str, item_query: dict | None) -> tuple[list[SimpleNamespace], int]:
    """A page of ``queryset`` (the view's get_queryset(): scoped to the acting tenant)."""
    scoped_tenant(queryset)
    queryset = queryset.filter(cluster=cluster)
    page, count = apply_item_query(queryset, item_query, ACCOUNT_QUERY, present=for_display)
    return [SimpleNamespace(**row) for row in page.values(*DISPLAY_COLUMNS)], count


def balance_at(*, account: Account, at) -> int:
    snapshot = BalanceSnapshot.objects.filter(account=account, at__lte=at).order_by("-at", "-pk").first()
    return int(snapshot.lamports) if snapshot is not None else 0


def tenant_own_addresses(*, tenant, cluster: str, candidates: set[str]) -> set[str]:
    """Which of ``candidates`` are addresses of ``tenant``'s account records on
    ``cluster``, never a platform fee payer: what a failed simulation may name to its
    caller (chain/errors.py, ``caller_accounts``)."""
    own = set(Account.objects.for_tenant(tenant).filter(cluster=cluster, address__in=candidates).values_list("address", flat=True))
    return own - set(PlatformFeePayer.objects.values_list("managed_key__public_key", flat=True))
