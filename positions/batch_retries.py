"""Batch items built again alone, by the worker (docs/positions.md, "Batch payouts": a pack
that could not be recorded, a packed transaction that FAILED): ``batch_retry`` for one
batch, ``batch_retry_due`` for the sweep, ``retry_on_commit`` to queue one.

A retry acts as the key that created the batch, as the request did: its operation context
(tenancy/context.py) names that key, and the engine checks it where it signs (a key another
organization shares signs only under its debit API keys), as for the request.
A batch whose key was revoked since (or whose organization was deactivated, or whose key
is gone) builds nothing more: its due items end REJECTED, ``API_KEY_REVOKED``.
"""

from __future__ import annotations

import logging

from django.db import transaction as db_transaction

from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from tenancy.models import ApiKey

from .batches import _Context, _Item, _kinds, _Pack
from .models import Batch, BatchItem, BatchItemStatus

logger = logging.getLogger("ledger.positions")

REVOKED = {"code": "API_KEY_REVOKED", "message": "The API key that created this batch was revoked before the item could be built again; it was not sent. Send it again with an active key."}


def retry_on_commit(batch: Batch) -> None:
    from .tasks import batch_retry

    def kick() -> None:
        try:
            batch_retry.delay(batch_pk=batch.pk)
        except Exception:  # noqa: BLE001 - a broker outage: batch_retry_sweep finds it later
            logger.warning("could not queue the retry of batch %s", batch.offchain_id, exc_info=True)

    db_transaction.on_commit(kick)


def _key_active(batch: Batch) -> bool:
    """Read now, not with the batch: a key revoked while earlier items were retried stops
    the later ones."""
    return batch.created_by_key_id is not None and ApiKey.objects.filter(pk=batch.created_by_key_id, is_active=True, organization__is_active=True).exists()


def batch_retry(*, batch_pk: int) -> int:
    """Build every RETRY_DUE item of the batch again, alone (worker), as the batch's key.
    Each commits on its own, under the item row's lock: a second run finds nothing left to
    do. Returns how many items it settled."""
    batch = Batch.unscoped.select_related("tenant", "created_by_key").get(pk=batch_pk)
    due = list(BatchItem.objects.filter(batch=batch, status=BatchItemStatus.RETRY_DUE).order_by("index").values_list("pk", "index", "data"))
    for pk, index, data in due:
        _retry_item(batch, pk, _Item(index, data))
    return len(due)


def _retry_item(batch: Batch, pk: int, item: _Item) -> None:
    ops = _kinds()[batch.kind]
    ctx = _Context(OperationContext(tenant=batch.tenant, cluster=batch.cluster, api_key=batch.created_by_key, svm_config=batch.svm_config))
    packs: list[_Pack] = []
    if not _key_active(batch):
        item.errors, item.http_status = [{**REVOKED, "field": item.field}], 401
    else:
        ops.read(ctx, item)
        if item.errors is None and ops.check_all is not None:
            ops.check_all(ctx, [item])
        packs = ops.build(ctx, _Pack([item], held=item.held)) if item.errors is None else []
    with write_phase(on_abort=lambda: [p.prepared.release() for p in packs]):
        row = BatchItem.objects.select_for_update().filter(pk=pk, status=BatchItemStatus.RETRY_DUE).first()
        if row is None:  # another run settled it
            for pack in packs:
                pack.prepared.release()
            return
        outcome = ops.write(ctx, batch, packs)
        status, tx = outcome.get(item.index, (BatchItemStatus.REJECTED, None))
        if status == BatchItemStatus.RETRY_DUE:  # alone and still not recordable: say so, do not loop
            status = BatchItemStatus.REJECTED
            item.errors, item.http_status = [{"code": "BATCH_ITEM_NOT_RECORDED", "message": "The item could not be recorded alone; send it again.", "field": item.field}], 409
        row.status, row.transaction = status, tx
        row.errors, row.http_status = (item.errors, item.http_status) if status == BatchItemStatus.REJECTED else (None, None)
        row.result = ops.result(item) if status == BatchItemStatus.SENT else row.result
        row.save(update_fields=["status", "transaction", "errors", "http_status", "result"])


def batch_retry_due() -> list[int]:
    """Batches with items waiting for a retry (the sweep: a worker killed mid-retry, a
    broker that was down when the failure was recorded)."""
    return sorted(set(BatchItem.objects.filter(status=BatchItemStatus.RETRY_DUE).values_list("batch_id", flat=True)))
