"""Webhook delivery: claim due events, send them signed and authenticated, record every
attempt, retry with backoff and jitter, dead-letter (docs/webhooks.md, "Delivery").

The outbox rows are the queue. ``claim`` takes due events (PENDING and due, or DELIVERING
with a lapsed claim) with ``SELECT … FOR UPDATE SKIP LOCKED`` on PostgreSQL — on SQLite the
immediate transaction serializes claims — and a conditional UPDATE (status, due time) that
marks them DELIVERING with a claim token until ``now + LEDGER_WEBHOOK_CLAIM_SECONDS``. Only
the oldest open event of a (subscription, subject) is claimable: a subscription gets a
transaction's (an account's) events one at a time, in order. A worker killed mid-delivery
leaves DELIVERING rows whose claim lapses; they are claimed and sent again (same event id:
receivers deduplicate on the webhook and the event id).

``send`` runs in a thread pool (LEDGER_WEBHOOK_DELIVERY_THREADS in flight) over one pooled
keep-alive HTTP client per process, through ``ledger_project.outbound`` (URL checked again
before each call, pinned address, no redirects, answers read up to a cap). ``record`` writes
a batch of outcomes in one database transaction: the attempts (one INSERT), the delivered
events, and each failed one's next attempt or its dead-lettering.

``delivery_run`` is the loop one task runs while it holds the ``@webhooks`` lease (the
pump's lease table): claims as slots free up, records every ~50 ms, stops after
LEDGER_WEBHOOK_IDLE_SECONDS with nothing due. Commits that write events kick it
(``delivery_kick``); the watch (beat) starts it for retries that fell due.
"""

from __future__ import annotations

import logging
import os
import random
import time
import uuid
from collections import defaultdict
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction as db_transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from ledger_project.logging import redact_urls
from ledger_project.shutdown import stopping
from tenancy.scoping import worker_only

from .attempt import AttemptFailed, attempt_secrets, http_client, oauth_token, request_headers, subscription_material, time_left, without_secrets
from .models import DeliveryStatus, WebhookAttempt, WebhookEvent, WebhookStatus

logger = logging.getLogger("ledger.webhooks")

LEASE = "@webhooks"
OPEN = (DeliveryStatus.PENDING, DeliveryStatus.DELIVERING)
EXCERPT_CHARS = 500


def now() -> datetime:
    """The delivery clock (tests move it through the retry schedule)."""
    return timezone.now()


def backoff(attempt: int) -> float:
    """Seconds before the attempt after failed attempt number ``attempt``: exponential
    (base × 2^(attempt-1), capped), with "equal jitter": between half of it and all of it."""
    ceiling = min(settings.LEDGER_WEBHOOK_RETRY_MAX_DELAY_SECONDS, settings.LEDGER_WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


# --- claim ---------------------------------------------------------------------------------


@worker_only  # the delivery worker: every tenant's events
def claim(limit: int) -> list[WebhookEvent]:
    """Take up to ``limit`` due events, oldest due first, the head of each (subscription,
    subject) only; they are DELIVERING until the claim lapses."""
    at = now()
    if not _due(at):
        return []  # a read, no write transaction: idle polls take no write lock (SQLite)
    token = uuid.uuid4().hex
    earlier = WebhookEvent.unscoped.filter(subscription_id=OuterRef("subscription_id"), subject=OuterRef("subject"), pk__lt=OuterRef("pk"), status__in=OPEN)
    with db_transaction.atomic():
        ids: list[int] = []
        # Lapsed claims first (rare), then what is due; one status at a time, so the index
        # (status, next_attempt_at) gives the rows in due order and the LIMIT stops the scan.
        for status in (DeliveryStatus.DELIVERING, DeliveryStatus.PENDING):
            due = (WebhookEvent.unscoped.filter(status=status, next_attempt_at__lte=at, subscription__status=WebhookStatus.ACTIVE)
                   .exclude(Exists(earlier)).order_by("next_attempt_at", "pk"))
            # Row locks (PostgreSQL; SQLite runs one writer at a time): two loops never claim
            # one event, and neither waits for the other's.
            ids += due.select_for_update(skip_locked=True, of=("self",)).values_list("pk", flat=True)[:limit - len(ids)]
            if len(ids) >= limit:
                break
        if not ids:
            return []
        WebhookEvent.unscoped.filter(pk__in=ids, status__in=OPEN, next_attempt_at__lte=at).update(
            status=DeliveryStatus.DELIVERING, claim_token=token, next_attempt_at=at + timedelta(seconds=settings.LEDGER_WEBHOOK_CLAIM_SECONDS), updated_at=at)
    return list(WebhookEvent.unscoped.filter(pk__in=ids, claim_token=token).select_related("subscription").order_by("pk"))


# --- send ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    event_pk: int
    token: str
    number: int
    retry_from: datetime
    started_at: datetime
    latency_ms: int
    status_code: int | None
    error: str
    excerpt: str

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


_pool: ThreadPoolExecutor | None = None
_pool_pid = None


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    if _pool is None or _pool_pid != os.getpid():
        _pool = ThreadPoolExecutor(max_workers=max(1, settings.LEDGER_WEBHOOK_DELIVERY_THREADS), thread_name_prefix="webhook")
        _pool_pid = os.getpid()
    return _pool


def send(event: WebhookEvent, *, not_after: float | None = None) -> Outcome:
    """One attempt, never raising: the answer (status, the first bytes of its body) or why
    there was none. The subscription's timeout bounds the whole attempt (token included),
    and so does ``not_after`` (monotonic: the claim's lapse, which no attempt outlives)."""
    import httpx

    from custody.services import CustodyError
    from ledger_project.outbound import OutboundUrlRefused, outbound_send

    sub = event.subscription
    number = event.attempts + 1
    at = now()
    begun = time.monotonic()
    deadline = begun + (sub.timeout_seconds or settings.LEDGER_WEBHOOK_TIMEOUT_SECONDS)
    if not_after is not None:
        deadline = min(deadline, not_after)
    status, error, excerpt = None, "", ""
    material, access_token = None, None
    try:
        material = subscription_material(sub)
        body = event.body.encode()
        headers = request_headers(event, material, number, at, body)
        if material.oauth:
            access_token = oauth_token(sub, material, deadline)
            headers["Authorization"] = f"Bearer {access_token}"
        answer = outbound_send(http_client(), "POST", sub.endpoint_url, content=body, headers=headers, timeout=time_left(deadline))
        if answer.status_code == 401 and material.oauth:
            access_token = oauth_token(sub, material, deadline, fresh=True)  # expired or revoked: once more
            headers["Authorization"] = f"Bearer {access_token}"
            answer = outbound_send(http_client(), "POST", sub.endpoint_url, content=body, headers=headers, timeout=time_left(deadline))
        status = answer.status_code
        excerpt = answer.body[:EXCERPT_CHARS].decode("utf-8", errors="replace")
    except AttemptFailed as exc:
        error = str(exc)
    except OutboundUrlRefused as exc:
        error = f"URL_NOT_ALLOWED: {exc.message}"
    except httpx.TimeoutException:
        error = f"no answer within the webhook's timeout ({sub.timeout_seconds or settings.LEDGER_WEBHOOK_TIMEOUT_SECONDS} s)"
    except httpx.LocalProtocolError:
        # The client refused to write the request; its message quotes the offending header
        # value, which is a credential (API key, access token): never kept.
        error = "LocalProtocolError: the request could not be written (a header value of the webhook's auth, or the OAuth access token, is not valid in HTTP)"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {redact_urls(str(exc))[:300]}"
    except CustodyError as exc:
        error = f"KEY_CUSTODY_ERROR: {exc}"
    except Exception as exc:  # noqa: BLE001 - one attempt's bug must not stop the loop
        logger.exception("webhook attempt of event %s failed unexpectedly", event.event_id)
        error = f"internal error: {type(exc).__name__}"
    secrets = attempt_secrets(material, access_token)
    error, excerpt = without_secrets(error, secrets), without_secrets(excerpt, secrets)
    latency = int((time.monotonic() - begun) * 1000)
    return Outcome(event.pk, event.claim_token, number, event.retry_from, at, latency, status, error, excerpt)


# --- record --------------------------------------------------------------------------------


@worker_only  # the delivery worker
def record(outcomes: list[Outcome]) -> None:
    """The attempts of a batch and what they mean for their events, in one database
    transaction. A result whose claim lapsed and was taken again meanwhile only adds its
    attempt (the other claim decides)."""
    if not outcomes:
        return
    at = now()
    window = timedelta(seconds=settings.LEDGER_WEBHOOK_RETRY_WINDOW_SECONDS)
    with db_transaction.atomic():
        WebhookAttempt.objects.bulk_create([
            WebhookAttempt(event_id=o.event_pk, number=o.number, started_at=o.started_at, latency_ms=o.latency_ms, status_code=o.status_code,
                           error=o.error[:2000], response_excerpt=o.excerpt) for o in outcomes])
        delivered: dict[tuple[str, int], list[int]] = defaultdict(list)
        for o in outcomes:
            if o.delivered:
                delivered[(o.token, o.status_code)].append(o.event_pk)
        for (token, code), ids in delivered.items():
            WebhookEvent.unscoped.filter(pk__in=ids, claim_token=token, status=DeliveryStatus.DELIVERING).update(
                status=DeliveryStatus.DELIVERED, delivered_at=at, attempts=F("attempts") + 1, last_status_code=code, last_error="", claim_token="", updated_at=at)
        for o in outcomes:
            if o.delivered:
                continue
            fields = {"attempts": o.number, "last_status_code": o.status_code, "last_error": o.error[:2000] or f"HTTP {o.status_code}", "claim_token": "", "updated_at": at}
            if at - o.retry_from >= window:
                fields.update(status=DeliveryStatus.DEAD, dead_at=at)
            else:
                fields.update(status=DeliveryStatus.PENDING, next_attempt_at=at + timedelta(seconds=backoff(o.number)))
            WebhookEvent.unscoped.filter(pk=o.event_pk, claim_token=o.token, status=DeliveryStatus.DELIVERING).update(**fields)
    dead = [o for o in outcomes if not o.delivered and at - o.retry_from >= window]
    _count(outcomes, dead, at)
    if dead:
        logger.warning("%d webhook event(s) dead-lettered after the retry window", len(dead))


def _count(outcomes: list[Outcome], dead: list[Outcome], at: datetime) -> None:
    """Metrics of recorded attempts (docs/operations.md, "Metrics"), after their commit."""
    from ledger_project.metrics import meters

    for o in outcomes:
        meters.webhook_attempt_duration.observe(o.latency_ms / 1000)
        if o.delivered:
            meters.webhook_deliveries.labels("delivered").inc()
            meters.webhook_delivery_latency.observe(max(0.0, (at - o.retry_from).total_seconds()))
    if dead:
        meters.webhook_deliveries.labels("dead_lettered").inc(len(dead))
    failed = sum(1 for o in outcomes if not o.delivered) - len(dead)
    if failed:
        meters.webhook_deliveries.labels("failed").inc(failed)


# --- driving it ----------------------------------------------------------------------------


def deliver_due(limit: int = 100) -> list[Outcome]:
    """One pass: claim up to ``limit`` due events, send them concurrently, record the
    outcomes (tests, operators; the loop pipelines the same steps)."""
    claimed = time.monotonic()
    events = claim(limit)
    outcomes = [o for o in _executor().map(lambda event: _send_claimed(event, claimed), events) if o is not None]
    record(outcomes)
    return outcomes


@worker_only  # the loop and the watch: every tenant's events
def _due(at: datetime) -> bool:
    return WebhookEvent.unscoped.filter(status__in=OPEN, next_attempt_at__lte=at, subscription__status=WebhookStatus.ACTIVE).exists()


def delivery_needed() -> bool:
    return _due(now())


def delivery_kick() -> None:
    """After a commit that wrote events: start the loop unless one runs."""
    from transactions.pump import lease_live

    from .tasks import deliver_webhooks

    if settings.LEDGER_WEBHOOK_DELIVERY_ENABLED and not lease_live(LEASE):
        deliver_webhooks.delay()


_POLL = 0.025  # seconds between claims (a read when nothing is due) when the last one found less than it could take
_FLUSH = 0.05  # seconds outcomes wait to be recorded together
_HELD = 4  # events claimed and not yet recorded, per thread: the pool's queue stays fed


def _send_claimed(event: WebhookEvent, claimed: float) -> Outcome | None:
    """``send`` within what is left of the event's claim (a second ahead of its lapse), so
    an attempt never outlives its claim and the event is never sent by two loops at once;
    one that waited in the pool's queue (slow endpoints ahead of it) until too little is
    left is not sent: its claim lapses and it is claimed again. Nor is one still queued when
    the worker stops (the loop gives its claim back)."""
    if stopping():
        return None
    not_after = claimed + settings.LEDGER_WEBHOOK_CLAIM_SECONDS - 1.0
    if not_after - time.monotonic() < 1.0:
        return None
    return send(event, not_after=not_after)


@worker_only  # the delivery loop
def release(events: list[WebhookEvent]) -> None:
    """Give back the claims of events a stopping loop did not send: due again at once, with
    no attempt recorded (rather than waiting LEDGER_WEBHOOK_CLAIM_SECONDS for the lapse)."""
    at = now()
    tokens: dict[str, list[int]] = defaultdict(list)
    for event in events:
        tokens[event.claim_token].append(event.pk)
    for token, ids in tokens.items():
        WebhookEvent.unscoped.filter(pk__in=ids, claim_token=token, status=DeliveryStatus.DELIVERING).update(
            status=DeliveryStatus.PENDING, claim_token="", next_attempt_at=at, updated_at=at)


def delivery_run(*, holder: str, run_seconds: float | None = None) -> bool:
    """Deliver while holding the ``@webhooks`` lease: claim in batches while the pool's queue
    runs low, send LEDGER_WEBHOOK_DELIVERY_THREADS at a time, record outcomes in batches;
    stop after LEDGER_WEBHOOK_IDLE_SECONDS with nothing due or ``run_seconds``
    (LEDGER_WEBHOOK_RUN_SECONDS), or when the worker stops (it claims no more, lets the sends
    under way finish — each bounded by its webhook's timeout — and gives back the claims of
    those not started). Returns whether work is left for another run (looked for
    after the lease is released, so a commit that saw the lease live is never missed)."""
    from transactions.pump import lease_release, lease_take

    if not settings.LEDGER_WEBHOOK_DELIVERY_ENABLED or not lease_take(LEASE, holder):
        return False
    run_seconds = settings.LEDGER_WEBHOOK_RUN_SECONDS if run_seconds is None else run_seconds
    slots = max(1, settings.LEDGER_WEBHOOK_DELIVERY_THREADS)
    held = slots * _HELD
    pool = _executor()
    in_flight: dict[Future, WebhookEvent] = {}
    unsent: list[WebhookEvent] = []
    outcomes: list[Outcome] = []
    started = renewed = flushed = time.monotonic()
    next_claim, idle_since = 0.0, None
    try:
        while True:
            clock = time.monotonic()
            running = clock - started < run_seconds and not stopping()
            if clock - renewed >= 1.0:
                if not lease_take(LEASE, holder):
                    logger.warning("webhook delivery lost its lease; stopping")
                    running = False
                renewed = clock
            claimed = []
            if running and len(in_flight) <= held // 2 and clock >= next_claim:
                want = held - len(in_flight)
                if outcomes:
                    # One write transaction for both: on SQLite every one queues for the
                    # single write lock behind requests and the pump.
                    with db_transaction.atomic():
                        record(outcomes)
                        claimed = claim(want)
                    outcomes, flushed = [], time.monotonic()
                else:
                    claimed = claim(want)
                in_flight.update({pool.submit(_send_claimed, event, clock): event for event in claimed})
                next_claim = clock if len(claimed) == want else clock + _POLL
            if in_flight:
                done, pending = wait(in_flight, timeout=0.01, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = future.result()
                    if outcome is not None:
                        outcomes.append(outcome)
                    elif stopping():
                        unsent.append(in_flight[future])
                in_flight = {future: in_flight[future] for future in pending}
            elif not running:
                break
            else:
                time.sleep(max(0.0, min(_POLL, next_claim - time.monotonic())))
            if outcomes and (len(outcomes) >= slots * 2 or time.monotonic() - flushed >= _FLUSH or not in_flight):
                record(outcomes)
                outcomes, flushed = [], time.monotonic()
            if claimed or in_flight:
                idle_since = None
            else:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since >= settings.LEDGER_WEBHOOK_IDLE_SECONDS:
                    break
    finally:
        for future, event in in_flight.items():  # bounded by the webhooks' timeouts
            outcome = future.result()
            if outcome is not None:
                outcomes.append(outcome)
            elif stopping():
                unsent.append(event)
        record(outcomes)
        release(unsent)
        lease_release(LEASE, holder)
    return delivery_needed()


@worker_only  # retention: every tenant's events
def purge(*, older_than_days: int | None = None) -> int:
    """Delete ended events (delivered, dead-lettered, cancelled) and their attempts that
    happened longer ago than LEDGER_WEBHOOK_RETENTION_DAYS."""
    days = settings.LEDGER_WEBHOOK_RETENTION_DAYS if older_than_days is None else older_than_days
    cutoff = timezone.now() - timedelta(days=days)
    ended = WebhookEvent.unscoped.filter(created_at__lt=cutoff, status__in=[DeliveryStatus.DELIVERED, DeliveryStatus.DEAD, DeliveryStatus.CANCELLED])
    ids = list(ended.values_list("pk", flat=True)[:10_000])
    if not ids:
        return 0
    with db_transaction.atomic():
        WebhookAttempt.objects.filter(event_id__in=ids).delete()
        return WebhookEvent.unscoped.filter(pk__in=ids).delete()[0]
