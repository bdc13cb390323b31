"""Reads of an instrument's allow-list: decoded from the chain now, owners named by the
organization's account records where it has them."""

from __future__ import annotations

from accounts.models import Account

from ..models import FinancialInstrument
from .services import allow_list_identifiers, read_for

DEFAULT_LIMIT = 100


def allow_list_page(*, tenant, instrument: FinancialInstrument, page: dict | None, field: str) -> dict:
    listed = read_for(instrument, field)
    page = page or {}
    skip, limit = page.get("skip") or 0, page.get("limit") or DEFAULT_LIMIT
    owners = [str(o) for o in listed.owners]
    shown = owners[skip:skip + limit]
    authority = str(listed.decoded.authority) if listed.decoded is not None else None
    # One query for the page and the authority; records of other organizations stay unnamed.
    named = dict(Account.objects.for_tenant(tenant).filter(cluster=instrument.cluster, address__in=[*shown, *([authority] if authority else [])]).values_list("address", "offchain_id"))

    def address(a: str) -> dict:
        return {"onchainId": a, "offchainId": str(named[a]) if a in named else None}

    return {
        "allowList": allow_list_identifiers(instrument, str(listed.address)),
        "initialized": listed.decoded is not None,
        "authority": address(authority) if authority else None,
        "capacity": listed.decoded.capacity if listed.decoded is not None else None,
        "count": len(owners),
        "items": [address(a) for a in shown],
    }
