"""A worker killed (SIGKILL) in the middle of webhook deliveries: its claims lapse, the
restarted worker (or any other) sends those events again, and every event reaches the
receiver — nothing lost; the ones cut off mid-flight arrive again with the same id, which
is what receivers deduplicate on (docs/webhooks.md, "Delivery", "Crash safety").

The worker runs as `make run` starts it (Celery with beat) on the test database and broker;
the receiver is a real local HTTP server holding each answer for a while, so deliveries are
in flight when the kill comes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import LOCAL_WEBHOOK_ENV
from tests.workers import WorkerProcess, new_queue_name, paused_workers, route_tasks_to, wait_for
from webhooks.tests.webhookkit import API_KEY, Receiver, emit, recorded_transaction, subscribe
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookEvent

pytestmark = pytest.mark.worker

EVENTS = 24
CLAIM_SECONDS = 6  # LEDGER_WEBHOOK_CLAIM_SECONDS of this stack: a dead worker's claims lapse after it


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_delivery_is_replaced_and_every_event_is_delivered(tenant, settings, tmp_path: Path):
    from ledger_project.celery import app

    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    previous_queue = app.conf.task_default_queue
    with Receiver(delay=3.0) as receiver, paused_workers():
        queue = new_queue_name()
        route_tasks_to(queue)
        env = {**LOCAL_WEBHOOK_ENV, "LEDGER_WEBHOOK_CLAIM_SECONDS": str(CLAIM_SECONDS), "LEDGER_WEBHOOK_DELIVERY_THREADS": "4", "LEDGER_WEBHOOK_RETRY_BASE_SECONDS": "1"}
        worker = WorkerProcess(queue, extra_env=env, beat_schedule=tmp_path / "beat-schedule", log_path=tmp_path / "worker.log")
        try:
            worker.start()
            subscribe(tenant, receiver.url("/hook"), timeout=10)
            events = emit([recorded_transaction(tenant) for _ in range(EVENTS)])  # its commit kicks the delivery loop
            wait_for(lambda: len(receiver.received) >= 4, timeout=60, what="deliveries in flight")
            worker.kill()  # four requests are held by the receiver: their answers never reach the worker
            cut = {r.event_id for r in receiver.received}
            stuck = {str(e.event_id) for e in WebhookEvent.unscoped.filter(status=DeliveryStatus.DELIVERING)}
            assert cut <= stuck  # claimed, sent, never recorded: only their claims' lapse brings them back
            receiver.delay = 0.0
            worker.start()  # the restarted worker takes over once the lease and the claims lapse
            wait_for(lambda: not WebhookEvent.unscoped.exclude(status=DeliveryStatus.DELIVERED).exists(), timeout=90, what="every event delivered")
        finally:
            worker.stop()
            route_tasks_to(previous_queue)
    ids = {str(e.event_id) for e in events}
    answered = Counter(r.event_id for r in receiver.delivered())
    assert set(answered) == ids  # nothing lost
    again = {i for i, n in Counter(r.event_id for r in receiver.received).items() if n > 1}
    assert again and again <= cut  # sent again: only what the kill cut off
    assert all(answered[i] == 1 for i in ids - cut)  # the rest exactly once
    # Every attempt the surviving worker saw through is recorded; the cut ones ended without one.
    assert WebhookAttempt.objects.filter(status_code=200).count() == len(ids)
    assert API_KEY not in (tmp_path / "worker.log").read_text()  # the webhook's credential never reaches the worker's log
