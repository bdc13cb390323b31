"""Periodic maintenance runs on a real worker over the configured broker."""

import pytest
from django.utils import timezone

from tenancy.models import IdempotencyRecord
from tenancy.tasks import purge_idempotency_records
from tenancy.tests.factories import issue_key
from tests.workers import wait_for


@pytest.mark.django_db(transaction=True)
def test_worker_purges_expired_idempotency_records(celery_worker_process, tenant):
    key = issue_key(tenant).api_key
    old = IdempotencyRecord.objects.create(api_key=key, request_id="8d3c1b7e-3f59-4b1e-9a55-1c1f7e0a0001", method="POST", path="/x", body_hash="h", status_code=201, response_bytes=b"{}")
    fresh = IdempotencyRecord.objects.create(api_key=key, request_id="8d3c1b7e-3f59-4b1e-9a55-1c1f7e0a0002", method="POST", path="/x", body_hash="h", status_code=201, response_bytes=b"{}")
    IdempotencyRecord.objects.filter(pk=old.pk).update(created_at=timezone.now() - timezone.timedelta(hours=49))
    purge_idempotency_records.delay()
    wait_for(lambda: not IdempotencyRecord.objects.filter(pk=old.pk).exists(), what="the worker to purge the old record")
    assert IdempotencyRecord.objects.filter(pk=fresh.pk).exists()
