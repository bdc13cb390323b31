"""Worker tasks of the positions area: batch payout retries (positions/batch_retries.py). Thin:
each calls one service, which claims its work under row locks, so a task run twice or
killed anywhere is simply run again (by the sweep or a worker starting)."""

from __future__ import annotations

from celery import shared_task

from . import batch_retries


@shared_task(name="ledger.positions.batch_retry", acks_late=True)
def batch_retry(*, batch_pk: int) -> int:
    return batch_retries.batch_retry(batch_pk=batch_pk)


@shared_task(name="ledger.positions.batch_retry_sweep", acks_late=True)
def batch_retry_sweep() -> list[int]:
    due = batch_retries.batch_retry_due()
    for pk in due:
        batch_retry.delay(batch_pk=pk)
    return due
