"""Which lookup tables a tenant's V0 messages may compress through, as the engine asks it.

The lookup-table area, which stands above the engine, registers where the tenant's tables
come from (lookup_tables/apps.py, ``lookup_tables.compression.tenant_tables``); with no
source registered a message compresses only through the tables its request names.
"""

from __future__ import annotations

from typing import Callable

from chain.builder import TableCandidate

_TableSource = Callable[[object, str], tuple[TableCandidate, ...]]
_source: _TableSource | None = None


def register_table_source(source: _TableSource) -> None:
    global _source
    _source = source


def compression_tables(tenant, cluster: str) -> tuple[TableCandidate, ...]:
    """The tenant's tables on ``cluster`` the builder may choose from (newest first)."""
    return () if _source is None or tenant is None else _source(tenant, cluster)
