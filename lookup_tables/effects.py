"""What a lookup-table transaction changes offchain once it settles (transactions/effects.py).

Confirmed: the row copies the table as the chain holds it — read by the confirmation
prefetch after the transaction confirmed (``needs_accounts``), never what the request asked
for — so ``addresses`` lists only addresses already on chain. The state follows the chain
too (an authority → ACTIVE, none → FROZEN, a deactivation slot → DEACTIVATED, gone →
CLOSED), and a read older than the one the row reflects (``synced_slot``) changes nothing.
Not executed (FAILED, EXPIRED, CANCELLED): a creation ends FAILED; any other change only
ends the in-flight marker.
"""

from __future__ import annotations

from django.utils import timezone

from tenancy.scoping import worker_only

from chain.lookup_tables import table_on_chain
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts
from transactions.locks import lock_rows

from . import operations
from .models import AddressLookupTable, LookupTableState

# Their own handlers end the mark with the rest of the record's update; the engine ends any left.
marks_in_flight(AddressLookupTable)

_STATES = {"ACTIVE": LookupTableState.ACTIVE, "FROZEN": LookupTableState.FROZEN, "DEACTIVATING": LookupTableState.DEACTIVATED, "DEACTIVATED": LookupTableState.DEACTIVATED}


def _address(tx) -> str | None:
    return ((tx.effects or {}).get("lookupTable") or {}).get("address")


@needs_accounts
def tables_changed(named) -> dict[int, list[str]]:
    """Each lookup-table transaction's own table (no query: the transaction names it)."""
    return {tx.pk: [_address(tx)] for tx, _ in named if tx.operation in operations.ALL and _address(tx)}


@worker_only  # effects act for no tenant: the transaction names its own row
def _row(tx) -> AddressLookupTable | None:
    rows = lock_rows(AddressLookupTable.unscoped.filter(offchain_id=tx.effects["lookupTable"]["offchainId"]))
    return rows[0] if rows else None


def table_changed(tx, facts: ConfirmationFacts) -> None:
    table = _row(tx)
    if table is None:
        return
    changed = ["last_transaction", "updated_at"]
    table.last_transaction = tx
    if table.pending_transaction_id == tx.pk:
        table.pending_transaction = None
        changed.append("pending_transaction")
    found = table_on_chain(facts.accounts.get(table.address), slot=facts.accounts_slot or 0)
    if found is None:
        # Closed (by this transaction, or since: the transaction executed, so the table existed).
        table.state, table.closed_at = LookupTableState.CLOSED, tx.confirmed_at or timezone.now()
        changed += ["state", "closed_at"]
    elif facts.accounts_slot is None or table.synced_slot is None or facts.accounts_slot >= table.synced_slot:
        table.addresses, table.addresses_count = list(found.addresses), len(found.addresses)
        table.last_extended_slot, table.last_extended_start_index = found.last_extended_slot, found.last_extended_start_index
        table.deactivation_slot, table.synced_slot = found.deactivation_slot, facts.accounts_slot
        table.state = _STATES[found.status]
        changed += ["addresses", "addresses_count", "last_extended_slot", "last_extended_start_index", "deactivation_slot", "synced_slot", "state"]
    table.save(update_fields=changed)


def table_change_failed(tx) -> None:
    table = _row(tx)
    if table is None:
        return
    if table.pending_transaction_id == tx.pk:
        table.pending_transaction = None
    if tx.operation == operations.CREATE and table.state == LookupTableState.CREATING:
        table.state = LookupTableState.FAILED
    table.save(update_fields=["pending_transaction", "state", "updated_at"])


for _operation in operations.ALL:
    effect_handler(_operation)(table_changed)
    failure_handler(_operation)(table_change_failed)
