"""Which of its lookup tables a tenant's V0 messages may compress through (docs/lookup-tables.md,
"Compression").

The builder (chain/builder.py ``choose_tables``) picks from the tenant's tables
the database records as usable — ACTIVE or FROZEN, with the addresses of their last
confirmed change — and reads only the ones it picks from the chain, which decides. So a
request costs no RPC for tables unless one helps its message, and no SQL while this
process's list of the tenant's tables is fresh (``LEDGER_LOOKUP_TABLE_CACHE_SECONDS``, as
the API key cache): a table confirmed in the meantime is used from the next read on.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from solders.pubkey import Pubkey

from chain.builder import MIN_KEYS_PER_TABLE, TableCandidate

from .models import LOOKUP_TABLE_USABLE, AddressLookupTable

#: The newest tables of a tenant the builder chooses from.
MAX_CANDIDATES = 64

_lock = threading.Lock()
_cache: dict[tuple[str, int], tuple[float, tuple[TableCandidate, ...]]] = {}


def tenant_tables(tenant, cluster: str) -> tuple[TableCandidate, ...]:
    """The tenant's usable tables on ``cluster`` with at least MIN_KEYS_PER_TABLE addresses,
    newest first; one query per process, tenant and cluster per cache window."""
    key = (cluster, tenant.pk)
    now = time.monotonic()
    with _lock:
        hit = _cache.get(key)
    if hit is not None and now - hit[0] < settings.LEDGER_LOOKUP_TABLE_CACHE_SECONDS:
        return hit[1]
    rows = (
        AddressLookupTable.objects.for_tenant(tenant)
        .filter(cluster=cluster, state__in=LOOKUP_TABLE_USABLE, addresses_count__gte=MIN_KEYS_PER_TABLE)
        .order_by("-pk").values_list("address", "addresses")[:MAX_CANDIDATES]
    )
    candidates = tuple(TableCandidate(Pubkey.from_string(address), frozenset(Pubkey.from_string(a) for a in addresses)) for address, addresses in rows)
    with _lock:
        _cache[key] = (now, candidates)
    return candidates


def tenant_tables_forget() -> None:
    """Drop what this process knows (tests; a process that changed a table itself need not:
    a new table becomes usable only once its creation confirms, in the worker)."""
    with _lock:
        _cache.clear()
