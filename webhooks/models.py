"""Webhooks: subscriptions, the outbox of events, every delivery attempt, and the cursors of
the network-event poller (docs/webhooks.md).

The tables keep the names they had when webhooks lived in the transactions app
(``transactions_webhook*``, ``transactions_networkeventcursor``): moving the models moved no
data. Events are written in the database transaction of the change they describe
(webhooks/outbox.py, called by the engine through transactions/notify.py); the delivery
worker (webhooks/delivery.py) sends them.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenancy.scoping import TenantOwnedModel


class WebhookEventType(models.TextChoices):
    PRE_SUBMIT = "transaction.pre_submit"  # built and signed, due for submission: before any node sees it
    POST_SUBMIT = "transaction.post_submit"  # handed to the network; again when CONFIRMED / FAILED / EXPIRED
    NETWORK_EVENT = "account.network_event"  # a confirmed transaction touching a subscribed account, from the cluster
    RESIGNED = "transaction.resigned"  # its blockhash expired unlanded; signed again on a fresh one (a new onchainId)


#: event type → the subscription's boolean column that asks for it
EVENT_FLAGS = {
    WebhookEventType.PRE_SUBMIT: "pre_submit",
    WebhookEventType.POST_SUBMIT: "post_submit",
    WebhookEventType.NETWORK_EVENT: "network_event",
    WebhookEventType.RESIGNED: "resigned",
}


class WebhookSource(models.TextChoices):
    REGISTRY = "REGISTRY"  # POST /api/v1/webhooks
    FINANCIAL_INSTRUMENT = "FINANCIAL_INSTRUMENT"  # an instrument's postTransactionSubmitWebhooks


class WebhookStatus(models.TextChoices):
    ACTIVE = "ACTIVE"
    DISABLED = "DISABLED"  # delivery paused: no new events; pending ones wait until enabled again
    REMOVED = "REMOVED"  # an instrument's webhook no longer listed: kept as a record, nothing pending


#: what Update Webhook may set
SETTABLE_STATUSES = [(WebhookStatus.ACTIVE.value, "Active"), (WebhookStatus.DISABLED.value, "Disabled")]


class WebhookSubscription(TenantOwnedModel):
    """One endpoint the service delivers events to, for one tenant and cluster.

    Registry subscriptions receive every event of the types they ask for (the tenant's
    transactions; its accounts with subscribeToNetworkEvents). An instrument's webhooks are
    subscriptions too (``source`` FINANCIAL_INSTRUMENT, kept in step with the instrument's
    list by ``webhooks.webhook_sync_instrument``): they receive the transaction events of
    transactions whose message names the instrument's mint (``instrument_address``).

    Invariants: credentials and signing secrets are stored sealed (custody.services,
    purpose-bound to this row) and never rendered; a subscription is never deleted while
    events reference it (REMOVED instead).
    """

    name = models.CharField(max_length=200)
    endpoint_url = models.CharField(max_length=500)
    source = models.CharField(max_length=30, choices=WebhookSource.choices, default=WebhookSource.REGISTRY)
    status = models.CharField(max_length=10, choices=WebhookStatus.choices, default=WebhookStatus.ACTIVE)
    status_reason = models.CharField(max_length=300, blank=True)
    # FINANCIAL_INSTRUMENT subscriptions: which instrument (the transactions app does not
    # depend on instruments, so by id and mint address, not a foreign key).
    instrument_offchain_id = models.UUIDField(null=True, blank=True)
    instrument_address = models.CharField(max_length=44, blank=True)
    pre_submit = models.BooleanField(default=False)
    post_submit = models.BooleanField(default=False)
    network_event = models.BooleanField(default=False)
    resigned = models.BooleanField(default=False)
    auth = models.JSONField(default=dict, blank=True, help_text="apiKeyAuthConfig / oauth2AuthConfig; secrets sealed (webhooks/credentials.py).")
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True)
    signing_secret = models.JSONField(default=dict, help_text="Sealed HMAC key.")
    previous_signing_secret = models.JSONField(null=True, blank=True, help_text="Sealed; also signs until previous_valid_until (rotation).")
    previous_valid_until = models.DateTimeField(null=True, blank=True)
    signing_secret_rotated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "transactions_webhooksubscription"
        indexes = [
            models.Index(fields=["tenant", "cluster", "status"], name="whk_sub_tenant"),
            models.Index(fields=["instrument_offchain_id"], name="whk_sub_instrument"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(source="REGISTRY", instrument_offchain_id__isnull=True) | Q(source="FINANCIAL_INSTRUMENT", instrument_offchain_id__isnull=False),
                name="whk_sub_source_instrument", violation_error_message="An instrument's webhook names its instrument; a registry webhook none.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} [{self.status}]"

    @property
    def event_types(self) -> list[str]:
        return [kind for kind, flag in EVENT_FLAGS.items() if getattr(self, flag)]


class DeliveryStatus(models.TextChoices):
    PENDING = "PENDING"  # waiting for its first or next attempt (next_attempt_at)
    DELIVERING = "DELIVERING"  # claimed by a delivery loop until next_attempt_at (its lease); lapsed: claimable again
    DELIVERED = "DELIVERED"  # the endpoint answered 2xx
    DEAD = "DEAD"  # dead-lettered: still failing when the retry window closed
    CANCELLED = "CANCELLED"  # its subscription was removed before it was delivered


class WebhookEvent(TenantOwnedModel):
    """The outbox: one event for one subscription, written in the database transaction of
    the change it describes (no event without its change, no change without its event).

    ``event_id`` names the change: the same for every subscription of one event, and on
    every attempt and replay; receivers deduplicate on (webhook, event_id) — docs/webhooks.md. ``body`` is the exact JSON sent (and signed),
    fixed when the event is written. ``subject`` orders delivery: a subscription's events of
    one subject (a transaction, an account) go out one at a time, oldest first.
    """

    event_id = models.UUIDField()
    subscription = models.ForeignKey("webhooks.WebhookSubscription", on_delete=models.PROTECT, related_name="events")
    event_type = models.CharField(max_length=40, choices=WebhookEventType.choices)
    subject = models.CharField(max_length=120)
    body = models.TextField()
    occurred_at = models.DateTimeField()
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(help_text="PENDING: when it is due; DELIVERING: when the claim lapses.")
    retry_from = models.DateTimeField(help_text="The retry window (LEDGER_WEBHOOK_RETRY_WINDOW_SECONDS) runs from here: recorded, or redelivered.")
    claim_token = models.CharField(max_length=32, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    dead_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    replays = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "transactions_webhookevent"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="whk_event_due"),
            models.Index(fields=["subscription", "subject", "id"], name="whk_event_order"),
            models.Index(fields=["subscription", "occurred_at"], name="whk_event_time"),
            models.Index(fields=["event_id"], name="whk_event_id"),
            # The admin's links from a transaction or an account to its events (docs/admin.md).
            models.Index(fields=["subject"], name="whk_event_subject"),
        ]
        constraints = [models.UniqueConstraint(fields=["subscription", "event_id"], name="whk_event_once_per_subscription")]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} [{self.status}]"


class WebhookAttempt(models.Model):
    """One delivery attempt of an event (append-only): when, how long, what the endpoint
    answered (status code, the first bytes of its body) or why no answer came."""

    event = models.ForeignKey("webhooks.WebhookEvent", on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    latency_ms = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response_excerpt = models.TextField(blank=True)

    class Meta:
        db_table = "transactions_webhookattempt"
        ordering = ["event", "number"]
        # started_at: the dashboard's 24-hour plot of deliveries reads a time range (docs/admin.md).
        indexes = [models.Index(fields=["event", "number"], name="whk_attempt_event"), models.Index(fields=["started_at"], name="whk_attempt_started")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.event_id}: {self.status_code or self.error[:40]}"


class NetworkEventCursor(models.Model):
    """Where the network-event poller stands for one address of one cluster: the newest
    signature it has turned into events. The first poll starts from ``since`` (when the
    account was subscribed, as far as the service knows); later polls read everything newer
    than ``last_signature`` (getSignaturesForAddress with ``until``), paged."""

    cluster = models.CharField(max_length=40)
    address = models.CharField(max_length=44)
    last_signature = models.CharField(max_length=100, blank=True)
    last_slot = models.BigIntegerField(null=True, blank=True)
    since = models.DateTimeField()
    polled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "transactions_networkeventcursor"
        constraints = [models.UniqueConstraint(fields=["cluster", "address"], name="whk_cursor_address")]

    def __str__(self) -> str:
        return f"{self.address} on {self.cluster} @ {self.last_slot}"
