"""Row locks of the instruments area (transactions.locks: pk order, inside a write phase).

Order: instrument rows, then account rows (accounts.locks), then the alId sequence row
(hot, shared by every create of a kind) last."""

from __future__ import annotations

from transactions.locks import lock_rows

from .models import FinancialInstrument


def lock_instrument(pk: int, *, tenant) -> FinancialInstrument:
    return lock_rows(FinancialInstrument.objects.for_tenant(tenant).filter(pk=pk))[0]
