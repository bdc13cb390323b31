"""Reads of the financial instruments area, scoped to the acting tenant."""

from __future__ import annotations

from types import SimpleNamespace

from django.db.models import F, QuerySet

from accounts.models import Account
from accounts.selectors import DISPLAY_COLUMNS, for_display
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant

from .lookup import resolve_instrument
from .models import AUTHORITY_ROLES, FinancialInstrument, authority_column

_TEXT_NULL = {"nullable": True, "blank_is_null": True}


def _authority_fields() -> dict[str, QueryField]:
    fields = {}
    for role in AUTHORITY_ROLES:
        column = authority_column(role)
        fields[f"{role}AuthorityOnchainId"] = QueryField("ONCHAIN_ADDRESS_ID", f"{column}_address", **_TEXT_NULL)
        # The spec spells the update role's offchain field "udpate"; kept, with the right spelling as an alias.
        name = "udpateAuthorityOffchainId" if role == "update" else f"{role}AuthorityOffchainId"
        fields[name] = QueryField("OFFCHAIN_ID", f"{column}__offchain_id")
    return fields


#: Fetch Financial Instruments fieldNames (spec table; docs/instruments.md): all filter and sort.
INSTRUMENT_QUERY = QuerySpec(
    fields={
        "managed": QueryField("BOOLEAN", "managed"),
        "version": QueryField("TEXT", "version"),
        "alId": QueryField("TEXT", "al_id"),
        "offchainReferenceName": QueryField("TEXT", "mint_account__name", **_TEXT_NULL),
        "lastTransactionAt": QueryField("TIMESTAMP", "last_transaction_at", nullable=True),
        "creationTransactionAt": QueryField("TIMESTAMP", "creation_transaction_at", nullable=True),
        "wasAlreadyOnchain": QueryField("BOOLEAN", "was_onchain_already"),
        "sharedAccrossTenants": QueryField("BOOLEAN", "shared_across_tenants"),
        "comments": QueryField("TEXT", "comments", **_TEXT_NULL),
        "tenantOrganizationId": QueryField("TEXT", "tenant__external_id"),
        "defaultPositionState": QueryField("TEXT", "default_position_state", nullable=True),
        "paused": QueryField("BOOLEAN", "paused", nullable=True),
        "transferHookProgramOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "transfer_hook_program_address", **_TEXT_NULL),
        "transferHookProgramOffchainId": QueryField("OFFCHAIN_ID", "transfer_hook_program__offchain_id"),
        **_authority_fields(),
        # Added (docs/instruments.md): the mint itself, status, symbol.
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "status": QueryField("TEXT", "status"),
        "symbol": QueryField("TEXT", "symbol", **_TEXT_NULL),
    },
    default_sort=(("managed", "DESC"), ("version", "DESC")),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
    aliases={"updateAuthorityOffchainId": "udpateAuthorityOffchainId", "sharedAcrossTenants": "sharedAccrossTenants"},
)

#: What the renderers read (render.py): rows, not models, and no column a page never shows.
DETAILED_COLUMNS = (
    "id", "offchain_id", "address", "mint_account_id", "version", "status", "managed", "was_onchain_already", "shared_across_tenants",
    "al_id", "al_category", "al_type", "name", "symbol", "uri", "decimals", "onchain_metadata", "offchain_data", "extensions",
    "default_position_state", "paused", "scaled_ui_multiplier", "transfer_hook_program_address", "supply_onchain", "supply_offchain",
    "data_length", "comments", "creation_transaction_at", "last_transaction_at",
    *(f"{authority_column(role)}{suffix}" for role in AUTHORITY_ROLES for suffix in ("_id", "_address")),
    "tenant_external_id", "last_tx_signature", "last_tx_offchain", "creation_tx_signature", "creation_tx_offchain", "transfer_hook_program_offchain_id")


def _present(queryset: QuerySet) -> QuerySet:
    # The same owner and transaction columns as account responses (same FK names).
    return for_display(queryset).annotate(transfer_hook_program_offchain_id=F("transfer_hook_program__offchain_id"))


#: The columns of the smaller detail levels (render.instrument_compact / _identifiers).
COMPACT_COLUMNS = ("address", "offchain_id", "al_id", "version", "symbol", "name", "decimals", "status", "managed", "paused", "tenant_external_id")
IDENTIFIER_COLUMNS = ("address", "offchain_id")


def _present_compact(queryset: QuerySet) -> QuerySet:
    return queryset.annotate(tenant_external_id=F("tenant__external_id"))


def rows(queryset: QuerySet, columns: tuple[str, ...] = DETAILED_COLUMNS) -> list[SimpleNamespace]:
    return [SimpleNamespace(**row) for row in queryset.values(*columns)]


def related_accounts(items: list[SimpleNamespace], *, tenant) -> dict[int, SimpleNamespace]:
    """The mint and authority account records of ``items`` that ``tenant`` may see, ready
    for the account renderer (one query for a whole page). A shared instrument's authority
    accounts that are not themselves shared then show as addresses only."""
    ids = set()
    for item in items:
        ids.add(item.mint_account_id)
        ids.update(getattr(item, f"{authority_column(role)}_id") for role in AUTHORITY_ROLES)
    ids.discard(None)
    if not ids:
        return {}
    return {row["id"]: SimpleNamespace(**row) for row in for_display(Account.objects.visible_to(tenant).filter(pk__in=ids)).values("id", *DISPLAY_COLUMNS)}


def instrument_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> SimpleNamespace:
    instrument = resolve_instrument(tenant, cluster, lookup, field=field)
    return rows(_present(FinancialInstrument.objects.visible_to(tenant).filter(pk=instrument.pk)))[0]


def instrument_list(*, queryset: QuerySet, cluster: str, item_query: dict | None, columns: tuple[str, ...] = DETAILED_COLUMNS) -> tuple[list[SimpleNamespace], int]:
    """A page of ``queryset`` (the view's get_queryset(): the tenant's instruments) as rows
    of ``columns`` (fewer columns, less work: converting ~60 columns of 100 rows costs more
    than the query)."""
    scoped_tenant(queryset)
    queryset = queryset.filter(cluster=cluster)
    if columns == IDENTIFIER_COLUMNS:
        present = None
    elif columns == COMPACT_COLUMNS:
        present = _present_compact
    else:
        present = _present
    page, count = apply_item_query(queryset, item_query, INSTRUMENT_QUERY, present=present)
    return rows(page, columns), count
