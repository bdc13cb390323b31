"""Reading a batch payout: Fetch Batch (docs/positions.md, "Batch payouts")."""

from __future__ import annotations

from collections import defaultdict

from ledger_project.api.shapes import renders

from .models import Batch, BatchItem, BatchItemStatus


RETRYING = "RETRYING"


def batch_get(*, tenant, cluster: str, offchain_id) -> Batch:
    """The tenant's batch; another organization's answers like a missing one (404)."""
    from ledger_project.api.errors import NotFoundError

    batch = Batch.objects.for_tenant(tenant).filter(cluster=cluster, offchain_id=offchain_id).first()
    if batch is None:
        raise NotFoundError("No batch with this offchainId.", field="itemData.batch.offchainId", code="BATCH_NOT_FOUND")
    return batch


_ITEM_FIELDS = (
    "index", "status", "http_status", "errors", "result", "transaction__offchain_id", "transaction__onchain_id", "transaction__status",
    "transaction__approval_required", "transaction__error_message", "first_transaction__offchain_id", "transaction_id", "first_transaction_id",
)


@renders("positions.serializers.BatchOutput")
def batch_render(batch: Batch) -> dict:
    """BatchOutput: the batch, its items by index (one query) and their counts by status."""
    from ledger_project.timestamps import timestamp_text

    counts: dict[str, int] = defaultdict(int)
    items = []
    for row in BatchItem.objects.filter(batch=batch).order_by("index").values_list(*_ITEM_FIELDS):
        index, status, http_status, errors, result, tx_id, signature, tx_status, held, error_message, first_id, tx_pk, first_pk = row
        shown = {BatchItemStatus.REJECTED: "REJECTED", BatchItemStatus.RETRY_DUE: RETRYING}.get(status, tx_status)
        counts[shown] += 1
        items.append({
            "index": index, "status": shown, "httpStatus": http_status, "errors": errors, "destination": result,
            # A held transaction's signature stays undisclosed until approved (positions/limits.py).
            "svmTransaction": {"onchainId": None if held else signature, "offchainId": str(tx_id), "status": tx_status, "errorMessage": error_message or ""} if tx_id else None,
            "firstTransaction": str(first_id) if first_id and first_pk != tx_pk else None,
        })
    return {"batch": {
        "offchainId": str(batch.offchain_id), "kind": batch.kind, "itemCount": batch.item_count, "createdAt": timestamp_text(batch.created_at),
        "counts": dict(sorted(counts.items())), "items": items,
    }}
