"""The webhook registry: subscriptions, their sealed secrets, replay and redelivery
(docs/webhooks.md).

Writes run in the caller's write phase. Credentials (``keyValue``, ``clientSecret``,
``password``) and signing secrets are sealed with ``custody.services.secret_seal``, bound to
the subscription row (its offchainId) and never rendered: responses show ``REDACTED``. The
stored secrets are a sealed store of custody's (registered below), so master-key rotation
re-seals them and retirement counts them (docs/custody.md, Rotation).

An instrument's ``postTransactionSubmitWebhooks`` become subscriptions too
(``webhook_sync_instrument``, called by the instruments area in the write phase that stores
the list), so every event reaches its endpoint by one path: the outbox.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, QuerySet
from django.utils import timezone

from ledger_project.api.errors import LedgerError, NotFoundError
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant, worker_only

from .credentials import new_signing_secret, open_sealed, seal, sealed_auth
from .models import EVENT_FLAGS, DeliveryStatus, WebhookEvent, WebhookSource, WebhookStatus, WebhookSubscription

def _event_flags(event_types) -> dict:
    wanted = set(event_types)
    return {flag: kind in wanted for kind, flag in EVENT_FLAGS.items()}


# --- registry writes (the API: a write phase; the admin) ------------------------------------


def webhook_create(*, tenant, cluster: str, data: dict) -> WebhookSubscription:
    """Create Webhook: a REGISTRY subscription with a new signing secret (revealed only by
    Fetch Webhook Signing Secret). In the caller's write phase."""
    subscription = WebhookSubscription(
        tenant=tenant, cluster=cluster, name=data["name"], endpoint_url=data["endpointUrl"], source=WebhookSource.REGISTRY,
        timeout_seconds=data.get("timeout"), **_event_flags(data["eventTypes"]),
    )
    subscription.auth = sealed_auth(subscription, data)
    new_signing_secret(subscription)
    subscription.save()
    return subscription


_REGISTRY_ONLY = ("name", "endpointUrl", "eventTypes", "apiKeyAuthConfig", "oauth2AuthConfig", "timeout")


def webhook_update(*, tenant, subscription: WebhookSubscription, changes: dict) -> WebhookSubscription:
    """Update Webhook: patch semantics. ``status`` ACTIVE / DISABLED; ``rotateSigningSecret``
    makes a new secret, the previous one signing too for LEDGER_WEBHOOK_SECRET_OVERLAP_SECONDS.
    An instrument's webhook takes only those two: the rest is its instrument's list
    (Update Financial Instrument). Giving one auth config replaces the other."""
    sub = WebhookSubscription.objects.for_tenant(tenant).select_for_update().get(pk=subscription.pk)
    if sub.status == WebhookStatus.REMOVED:
        raise LedgerError("This webhook was removed from its financial instrument's list.", field="itemData.webhook", code="WEBHOOK_REMOVED")
    if sub.source == WebhookSource.FINANCIAL_INSTRUMENT:
        named = [name for name in _REGISTRY_ONLY if name in changes]
        if named:
            raise LedgerError(f"{named[0]} of a financial instrument's webhook is changed with Update Financial Instrument (postTransactionSubmitWebhooks).",
                              field=f"itemData.{named[0]}", code="MANAGED_BY_INSTRUMENT")
    if "name" in changes:
        sub.name = changes["name"]
    if "endpointUrl" in changes:
        sub.endpoint_url = changes["endpointUrl"]
    if "timeout" in changes:
        sub.timeout_seconds = changes["timeout"]
    if "eventTypes" in changes:
        for flag, value in _event_flags(changes["eventTypes"]).items():
            setattr(sub, flag, value)
    if "apiKeyAuthConfig" in changes or "oauth2AuthConfig" in changes:
        given = {k: changes.get(k) for k in ("apiKeyAuthConfig", "oauth2AuthConfig")}
        if given["apiKeyAuthConfig"] and given["oauth2AuthConfig"]:
            raise LedgerError("Give one of apiKeyAuthConfig and oauth2AuthConfig, not both.", field="itemData.oauth2AuthConfig", code="CONFLICTING_FIELDS")
        kept = {k: v for k, v in (sub.auth or {}).items() if k not in changes and not any(given.values())}
        sub.auth = {**kept, **sealed_auth(sub, given)}
    if changes.get("status") is not None:
        sub.status = changes["status"]
        sub.status_reason = "" if sub.status == WebhookStatus.ACTIVE else "Disabled through the API."
        if sub.status == WebhookStatus.ACTIVE:
            _kick_on_commit()  # what waited while it was disabled is due
    if changes.get("rotateSigningSecret"):
        _rotate(sub)
    sub.save()
    return sub


def _rotate(sub: WebhookSubscription) -> None:
    now = timezone.now()
    sub.previous_signing_secret = seal(sub, "previousSigningSecret", open_sealed(sub, "signingSecret", sub.signing_secret))
    sub.previous_valid_until = now + timedelta(seconds=settings.LEDGER_WEBHOOK_SECRET_OVERLAP_SECONDS)
    sub.signing_secret_rotated_at = now
    new_signing_secret(sub)


def webhook_signing_secret(*, subscription: WebhookSubscription) -> dict:
    """The signing secrets in clear: the role-gated Fetch Webhook Signing Secret only."""
    now = timezone.now()
    previous = None
    if subscription.previous_signing_secret and subscription.previous_valid_until and subscription.previous_valid_until > now:
        previous = open_sealed(subscription, "previousSigningSecret", subscription.previous_signing_secret)
    return {"signingSecret": open_sealed(subscription, "signingSecret", subscription.signing_secret), "previousSigningSecret": previous,
            "previousValidUntil": subscription.previous_valid_until if previous else None}


def webhook_set_status(*, subscription: WebhookSubscription, status: str, reason: str = "") -> WebhookSubscription:
    """Enable or disable (the admin's actions; the API goes through webhook_update)."""
    WebhookSubscription.objects.for_tenant(subscription.tenant).filter(pk=subscription.pk).exclude(status=WebhookStatus.REMOVED).update(
        status=status, status_reason=reason, updated_at=timezone.now())
    if status == WebhookStatus.ACTIVE:
        _kick_on_commit()
    subscription.refresh_from_db()
    return subscription


def webhook_sync_instrument(*, tenant, cluster: str, instrument_offchain_id, instrument_address: str, hooks: list[dict]) -> None:
    """An instrument's postTransactionSubmitWebhooks (validated, clear) → its subscriptions,
    in the write phase that stores the list: a hook keeps its subscription (and signing
    secret) while its name stays in the list; a new name gets a new subscription; a name no
    longer listed is REMOVED and its undelivered events CANCELLED."""
    scoped = WebhookSubscription.objects.for_tenant(tenant)
    existing: dict[str, list[WebhookSubscription]] = {}
    for sub in scoped.select_for_update().filter(instrument_offchain_id=instrument_offchain_id).exclude(status=WebhookStatus.REMOVED).order_by("pk"):
        existing.setdefault(sub.name, []).append(sub)
    for hook in hooks:
        matches = existing.get(hook["name"]) or []
        sub = matches.pop(0) if matches else WebhookSubscription(
            tenant=tenant, cluster=cluster, name=hook["name"], source=WebhookSource.FINANCIAL_INSTRUMENT,
            instrument_offchain_id=instrument_offchain_id, pre_submit=True, post_submit=True,
        )
        sub.endpoint_url = hook["endpointUrl"]
        sub.instrument_address = instrument_address
        sub.timeout_seconds = hook.get("timeout")
        sub.auth = sealed_auth(sub, hook)
        if not sub.signing_secret:
            new_signing_secret(sub)
        sub.save()
    gone = [sub.pk for subs in existing.values() for sub in subs]
    if gone:
        now = timezone.now()
        scoped.filter(pk__in=gone).update(status=WebhookStatus.REMOVED, status_reason="No longer in the financial instrument's postTransactionSubmitWebhooks.", updated_at=now)
        WebhookEvent.objects.for_tenant(tenant).filter(subscription_id__in=gone, status__in=[DeliveryStatus.PENDING, DeliveryStatus.DELIVERING]).update(
            status=DeliveryStatus.CANCELLED, updated_at=now)


# --- reads ------------------------------------------------------------------------------------

WEBHOOK_QUERY = QuerySpec(
    fields={
        "name": QueryField("TEXT", "name"),
        "endpointUrl": QueryField("TEXT", "endpoint_url"),
        "status": QueryField("TEXT", "status"),
        "source": QueryField("TEXT", "source"),
        "financialInstrumentOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "instrument_address", nullable=True, blank_is_null=True),
        "financialInstrumentOffchainId": QueryField("OFFCHAIN_ID", "instrument_offchain_id", nullable=True),
        "preSubmit": QueryField("BOOLEAN", "pre_submit"),
        "postSubmit": QueryField("BOOLEAN", "post_submit"),
        "networkEvent": QueryField("BOOLEAN", "network_event"),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
        "updatedAt": QueryField("TIMESTAMP", "updated_at"),
    },
    default_sort=(("createdAt", "DESC"),),
)


def webhook_get(*, queryset: QuerySet, offchain_id, field: str = "itemData") -> WebhookSubscription:
    """The subscription ``queryset`` (the view's: the tenant's) holds."""
    scoped_tenant(queryset, own=True)
    sub = queryset.filter(offchain_id=offchain_id).first()
    if sub is None:
        raise NotFoundError("No such webhook.", field=field)
    return sub


def webhook_list(*, queryset: QuerySet, item_query: dict | None) -> tuple[list[WebhookSubscription], int]:
    scoped_tenant(queryset, own=True)
    page, count = apply_item_query(queryset, item_query, WEBHOOK_QUERY)
    return list(page), count


# --- replay and redelivery ---------------------------------------------------------------------

_REDELIVERABLE = [DeliveryStatus.PENDING, DeliveryStatus.DELIVERED, DeliveryStatus.DEAD]


def _redeliver(events: QuerySet) -> int:
    """Due now: the events' next attempt is immediate, their retry window starts again (the
    attempts so far stay recorded). An event being delivered right now is left alone."""
    now = timezone.now()
    return events.filter(status__in=_REDELIVERABLE).update(
        status=DeliveryStatus.PENDING, next_attempt_at=now, retry_from=now, dead_at=None, replays=F("replays") + 1, updated_at=now)


def webhook_replay(*, tenant, subscription: WebhookSubscription, since: datetime, until: datetime, event_types: list[str] | None = None) -> int:
    """Replay Webhook Events: every event of ``subscription`` recorded in [since, until]
    (by the time it happened) goes out again, same id and body, in order. Returns how many."""
    if until < since:
        raise LedgerError("toTime is before fromTime.", field="itemData.toTime", code="INVALID_RANGE")
    if subscription.status == WebhookStatus.REMOVED:
        raise LedgerError("This webhook was removed from its financial instrument's list.", field="itemData.webhook", code="WEBHOOK_REMOVED")
    events = WebhookEvent.objects.for_tenant(tenant).filter(subscription=subscription, created_at__gte=since, created_at__lte=until)
    if event_types:
        events = events.filter(event_type__in=event_types)
    count = _redeliver(events)
    if count:
        _kick_on_commit()
    return count


@worker_only  # the admin's actions: rows of any tenant, already chosen by staff
def webhook_redeliver(*, event_ids: list[int]) -> int:
    """Redeliver the chosen events (the admin: one, or a dead-letter range filtered there)."""
    count = _redeliver(WebhookEvent.unscoped.filter(pk__in=event_ids))
    if count:
        _kick_on_commit()
    return count


@worker_only  # the admin's action on subscriptions of any tenant
def webhook_redeliver_dead(*, subscription_ids: list[int], since: datetime | None = None, until: datetime | None = None) -> int:
    """Redeliver the dead-lettered events of the chosen subscriptions (in a time range)."""
    events = WebhookEvent.unscoped.filter(subscription_id__in=subscription_ids, status=DeliveryStatus.DEAD)
    if since is not None:
        events = events.filter(created_at__gte=since)
    if until is not None:
        events = events.filter(created_at__lte=until)
    return webhook_redeliver(event_ids=list(events.values_list("pk", flat=True)))


def _kick_on_commit() -> None:
    from .outbox import kick_delivery_on_commit

    kick_delivery_on_commit()
