"""Webhook delivery against a real local receiver and a real local OAuth token endpoint
(docs/webhooks.md, "Delivery"): both auth kinds, signatures the test verifies itself,
retries through a simulated 8-hour outage (the delivery clock moved through the schedule),
ordering, dead letters and their redelivery, replay, redirects, capped answers, secrets
kept out of logs and rows.

The outbox rows are written by the engine's own writer (``outbox.transaction_events``) for
Transaction rows; the loop's pieces run in this process (``delivery.deliver_due``).
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone
from solders.message import Message

from webhooks import delivery, services as webhooks
from webhooks.attempt import http_client
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookEvent, WebhookEventType, WebhookSubscription
from webhooks.tests.webhookkit import API_KEY, Receiver, TokenServer, emit, recorded_transaction, subscribe, verify_signature

HOURS = 3600


class Clock:
    """The delivery clock: real time shifted forward by the test (``at = …`` moves it).
    ``freeze()`` stops the real part, so only the test moves it: a test that measures the
    gaps between attempts then sees the schedule, not how long the machine took to run it."""

    def __init__(self):
        self.offset = timedelta(0)
        self.frozen_at = None

    def freeze(self) -> None:
        self.frozen_at = timezone.now()

    def _base(self):
        return self.frozen_at or timezone.now()

    def __call__(self):
        return self._base() + self.offset

    @property
    def at(self):
        return self()

    @at.setter
    def at(self, when) -> None:
        self.offset = max(self.offset, when - self._base())


@pytest.fixture(autouse=True)
def local_endpoints(settings, monkeypatch):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    kicks = []
    monkeypatch.setattr(delivery, "delivery_kick", lambda: kicks.append(1))  # this process delivers
    return kicks


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(delivery, "now", clock)
    return clock


def drain(clock: Clock, *, until=None, rounds: int = 10_000) -> int:
    """Deliver whatever is due, moving the clock to the next due time each round; returns
    the rounds it took. Stops when nothing is open, or at ``until``."""
    for n in range(rounds):
        outcomes = delivery.deliver_due(limit=100)
        open_ = WebhookEvent.unscoped.filter(status__in=[DeliveryStatus.PENDING, DeliveryStatus.DELIVERING])
        if not open_.exists():
            return n
        if outcomes:
            continue  # a delivered head may have freed the next of its subject
        upcoming = open_.filter(next_attempt_at__gt=clock.at).order_by("next_attempt_at").first()
        assert upcoming is not None, "open events that are neither due nor upcoming"
        if until is not None and upcoming.next_attempt_at >= until:
            clock.at = until
            return n
        clock.at = upcoming.next_attempt_at
    raise AssertionError("delivery did not settle")


def secret_of(sub) -> str:
    return webhooks.webhook_signing_secret(subscription=sub)["signingSecret"]


def _all_rows_text() -> str:
    with connection.cursor() as cursor:
        text = []
        for model in (WebhookSubscription, WebhookEvent, WebhookAttempt):
            cursor.execute(f"SELECT * FROM {model._meta.db_table}")
            text += [" ".join(bytes(v).decode(errors="replace") if isinstance(v, (bytes, memoryview)) else str(v) for v in row) for row in cursor.fetchall()]
    return "\n".join(text)


@pytest.mark.django_db
def test_api_key_delivery_is_signed_with_the_webhooks_secret_and_carries_the_event(tenant, clock, local_endpoints, caplog, django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    with Receiver() as receiver:
        receiver.decide = lambda r: 200 if r.headers.get("x-api-key") == API_KEY else 403
        sub = subscribe(tenant, receiver.url("/hook"))
        tx = recorded_transaction(tenant)
        with django_capture_on_commit_callbacks(execute=True):
            [event] = emit([tx])
        outcomes = delivery.deliver_due()
    assert [o.status_code for o in outcomes] == [200]
    [got] = receiver.received
    assert got.path == "/hook" and got.headers["content-type"] == "application/json"
    assert verify_signature(secret_of(sub), got.headers, got.body, now=clock.at.timestamp())
    assert not verify_signature(secret_of(sub), got.headers, got.body + b" ", now=clock.at.timestamp())  # the body is what is signed
    payload = got.json
    assert payload["id"] == got.event_id == str(event.event_id) and payload["type"] == "transaction.post_submit" == got.headers["x-ledger-event-type"]
    assert payload["tenantOrganizationId"] == "ACME" and payload["svmCluster"] == "CHAIN_LOCALNET" and payload["occurredAt"].endswith("Z")
    result = payload["data"]["transaction"]
    assert result["offchainId"] == str(tx.offchain_id) and result["status"] == "FINALIZED" and result["onchainId"] == tx.onchain_id and result["success"] is True
    assert payload["data"]["operation"] == "positions.transfer_network_currency"
    assert got.headers["x-ledger-webhook-id"] == str(sub.offchain_id) and got.headers["x-ledger-delivery-attempt"] == "1"
    event.refresh_from_db()
    assert event.status == DeliveryStatus.DELIVERED and event.attempts == 1 and event.last_status_code == 200
    [attempt] = WebhookAttempt.objects.filter(event=event)
    assert attempt.status_code == 200 and attempt.response_excerpt == "ok" and attempt.latency_ms >= 0
    assert local_endpoints  # the commit that wrote the event kicked delivery
    assert API_KEY not in caplog.text and API_KEY not in _all_rows_text() and secret_of(sub) not in _all_rows_text()


@pytest.mark.django_db
def test_oauth_client_credentials_token_is_fetched_with_audience_cached_and_refreshed_on_401(tenant, clock, caplog):
    caplog.set_level(logging.DEBUG)
    with TokenServer() as tokens, Receiver() as receiver:
        receiver.token_server = tokens
        oauth = {"accessTokenUrl": tokens.url("/oauth/token"), "audience": tokens.audience, "flowType": "CLIENT_CREDENTIALS", "clientId": tokens.client_id, "clientSecret": tokens.client_secret}
        subscribe(tenant, receiver.url("/hook"), apiKeyAuthConfig=None, oauth2AuthConfig=oauth)
        emit([recorded_transaction(tenant) for _ in range(5)])
        assert [o.status_code for o in delivery.deliver_due()] == [200] * 5
        assert len(tokens.issued) == 1 and tokens.requests[0] == {"grant_type": "client_credentials", "client_id": tokens.client_id,
                                                                  "client_secret": tokens.client_secret, "audience": tokens.audience}
        assert {r.headers["authorization"] for r in receiver.received} == {f"Bearer {tokens.issued[0]}"}

        tokens.revoke_all()  # the endpoint now answers 401 to the cached token
        [event] = emit([recorded_transaction(tenant)])
        [outcome] = delivery.deliver_due()
        assert outcome.status_code == 200 and len(tokens.issued) == 2
        assert [r.status for r in receiver.received[-2:]] == [401, 200] and receiver.received[-1].headers["authorization"] == f"Bearer {tokens.issued[1]}"
        event.refresh_from_db()
        assert event.status == DeliveryStatus.DELIVERED and event.attempts == 1  # one attempt: the refresh is part of it

        tokens.client_secret = "rotated-elsewhere"  # the stored credentials no longer work
        tokens.revoke_all()
        [failing] = emit([recorded_transaction(tenant)])
        [outcome] = delivery.deliver_due()
    assert outcome.status_code is None and outcome.error == "the OAuth token endpoint answered 401"
    failing.refresh_from_db()
    assert failing.status == DeliveryStatus.PENDING and failing.next_attempt_at > clock.at
    assert oauth["clientSecret"] not in caplog.text and oauth["clientSecret"] not in _all_rows_text()
    assert all(token not in _all_rows_text() and token not in caplog.text for token in tokens.issued)


@pytest.mark.django_db
def test_a_receiver_down_for_eight_hours_gets_every_event_exactly_once_when_it_is_back(tenant, clock, settings):
    clock.freeze()  # the gaps below are the schedule's; a slow machine must not stretch them
    receiver = Receiver(status=500)  # not listening yet: connections are refused
    sub = subscribe(tenant, receiver.url("/hook"))
    start = clock.at
    events = emit([recorded_transaction(tenant) for _ in range(30)])
    chained = recorded_transaction(tenant)  # three events of one transaction: delivered in order
    ordered = [emit([chained])[0] for _ in range(3)]
    ids = {str(e.event_id) for e in [*events, *ordered]}

    drain(clock, until=start + timedelta(hours=4))  # down: connection refused
    receiver.start()
    try:
        drain(clock, until=start + timedelta(hours=8))  # up, but failing: 500
        assert not receiver.delivered() and WebhookEvent.unscoped.filter(status__in=[DeliveryStatus.DELIVERED, DeliveryStatus.DEAD]).count() == 0
        first = WebhookEvent.unscoped.get(pk=events[0].pk)
        assert first.attempts >= 15, first.attempts  # retried all along, not given up
        assert WebhookEvent.unscoped.get(pk=ordered[1].pk).attempts == 0  # waits behind the first of its transaction
        receiver.status = 200  # back
        drain(clock)
    finally:
        receiver.stop()

    delivered = receiver.delivered_ids()
    assert sorted(delivered) == sorted(ids)  # every event, each exactly once
    assert [i for i in delivered if i in {str(e.event_id) for e in ordered}] == [str(e.event_id) for e in ordered]
    assert set(WebhookEvent.unscoped.values_list("status", flat=True)) == {DeliveryStatus.DELIVERED}
    for got in receiver.delivered():
        assert verify_signature(secret_of(sub), got.headers, got.body, tolerance=None)
    attempts = list(WebhookAttempt.objects.filter(event_id=events[0].pk).order_by("number"))
    assert attempts[0].status_code is None and "ConnectError" in attempts[0].error  # refused while down
    assert any(a.status_code == 500 for a in attempts) and attempts[-1].status_code == 200
    for before, after in zip(attempts, attempts[1:]):
        ceiling = min(settings.LEDGER_WEBHOOK_RETRY_MAX_DELAY_SECONDS, settings.LEDGER_WEBHOOK_RETRY_BASE_SECONDS * 2 ** (before.number - 1))
        gap = (after.started_at - before.started_at).total_seconds()
        assert ceiling / 2 <= gap <= ceiling + 1, (before.number, gap, ceiling)  # exponential, jittered
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in zip(attempts, attempts[1:])]
    assert len({round(g) for g in gaps[:8]}) > 1


@pytest.mark.django_db
def test_past_the_retry_window_events_are_dead_lettered_and_the_admin_redelivers_them(tenant, clock, admin_client, api):
    receiver = Receiver(status=503)
    with receiver:
        sub = subscribe(tenant, receiver.url("/hook"))
        events = emit([recorded_transaction(tenant) for _ in range(3)])
        drain(clock)
        assert set(WebhookEvent.unscoped.values_list("status", flat=True)) == {DeliveryStatus.DEAD}
        last = WebhookEvent.unscoped.get(pk=events[0].pk)
        assert (last.dead_at - last.retry_from).total_seconds() >= 24 * HOURS  # at least 24 h of retries
        receiver.status = 200
        response = admin_client.post("/admin/webhooks/webhookevent/", {"action": "redeliver", "_selected_action": [events[0].pk], "_staff_confirmed": "yes"}, follow=True)
        assert response.status_code == 200
        delivery.deliver_due()
        assert receiver.delivered_ids() == [str(events[0].event_id)]
        # The rest of the dead letters, by subscription (a range: every dead one of it).
        response = admin_client.post("/admin/webhooks/webhooksubscription/", {"action": "redeliver_dead", "_selected_action": [sub.pk], "_staff_confirmed": "yes"}, follow=True)
        assert response.status_code == 200
        delivery.deliver_due()
        assert sorted(receiver.delivered_ids()) == sorted(str(e.event_id) for e in events)
        # Replay through the API: the same ids and bodies again, marked as replays.
        body = {"itemData": {"webhook": {"offchainId": str(sub.offchain_id)}, "fromTime": (timezone.now() - timedelta(minutes=5)).isoformat(), "toTime": (timezone.now() + timedelta(minutes=5)).isoformat()}}
        assert api.call("post", "/api/v1/webhooks/replay", body).json()["scheduled"] == 3
        delivery.deliver_due()
    replayed = receiver.delivered()[-3:]
    assert sorted(r.event_id for r in replayed) == sorted(str(e.event_id) for e in events) and all(r.headers["x-ledger-replay"] for r in replayed)
    assert {r.body for r in replayed} == {e.body.encode() for e in events}


@pytest.mark.django_db
def test_a_disabled_webhook_gets_nothing_until_it_is_enabled_again(tenant, clock, admin_client):
    with Receiver() as receiver:
        sub = subscribe(tenant, receiver.url("/hook"))
        [waiting] = emit([recorded_transaction(tenant)])
        admin_client.post("/admin/webhooks/webhooksubscription/", {"action": "disable", "_selected_action": [sub.pk], "_staff_confirmed": "yes"})
        assert emit([recorded_transaction(tenant)]) == []  # no new events while disabled
        assert delivery.deliver_due() == [] and receiver.received == []
        admin_client.post("/admin/webhooks/webhooksubscription/", {"action": "enable", "_selected_action": [sub.pk], "_staff_confirmed": "yes"})
        delivery.deliver_due()
    assert receiver.delivered_ids() == [str(waiting.event_id)]


@pytest.mark.django_db
def test_a_secret_rotation_signs_with_both_secrets_until_the_overlap_ends(tenant, clock, settings):
    with Receiver() as receiver:
        sub = subscribe(tenant, receiver.url("/hook"))
        old = secret_of(sub)
        with transaction.atomic():
            sub = webhooks.webhook_update(tenant=tenant, subscription=sub, changes={"rotateSigningSecret": True})
        new = secret_of(sub)
        emit([recorded_transaction(tenant)])
        delivery.deliver_due()
        clock.at = sub.previous_valid_until + timedelta(seconds=1)
        emit([recorded_transaction(tenant)])
        delivery.deliver_due()
    during, after = receiver.received
    assert during.headers["x-ledger-signature"].count("v1=") == 2 and after.headers["x-ledger-signature"].count("v1=") == 1
    assert verify_signature(new, during.headers, during.body, tolerance=None) and verify_signature(old, during.headers, during.body, tolerance=None)
    assert verify_signature(new, after.headers, after.body, tolerance=None) and not verify_signature(old, after.headers, after.body, tolerance=None)


@pytest.mark.django_db
def test_redirects_are_not_followed_and_answers_are_read_up_to_the_cap(tenant, clock, settings):
    with Receiver() as elsewhere, Receiver(status=302) as redirecting, Receiver(answer_body=b"x" * 200_000) as chatty:
        redirecting.extra_headers = {"Location": elsewhere.url("/stolen")}
        subscribe(tenant, redirecting.url("/hook"), name="redirecting")
        subscribe(tenant, chatty.url("/hook"), name="chatty")
        emit([recorded_transaction(tenant)])
        outcomes = {o.status_code: o for o in delivery.deliver_due()}
        from ledger_project.outbound import outbound_send

        settings.LEDGER_OUTBOUND_MAX_RESPONSE_BYTES = 1024
        answer = outbound_send(http_client(), "POST", chatty.url("/x"), content=b"{}")
    assert set(outcomes) == {302, 200} and elsewhere.received == []
    assert WebhookEvent.unscoped.get(subscription__name="redirecting").status == DeliveryStatus.PENDING  # a 3xx is a failure, retried
    assert len(outcomes[200].excerpt) == delivery.EXCERPT_CHARS
    assert answer.status_code == 200 and answer.truncated and len(answer.body) == 1024


@pytest.mark.django_db
def test_delivery_checks_the_url_again_before_each_call(tenant, clock, settings):
    with Receiver() as receiver:
        subscribe(tenant, receiver.url("/hook"))
        emit([recorded_transaction(tenant)])
        settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []  # loopback no longer allowed (or the name now resolves there)
        [outcome] = delivery.deliver_due()
    assert outcome.status_code is None and outcome.error.startswith("URL_NOT_ALLOWED") and receiver.received == []


@pytest.mark.django_db
def test_events_reach_instrument_webhooks_only_for_transactions_naming_the_mint(tenant, clock):
    from instruments.tests.factories import FinancialInstrumentFactory

    tx = recorded_transaction(tenant)
    named = Message.from_bytes(bytes(tx.message)).account_keys[1]  # the transfer's destination stands in for a mint here
    instrument = FinancialInstrumentFactory(tenant=tenant, address=str(named))
    other = FinancialInstrumentFactory(tenant=tenant)
    with transaction.atomic():
        for inst in (instrument, other):
            webhooks.webhook_sync_instrument(tenant=tenant, cluster="CHAIN_LOCALNET", instrument_offchain_id=inst.offchain_id, instrument_address=inst.address,
                                             hooks=[{"name": f"hook-{inst.pk}", "endpointUrl": "http://127.0.0.1:9/x"}])
    events = emit([tx], WebhookEventType.PRE_SUBMIT)
    assert [e.subscription.instrument_address for e in events] == [str(named)]
    assert json.loads(events[0].body)["data"]["transaction"]["status"] == "FINALIZED"


class _CrlfTokens(TokenServer):
    """A token endpoint issuing access tokens a header cannot carry (CR/LF inside)."""

    def answer(self, path, headers, body):
        status, payload, extra = super().answer(path, headers, body)
        if status == 200:
            issued = json.loads(payload)
            issued["access_token"] += "\r\nX-Injected: 1"
            with self.lock:
                self.issued[-1] = issued["access_token"]
            payload = json.dumps(issued).encode()
        return status, payload, extra


def _quoted(secret: str) -> set[str]:
    """How a library may quote ``secret`` in a message (written here from what httpx/h11
    print, not from the service's scrubber): as is, str/bytes repr, and its pieces between
    control characters."""
    import re

    forms = {secret, repr(secret)[1:-1], repr(secret.encode())[2:-1]}
    forms |= {piece for piece in re.split(r"[\x00-\x20]+", secret) if len(piece) >= 8}
    return forms


_LEAKY_KEY = "leaky-" + "4f1c9e2a7b" * 2


def _api_key(value: str) -> dict:
    return {"apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": value}}


@pytest.mark.django_db
@pytest.mark.parametrize("failure", [
    "crlf_key_stored_before_the_rule", "nul_in_key", "key_with_edge_space", "receiver_echoes_the_key", "receiver_down",
    "no_answer_in_time", "url_refused", "token_endpoint_refuses", "token_with_crlf",
])
def test_no_stored_error_or_excerpt_carries_a_secret_whatever_the_failure(tenant, clock, settings, caplog, failure):
    """docs/webhooks.md, Delivery: every failure mode of an attempt, each with the secrets it
    handles; the attempts' errors and excerpts, the event's last error and the logs are
    searched for every secret in every quoted form."""
    caplog.set_level(logging.DEBUG)
    with Receiver() as receiver, TokenServer() as tokens, _CrlfTokens() as crlf_tokens:
        secrets = [_LEAKY_KEY]
        data = _api_key(_LEAKY_KEY)
        if failure == "crlf_key_stored_before_the_rule":
            data = _api_key(_LEAKY_KEY + "\r\nX-Injected: 1")  # the service layer: rows written before the API refused it
        elif failure == "nul_in_key":
            data = _api_key(_LEAKY_KEY[:10] + "\x00" + _LEAKY_KEY[10:])
        elif failure == "key_with_edge_space":
            data = _api_key(_LEAKY_KEY + " ")
        elif failure == "receiver_echoes_the_key":
            receiver.status, receiver.decide = 500, lambda r: (setattr(receiver, "answer_body", f"bad key {r.headers.get('x-api-key')!r}".encode()), 500)[1]
        elif failure == "receiver_down":
            receiver.stop()
        elif failure == "no_answer_in_time":
            receiver.delay, data["timeout"] = 1.5, 1
        elif failure == "url_refused":
            settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
        elif failure in ("token_endpoint_refuses", "token_with_crlf"):
            server = tokens if failure == "token_endpoint_refuses" else crlf_tokens
            client_secret = server.client_secret
            if failure == "token_endpoint_refuses":
                server.client_secret = "not-the-stored-one"
            data = {"apiKeyAuthConfig": None, "oauth2AuthConfig": {"accessTokenUrl": server.url("/oauth/token"), "audience": server.audience,
                                                                  "flowType": "CLIENT_CREDENTIALS", "clientId": server.client_id, "clientSecret": client_secret}}
            secrets = [client_secret]
        sub = subscribe(tenant, receiver.url("/hook"), **data)
        emit([recorded_transaction(tenant)])
        [outcome] = delivery.deliver_due()
        secrets += [secret_of(sub), *tokens.issued, *crlf_tokens.issued]
    assert not outcome.delivered and (outcome.error or outcome.status_code == 500)
    stored = [(a.error, a.response_excerpt) for a in WebhookAttempt.objects.all()] + [(e.last_error,) for e in WebhookEvent.unscoped.all()]
    text = "\n".join(part for row in stored for part in row) + "\n" + caplog.text
    leaked = [(secret, form) for secret in secrets for form in _quoted(secret) if form in text]
    assert not leaked, f"{failure}: {leaked} in {text!r}"


@pytest.mark.django_db
def test_one_change_to_two_webhooks_of_one_receiver_is_kept_twice_by_the_documented_dedup_key(tenant, clock):
    """One change goes to every webhook with the same id (it names the change). A receiver
    serving two webhooks that deduplicated on id alone, as docs/webhooks.md advised, dropped
    one; the advice (and the payload's description in the OpenAPI) is the pair
    (X-Ledger-Webhook-Id, id)."""
    from pathlib import Path

    from webhooks.serializers import PostSubmitEvent

    with Receiver() as receiver:
        first, second = subscribe(tenant, receiver.url("/hook"), name="first"), subscribe(tenant, receiver.url("/hook"), name="second")
        emit([recorded_transaction(tenant)])
        delivery.deliver_due()
    got = receiver.delivered()
    assert len(got) == 2 and len({r.event_id for r in got}) == 1  # the same change, the same id
    kept = {(r.headers["x-ledger-webhook-id"], r.json["id"]) for r in got}  # the documented key
    assert {webhook for webhook, _ in kept} == {str(first.offchain_id), str(second.offchain_id)}
    advice = " ".join(Path(__file__).resolve().parents[2].joinpath("docs", "webhooks.md").read_text().split())
    assert "deduplicate on the webhook and the event: (`X-Ledger-Webhook-Id`, `id`)" in advice
    assert "(X-Ledger-Webhook-Id, id)" in PostSubmitEvent().fields["id"].help_text


def test_a_stopping_worker_ends_the_loop_and_gives_back_the_claims_it_did_not_send(tenant, settings, monkeypatch):
    """SIGTERM (ledger_project/shutdown.py) while events wait in the loop's send queue: the
    send under way finishes and is recorded, the loop claims nothing more, and the waiting
    events are due again at once, with no attempt (not held until their claim lapses)."""
    settings.LEDGER_WEBHOOK_DELIVERY_THREADS = 1
    monkeypatch.setattr(delivery, "_pool", None)  # one sender thread: the others wait in its queue
    stop = []
    monkeypatch.setattr(delivery, "stopping", lambda: bool(stop))
    with Receiver() as receiver:
        receiver.decide = lambda r: stop.append(1) or 200  # the signal comes during the first send
        subscribe(tenant, receiver.url("/hook"))
        events = emit([recorded_transaction(tenant) for _ in range(5)])
        began = timezone.now()
        try:
            delivery.delivery_run(holder="test", run_seconds=60)
        finally:
            delivery._executor().shutdown()
    assert len(receiver.received) == 1
    statuses = {e.pk: (e.status, e.attempts, e.claim_token) for e in WebhookEvent.unscoped.filter(pk__in=[e.pk for e in events])}
    delivered = [pk for pk, (status, _, _) in statuses.items() if status == DeliveryStatus.DELIVERED]
    assert len(delivered) == 1
    waiting = WebhookEvent.unscoped.exclude(pk__in=delivered).filter(pk__in=[e.pk for e in events])
    assert all(e.status == DeliveryStatus.PENDING and e.attempts == 0 and e.claim_token == "" and e.next_attempt_at <= timezone.now() for e in waiting)
    assert waiting.count() == 4 and not WebhookAttempt.objects.filter(event__in=waiting).exists()
    from transactions.pump import lease_live

    assert not lease_live(delivery.LEASE) and timezone.now() - began < timedelta(seconds=10)
