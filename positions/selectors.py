"""Reads of the positions area, scoped to the acting tenant."""

from __future__ import annotations

from accounts.models import Account
from accounts.selectors import for_display

from .lookup import resolve_own_position
from .models import Position


def with_display_accounts(positions: list[Position], *, tenant) -> list[Position]:
    """Attach the token account and owner records as responses show them (for_display
    annotations), in one query for a whole page. An owner may be another organization's
    account shared across tenants: visible_to, never unscoped."""
    ids = {pk for p in positions for pk in (p.account_id, p.owner_id)}
    rows = {a.pk: a for a in for_display(Account.objects.visible_to(tenant).filter(pk__in=ids))}
    for p in positions:
        p.account, p.owner = rows[p.account_id], rows[p.owner_id]
    return positions


def position_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> Position:
    position = resolve_own_position(tenant, cluster, lookup, field=field)
    return with_display_accounts([position], tenant=tenant)[0]
