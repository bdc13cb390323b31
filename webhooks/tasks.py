"""Worker tasks of the webhooks (docs/webhooks.md): the delivery loop, its watch, the
network-event poller and the outbox's retention. Their names (``ledger.webhooks.*``) are
the ones beat schedules and queued messages already carry."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from django.conf import settings
from django.core.cache import cache

from ledger_project.shutdown import stopping
from transactions import pump as pumping

from . import delivery, network_events


@worker_ready.connect
def _deliver_on_start(sender=None, **kwargs) -> None:
    # A loop its killed predecessor held resumes once that lease has lapsed.
    deliver_watch.apply_async(countdown=settings.LEDGER_PUMP_LEASE_SECONDS + 0.5)


@shared_task(name="ledger.webhooks.deliver", acks_late=True)
def deliver_webhooks() -> None:
    """The delivery loop (webhooks/delivery.py), while it holds its lease."""
    if delivery.delivery_run(holder=pumping.new_holder()) and not stopping():
        deliver_webhooks.delay()  # run over, or work committed as it stopped: a fresh task carries on


@shared_task(name="ledger.webhooks.deliver_watch", acks_late=True)
def deliver_watch() -> bool:
    """Beat: retries that fell due, or a loop whose worker died (its lease lapsed)."""
    if settings.LEDGER_WEBHOOK_DELIVERY_ENABLED and not pumping.lease_live(delivery.LEASE) and delivery.delivery_needed():
        deliver_webhooks.delay()
        return True
    return False


@shared_task(name="ledger.webhooks.poll_network_events", acks_late=True)
def poll_network_events() -> int:
    # One poll at a time (beat runs overlap when a poll is slow); the cursors' compare-and-set
    # keeps a second one from writing twice anyway.
    lock = "ledger:network-events-poll"
    if not cache.add(lock, 1, timeout=300):
        return 0
    try:
        return network_events.poll()
    finally:
        cache.delete(lock)


@shared_task(name="ledger.webhooks.purge", acks_late=True)
def purge_webhook_events() -> int:
    return delivery.purge()
