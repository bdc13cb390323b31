"""Effects of a batch payout's transactions (docs/positions.md, "Batch payouts"): positions
a confirmed transaction created, and a packed transaction that FAILED sends its items again,
each alone (positions/batch_retries.py, ``batch_retry``)."""

from __future__ import annotations

from transactions.effects import ConfirmationFacts, effect_handler, failure_handler
from transactions.models import TransactionStatus

from . import operations
from .batch_retries import retry_on_commit
from .effects import positions_created, positions_not_created
from .models import Batch, BatchItem, BatchItemStatus, Position


def _created(tx) -> list[Position]:
    ids = tx.effects.get("created") or []
    return list(Position.unscoped.filter(offchain_id__in=ids)) if ids else []


@effect_handler(operations.TRANSFER_BATCH)
def batch_transferred(tx, facts: ConfirmationFacts) -> None:
    positions_created(tx, _created(tx))


@failure_handler(operations.TRANSFER_NETWORK_CURRENCY_BATCH)
@failure_handler(operations.TRANSFER_BATCH)
def batch_not_transferred(tx) -> None:
    """A packed transaction that FAILED — executed and failed on chain (undoing every
    instruction), or refused by the first send's preflight (final: nothing else was ever
    sent, transactions/settlement.py) — sends its items again, each alone; an expired or
    cancelled one, or an item alone, ends as its transaction did."""
    positions_not_created(tx, _created(tx))
    indices = (tx.effects.get("batch") or {}).get("items") or []
    if tx.status == TransactionStatus.FAILED and len(indices) > 1:
        rows = BatchItem.objects.filter(transaction=tx, status=BatchItemStatus.SENT)
        batch_ids = set(rows.values_list("batch_id", flat=True))
        rows.update(status=BatchItemStatus.RETRY_DUE, transaction=None)
        for batch in Batch.unscoped.filter(pk__in=batch_ids):
            retry_on_commit(batch)


