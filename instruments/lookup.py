"""Lookups that name a financial instrument (same rules as accounts/lookup.py).

``onchainId`` is the mint address; ``offchainId`` the instrument's id (the mint account's
own id is accepted too); ``offchainReferences`` names it by ``alId`` or by the mint
account's ``code``. Every field given must name the same instrument (else 400
CONFLICTING_LOOKUP); nothing visible → 404.
"""

from __future__ import annotations

import uuid

from django.db.models import Q

from accounts.lookup import lookup_scope, single_match
from ledger_project.api.errors import LedgerError, NotFoundError

from .models import FinancialInstrument


def resolve_instrument(tenant, cluster: str, lookup: dict | None, *, field: str, writable: bool = False) -> FinancialInstrument:
    if lookup is None:
        raise LedgerError("A lookup is required.", field=field, code="REQUIRED")
    onchain_id, offchain_id, refs = lookup.get("onchainId"), lookup.get("offchainId"), lookup.get("offchainReferences") or {}
    if not (onchain_id or offchain_id or refs.get("alId") or refs.get("code")):
        raise LedgerError("A lookup needs onchainId, offchainId or offchainReferences (alId or code).", field=field, code="INVALID_LOOKUP")
    # Unordered (own records first is sorted below): an ORDER BY makes Django hash every
    # selected column while compiling (positions/lookup.py).
    queryset = lookup_scope(FinancialInstrument, tenant, cluster, lookup, field, writable).select_related("mint_account", "tenant").order_by()
    conditions = []
    if onchain_id:
        conditions.append(("onchainId", Q(address=onchain_id)))
    if offchain_id:
        value = uuid.UUID(str(offchain_id))
        conditions.append(("offchainId", Q(offchain_id=value) | Q(mint_account__offchain_id=value)))
    if refs.get("alId"):
        conditions.append(("offchainReferences", Q(al_id=refs["alId"])))
    elif refs.get("code"):
        conditions.append(("offchainReferences", Q(mint_account__code=refs["code"])))
    matches = []
    for name, condition in conditions:
        rows = sorted(queryset.filter(condition)[:2], key=lambda i: i.tenant_id != tenant.pk)  # own records first
        matches.append((name, rows[0] if rows else None))
    instrument = single_match(matches, field)
    if instrument is None:
        raise NotFoundError("No such financial instrument.", field=field)
    return instrument
