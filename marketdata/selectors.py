"""Reads of the market data area: always the acting organization's own data sources."""

from __future__ import annotations

from django.db.models import QuerySet

from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant

from . import onchain, render
from .lookup import RELATED, resolve_data_source
from .models import OnchainDataSource

_TEXT_NULL = {"nullable": True, "blank_is_null": True}

#: Fetch Oracle Data Sources fieldNames (docs/marketdata.md): every one filters and sorts.
DATA_SOURCE_QUERY = QuerySpec(
    fields={
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "status": QueryField("TEXT", "status"),
        "kind": QueryField("TEXT", "data_kind"),
        "partnerOracleKind": QueryField("TEXT", "oracle_kind"),
        "ratingProvider": QueryField("TEXT", "rating_provider", **_TEXT_NULL),
        "financialInstrumentOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "instrument__address"),
        "financialInstrumentOffchainId": QueryField("OFFCHAIN_ID", "instrument__offchain_id"),
        "financialInstrumentAlId": QueryField("TEXT", "instrument__al_id", **_TEXT_NULL),
        "authorityOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "authority_address"),
        "authorityOffchainId": QueryField("OFFCHAIN_ID", "authority_account__offchain_id", nullable=True),
        "lastUpdateAt": QueryField("TIMESTAMP", "onchain_updated_at", nullable=True),
        "round": QueryField("NUMBER", "onchain_round"),
        "lastEvaluationAt": QueryField("TIMESTAMP", "last_evaluation__finished_at", nullable=True),
        "lastEvaluationStatus": QueryField("TEXT", "last_evaluation__status", nullable=True),
        "wasAlreadyOnchain": QueryField("BOOLEAN", "was_onchain_already"),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
    },
    default_sort=(("createdAt", "DESC"),),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
)


def data_source_get(*, tenant, cluster: str, lookup: dict, field: str = "onchain_data_source") -> OnchainDataSource:
    return resolve_data_source(tenant, cluster, lookup, field=field)


def data_source_details(*, tenant, cluster: str, lookup: dict, field: str = "onchain_data_source") -> dict:
    """Fetch Onchain Data Source Details: the source, the feed read from the chain now and
    the last evaluation next to it. A source whose feed does not exist (yet) shows null."""
    source = resolve_data_source(tenant, cluster, lookup, field=field)
    state, slot = onchain.read_feed(cluster, source.address, source.program_address)
    return render.detailed(source, live=render.live_feed(source, state, slot))


def data_source_list(*, queryset: QuerySet, cluster: str, item_query: dict | None) -> tuple[list[OnchainDataSource], int]:
    """A page of ``queryset`` (the view's get_queryset(): the tenant's own sources)."""
    scoped_tenant(queryset, own=True)
    page, count = apply_item_query(queryset.filter(cluster=cluster), item_query, DATA_SOURCE_QUERY, present=lambda q: q.select_related(*RELATED))
    return list(page), count
