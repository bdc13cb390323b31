"""The webhook registry through the API (docs/webhooks.md, "Registry"): create, update,
disable, rotate, fetch, list, replay; secrets write-only (absent from answers, logs and the
database in clear); an instrument's webhooks are subscriptions too."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from conftest import assert_error, make_client
from instruments.tests.factories import FinancialInstrumentFactory
from tenancy.tests.factories import issue_key
from webhooks.models import WebhookEvent, WebhookSubscription
from webhooks.tests.webhookkit import verify_signature
from webhooks.credentials import opened_auth

BASE = "/api/v1/webhooks"
API_KEY_SECRET = "key-value-never-shown-1f3a"
CLIENT_SECRET = "client-secret-never-shown-77c1"
PASSWORD = "password-never-shown-0b9e"
SECRETS = (API_KEY_SECRET, CLIENT_SECRET, PASSWORD)


@pytest.fixture(autouse=True)
def local_endpoints(settings):
    """Tests call endpoints on this machine: what `make run` allows (docs/webhooks.md, Safety)."""
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def hook(**extra) -> dict:
    return {"name": "ops", "endpointUrl": "http://127.0.0.1:9/hook", "eventTypes": ["transaction.post_submit"],
            "apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": API_KEY_SECRET}, "timeout": 5, **extra}


def created(api, **extra) -> dict:
    response = api.call("post", BASE, {"itemData": hook(**extra)})
    assert response.status_code == 201, response.json()
    return response.json()["newWebhook"]


def _all_rows_text() -> str:
    """Every column of every webhook table (and the stored idempotent answers), as the
    database stores them."""
    from tenancy.models import IdempotencyRecord

    with connection.cursor() as cursor:
        text = []
        for model in (WebhookSubscription, WebhookEvent, IdempotencyRecord):
            cursor.execute(f"SELECT * FROM {model._meta.db_table}")
            text += [" ".join(bytes(v).decode(errors="replace") if isinstance(v, (bytes, memoryview)) else str(v) for v in row) for row in cursor.fetchall()]
    return "\n".join(text)


@pytest.mark.django_db
def test_create_answers_the_webhook_without_its_secrets_and_stores_them_sealed(api, tenant, caplog):
    caplog.set_level(logging.DEBUG)
    oauth = {"accessTokenUrl": "http://127.0.0.1:9/token", "audience": "aud", "flowType": "CLIENT_CREDENTIALS", "clientId": "cid",
             "clientSecret": CLIENT_SECRET, "userName": "u", "password": PASSWORD}
    response = api.call("post", BASE, {"itemData": hook(apiKeyAuthConfig=None, oauth2AuthConfig=oauth, eventTypes=["transaction.pre_submit", "account.network_event"])},
                        request_id=uuid.uuid4())  # idempotent: its answer is stored
    assert response.status_code == 201, response.json()
    body = response.json()["newWebhook"]
    assert body["eventTypes"] == ["transaction.pre_submit", "account.network_event"] and body["status"] == "ACTIVE" and body["source"] == "REGISTRY"
    assert body["oauth2AuthConfig"]["clientSecret"] == "********" and body["oauth2AuthConfig"]["password"] == "********"
    assert body["oauth2AuthConfig"]["clientId"] == "cid" and body["apiKeyAuthConfig"] is None and body["timeout"] == 5
    assert body["tenantOrganizationId"] == "ACME" and body["svmCluster"] == "CHAIN_LOCALNET"
    api_key_body = created(api, name="second")
    assert api_key_body["apiKeyAuthConfig"] == {"httpHeaderName": "X-Api-Key", "keyValue": "********"}
    details = api.call("post", f"{BASE}/single", {"itemData": {"offchainId": body["offchainId"]}})
    listed = api.call("post", f"{BASE}/bulk/detailed", {})
    for response in (details, listed):
        assert response.status_code == 200
    answers = json.dumps(body) + json.dumps(api_key_body) + details.content.decode() + listed.content.decode()
    stored = _all_rows_text()
    logged = caplog.text
    for secret in SECRETS:
        assert secret not in answers and secret not in stored and secret not in logged
    sub = WebhookSubscription.unscoped.get(offchain_id=body["offchainId"])
    assert set(sub.signing_secret) == {"sealed"} and "whsec_" not in stored
    from webhooks.credentials import opened_auth

    assert opened_auth(sub)["oauth2AuthConfig"]["clientSecret"] == CLIENT_SECRET  # sealed, not lost


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "code", "field"), [
    ({"oauth2AuthConfig": {"accessTokenUrl": "http://127.0.0.1:9/t", "flowType": "CLIENT_CREDENTIALS", "clientId": "c", "clientSecret": "s"}}, "CONFLICTING_FIELDS", "itemData.oauth2AuthConfig"),
    ({"endpointUrl": "http://169.254.169.254/latest"}, "URL_NOT_ALLOWED", "itemData.endpointUrl"),
    ({"endpointUrl": "http://10.0.0.8/hook"}, "URL_NOT_ALLOWED", "itemData.endpointUrl"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "Content-Type", "keyValue": "k"}}, "RESERVED_HEADER", "itemData.apiKeyAuthConfig.httpHeaderName"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "X-Ledger-Signature", "keyValue": "k"}}, "RESERVED_HEADER", "itemData.apiKeyAuthConfig.httpHeaderName"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "Bad Header", "keyValue": "k"}}, "INVALID", "itemData.apiKeyAuthConfig.httpHeaderName"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": API_KEY_SECRET + "\r\nX-Injected: 1"}}, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": API_KEY_SECRET + "\n"}}, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": "a\x00b"}}, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue"),
    ({"apiKeyAuthConfig": {"httpHeaderName": "X-Api-Key", "keyValue": "clé"}}, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue"),
    ({"eventTypes": ["transaction.everything"]}, "INVALID_ENUM", "itemData.eventTypes[0]"),
    ({"eventTypes": []}, "TOO_SHORT", "itemData.eventTypes"),
    ({"timeout": 121}, "OUT_OF_RANGE", "itemData.timeout"),
])
def test_create_refuses_what_it_cannot_deliver_to_and_changes_nothing(api, change, code, field):
    assert_error(api.call("post", BASE, {"itemData": hook(**change)}), 400, code, field)
    assert WebhookSubscription.unscoped.count() == 0


@pytest.mark.django_db
def test_a_key_value_with_cr_or_lf_is_refused_without_echoing_it(api, tenant):
    """An API key is sent as a header value: CR/LF would make every delivery fail with an
    error quoting the key (docs/webhooks.md, Delivery). Refused on create, on update, and
    in an instrument's postTransactionSubmitWebhooks; the answer never echoes the value."""
    leaky = API_KEY_SECRET + "\r\nX-Injected: 1"
    bad = {"httpHeaderName": "X-Api-Key", "keyValue": leaky}
    response = api.call("post", BASE, {"itemData": hook(apiKeyAuthConfig=bad)})
    assert_error(response, 400, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue")
    body = created(api)
    response2 = api.call("patch", BASE, {"itemData": {"webhook": {"offchainId": body["offchainId"]}, "apiKeyAuthConfig": bad}})
    assert_error(response2, 400, "INVALID_HEADER_VALUE", "itemData.apiKeyAuthConfig.keyValue")
    instrument = FinancialInstrumentFactory(tenant=tenant)
    hooks = [{"endpointUrl": "https://hooks.example/tx", "name": "ops", "apiKeyAuthConfig": bad}]
    response3 = api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": {"offchainId": str(instrument.mint_account.offchain_id)}, "postTransactionSubmitWebhooks": hooks}})
    assert_error(response3, 400, "INVALID_HEADER_VALUE", "itemData.postTransactionSubmitWebhooks[0].apiKeyAuthConfig.keyValue")
    reserved = [{**hooks[0], "apiKeyAuthConfig": {"httpHeaderName": "X-Ledger-Signature", "keyValue": "k"}}]
    response4 = api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": {"offchainId": str(instrument.mint_account.offchain_id)}, "postTransactionSubmitWebhooks": reserved}})
    assert_error(response4, 400, "RESERVED_HEADER", "itemData.postTransactionSubmitWebhooks[0].apiKeyAuthConfig.httpHeaderName")
    for answer in (response, response2, response3):
        assert API_KEY_SECRET not in answer.content.decode()
    assert WebhookSubscription.unscoped.count() == 1 and opened_auth(WebhookSubscription.unscoped.get())["apiKeyAuthConfig"]["keyValue"] == API_KEY_SECRET


@pytest.mark.django_db
def test_loopback_and_http_are_refused_unless_the_settings_allow_them(api, settings):
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    assert_error(api.call("post", BASE, {"itemData": hook()}), 400, "URL_NOT_ALLOWED", "itemData.endpointUrl")
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = False
    assert_error(api.call("post", BASE, {"itemData": hook()}), 400, "URL_NOT_ALLOWED", "itemData.endpointUrl")
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_EMBEDDED, settings.DEBUG = False, False  # a production process: https only, whatever ALLOW_HTTP says
    assert_error(api.call("post", BASE, {"itemData": hook()}), 400, "URL_NOT_ALLOWED", "itemData.endpointUrl")
    settings.LEDGER_EMBEDDED = True
    assert api.call("post", BASE, {"itemData": hook(endpointUrl="https://hooks.example/tx")}).status_code == 201


@pytest.mark.django_db
def test_update_is_a_patch_and_disables_rotates_and_replaces_auth(api, tenant):
    body = created(api)
    ident = {"offchainId": body["offchainId"]}
    response = api.call("patch", BASE, {"itemData": {"webhook": ident, "timeout": 9, "status": "DISABLED"}})
    assert response.status_code == 200, response.json()
    updated = response.json()["updatedWebhook"]
    assert updated["timeout"] == 9 and updated["status"] == "DISABLED" and updated["name"] == "ops" and updated["apiKeyAuthConfig"]["keyValue"] == "********"
    sub = WebhookSubscription.unscoped.get(offchain_id=body["offchainId"])
    from webhooks.credentials import opened_auth, signing_secrets

    assert opened_auth(sub)["apiKeyAuthConfig"]["keyValue"] == API_KEY_SECRET  # untouched by a patch that does not name it
    first, _ = signing_secrets(sub)
    rotated = api.call("patch", BASE, {"itemData": {"webhook": ident, "rotateSigningSecret": True, "status": "ACTIVE"}}).json()["updatedWebhook"]
    assert rotated["status"] == "ACTIVE" and rotated["signingSecretRotatedAt"] and rotated["previousSigningSecretValidUntil"]
    sub.refresh_from_db()
    current, previous = signing_secrets(sub)
    assert previous == first and current != first and current.startswith("whsec_")
    oauth = {"accessTokenUrl": "http://127.0.0.1:9/t", "flowType": "CLIENT_CREDENTIALS", "clientId": "c", "clientSecret": CLIENT_SECRET}
    swapped = api.call("patch", BASE, {"itemData": {"webhook": ident, "oauth2AuthConfig": oauth}}).json()["updatedWebhook"]
    assert swapped["apiKeyAuthConfig"] is None and swapped["oauth2AuthConfig"]["clientSecret"] == "********"
    assert_error(api.call("patch", BASE, {"itemData": {"webhook": {"offchainId": str(uuid.uuid4())}, "timeout": 3}}), 404, "NOT_FOUND", "itemData.webhook")


@pytest.mark.django_db
def test_the_signing_secret_needs_the_sensitive_data_role_and_shows_both_during_a_rotation(api, tenant):
    body = created(api)
    ident = {"offchainId": body["offchainId"]}
    assert_error(api.call("post", f"{BASE}/single/signing-secret", {"itemData": ident}), 403, "MISSING_ROLE")
    sensitive = make_client(issue_key(tenant, roles=["PLATFORM_SENSITIVE_DATA_ACCESS"]).secret)
    response = sensitive.call("post", f"{BASE}/single/signing-secret", {"itemData": ident})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    first = response.json()
    assert first["signingSecret"].startswith("whsec_") and first["previousSigningSecret"] is None
    api.call("patch", BASE, {"itemData": {"webhook": ident, "rotateSigningSecret": True}})
    second = sensitive.call("post", f"{BASE}/single/signing-secret", {"itemData": ident}).json()
    assert second["previousSigningSecret"] == first["signingSecret"] != second["signingSecret"] and second["previousValidUntil"]
    # What the test's own receiver code verifies with: the secret signs X-Ledger-Signature.
    from webhooks.attempt import signature_header

    headers = {"x-ledger-signature": signature_header([second["signingSecret"].encode(), first["signingSecret"].encode()], 1_700_000_000, b"{}")}
    assert verify_signature(second["signingSecret"], headers, b"{}", tolerance=None) and verify_signature(first["signingSecret"], headers, b"{}", tolerance=None)


@pytest.mark.django_db
def test_other_organizations_webhooks_are_like_missing(api, other_api):
    theirs = created(other_api)
    for method, path, body in (("post", f"{BASE}/single", {"itemData": {"offchainId": theirs["offchainId"]}}),
                               ("patch", BASE, {"itemData": {"webhook": {"offchainId": theirs["offchainId"]}, "status": "DISABLED"}}),
                               ("post", f"{BASE}/replay", {"itemData": {"webhook": {"offchainId": theirs["offchainId"]}, "fromTime": "2020-01-01T00:00:00Z", "toTime": "2030-01-01T00:00:00Z"}})):
        assert_error(api.call(method, path, body), 404, "NOT_FOUND")
    assert api.call("post", f"{BASE}/bulk/identifiers", {}).json() == {"count": 0, "items": []}
    assert WebhookSubscription.unscoped.get(offchain_id=theirs["offchainId"]).status == "ACTIVE"


@pytest.mark.django_db
def test_bulk_fetch_pages_filters_and_trims_by_detail_level(api):
    for name in ("a", "b", "c"):
        created(api, name=name)
    disabled = created(api, name="d")
    api.call("patch", BASE, {"itemData": {"webhook": {"offchainId": disabled["offchainId"]}, "status": "DISABLED"}})
    query = {"itemQuery": {"filter": [{"fieldName": "status", "filterValues": [{"dataType": "TEXT", "valueString": "ACTIVE"}]}], "sort": [{"fieldName": "name", "sortDirection": "ASC"}], "limit": 2}}
    page = api.call("post", f"{BASE}/bulk/compact", query).json()
    assert page["count"] == 3 and [item["name"] for item in page["items"]] == ["a", "b"]
    assert set(page["items"][0]) == {"offchainId", "name", "endpointUrl", "eventTypes", "status", "source"}
    assert set(api.call("post", f"{BASE}/bulk/identifiers", {}).json()["items"][0]) == {"offchainId"}
    assert_error(api.call("post", f"{BASE}/bulk/everything", {}), 400, "INVALID_ENUM", "detail-level")
    assert_error(api.call("post", f"{BASE}/bulk/detailed", {"itemQuery": {"filter": [{"fieldName": "secret", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}]}}), 400, "UNKNOWN_FIELD_NAME")


@pytest.mark.django_db
def test_replay_makes_a_time_range_of_events_due_again_in_order(api, tenant):
    from webhooks.models import DeliveryStatus

    body = created(api)
    sub = WebhookSubscription.unscoped.get(offchain_id=body["offchainId"])
    now = timezone.now()
    events = [WebhookEvent.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", event_id=uuid.uuid4(), subscription=sub, event_type="transaction.post_submit", subject=f"transaction:{i}",
                                           body="{}", occurred_at=now, next_attempt_at=now, retry_from=now, status=status)
              for i, status in enumerate([DeliveryStatus.DELIVERED, DeliveryStatus.DEAD, DeliveryStatus.DELIVERED])]
    WebhookEvent.unscoped.filter(pk=events[2].pk).update(created_at=now - timedelta(days=3))
    replay = {"webhook": {"offchainId": body["offchainId"]}, "fromTime": (now - timedelta(hours=1)).isoformat(), "toTime": (now + timedelta(hours=1)).isoformat()}
    response = api.call("post", f"{BASE}/replay", {"itemData": replay})
    assert response.status_code == 200, response.json()
    assert response.json() == {"webhook": {"offchainId": body["offchainId"]}, "scheduled": 2}
    statuses = {e.pk: (e.status, e.replays) for e in WebhookEvent.unscoped.all()}
    assert statuses == {events[0].pk: ("PENDING", 1), events[1].pk: ("PENDING", 1), events[2].pk: ("DELIVERED", 0)}
    assert_error(api.call("post", f"{BASE}/replay", {"itemData": {**replay, "fromTime": replay["toTime"], "toTime": replay["fromTime"]}}), 400, "INVALID_RANGE", "itemData.toTime")


@pytest.mark.django_db
def test_an_instruments_webhooks_are_subscriptions_kept_in_step_with_its_list(api, tenant, localnet_url):
    from webhooks.models import DeliveryStatus

    instrument = FinancialInstrumentFactory(tenant=tenant)
    lookup = {"offchainId": str(instrument.offchain_id)}
    hooks = [{"endpointUrl": "http://127.0.0.1:9/a", "name": "a", "apiKeyAuthConfig": {"httpHeaderName": "X-Key", "keyValue": API_KEY_SECRET}},
             {"endpointUrl": "http://127.0.0.1:9/b", "name": "b", "timeout": 3}]
    response = api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": lookup, "postTransactionSubmitWebhooks": hooks}})
    assert response.status_code == 200, response.json()
    listed = api.call("post", f"{BASE}/bulk/detailed", {"itemQuery": {"sort": [{"fieldName": "name", "sortDirection": "ASC"}]}}).json()["items"]
    assert [(w["name"], w["source"], w["eventTypes"], w["financialInstrument"]) for w in listed] == [
        (name, "FINANCIAL_INSTRUMENT", ["transaction.pre_submit", "transaction.post_submit"], {"onchainId": instrument.address, "offchainId": str(instrument.offchain_id)})
        for name in ("a", "b")]
    a = WebhookSubscription.unscoped.get(name="a")
    from webhooks.credentials import signing_secrets

    secret = signing_secrets(a)[0]
    assert_error(api.call("patch", BASE, {"itemData": {"webhook": {"offchainId": str(a.offchain_id)}, "endpointUrl": "http://127.0.0.1:9/x"}}), 400, "MANAGED_BY_INSTRUMENT", "itemData.endpointUrl")
    assert api.call("patch", BASE, {"itemData": {"webhook": {"offchainId": str(a.offchain_id)}, "status": "DISABLED"}}).status_code == 200
    now = timezone.now()
    pending = WebhookEvent.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", event_id=uuid.uuid4(), subscription=WebhookSubscription.unscoped.get(name="b"),
                                           event_type="transaction.post_submit", subject="transaction:x", body="{}", occurred_at=now, next_attempt_at=now, retry_from=now)
    # a stays (same name: same subscription and signing secret, new URL); b goes; c is new.
    hooks = [{**hooks[0], "endpointUrl": "http://127.0.0.1:9/a2"}, {"endpointUrl": "http://127.0.0.1:9/c", "name": "c"}]
    assert api.call("patch", "/api/v1/financial-instruments", {"itemData": {"mintAccount": lookup, "postTransactionSubmitWebhooks": hooks}}).status_code == 200
    rows = {s.name: s for s in WebhookSubscription.unscoped.all()}
    assert rows["a"].pk == a.pk and rows["a"].endpoint_url.endswith("/a2") and signing_secrets(rows["a"])[0] == secret and rows["a"].status == "DISABLED"
    assert rows["b"].status == "REMOVED" and rows["c"].status == "ACTIVE"
    pending.refresh_from_db()
    assert pending.status == DeliveryStatus.CANCELLED
    assert API_KEY_SECRET not in _all_rows_text()
