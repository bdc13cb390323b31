"""Data source lookups (docs/marketdata.md, "Lookups"): ``onchainId`` (the feed account)
and/or ``offchainId``; both given must name the same source (404 CONFLICTING_LOOKUP, as
every lookup whose fields disagree). Only the acting organization's own sources: another's
answers like a missing one (404)."""

from __future__ import annotations

from accounts.lookup import single_match
from ledger_project.api.errors import LedgerError, NotFoundError

from .models import OnchainDataSource

RELATED = ("instrument", "authority_account", "authority_account__managed_key", "authority_key", "schedule", "schedule__interval",
           "last_evaluation", "last_evaluation__transaction", "creation_transaction", "last_transaction", "pending_transaction")


def sources_of(tenant, cluster: str):
    return OnchainDataSource.objects.for_tenant(tenant).filter(cluster=cluster)


def resolve_data_source(tenant, cluster: str, lookup: dict | None, *, field: str) -> OnchainDataSource:
    if not isinstance(lookup, dict) or not (lookup.get("onchainId") or lookup.get("offchainId")):
        raise LedgerError("A data source is named by onchainId (its feed account) or offchainId.", field=field, code="INVALID_LOOKUP")
    sources = sources_of(tenant, cluster).select_related(*RELATED)
    matches = []
    if lookup.get("offchainId"):
        matches.append(("offchainId", sources.filter(offchain_id=lookup["offchainId"]).first()))
    if lookup.get("onchainId"):
        matches.append(("onchainId", sources.filter(address=lookup["onchainId"]).first()))
    found = single_match(matches, field)
    if found is None:
        raise NotFoundError("No such onchain data source.", field=field)
    return found
