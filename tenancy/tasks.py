from celery import shared_task

from . import services


@shared_task(name="ledger.tenancy.purge_idempotency_records", acks_late=True)
def purge_idempotency_records(*, older_than_hours: int | None = None) -> int:
    return services.idempotency_records_purge(older_than_hours=older_than_hours)
