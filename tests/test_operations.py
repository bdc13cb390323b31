"""Operations: /healthz, JSON logs, management commands, OpenAPI, admin."""

import io
import json
import logging

import pytest
from django.core.management import call_command

from ledger_project.logging import JsonFormatter, RequestIdFilter, request_id_var
from tenancy.models import ApiKey


@pytest.mark.django_db
def test_healthz_reports_database_broker_and_clusters(client, settings):
    settings.LEDGER_CLUSTERS = {"CHAIN_LOCALNET": "http://127.0.0.1:9"}  # nothing listens there
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["clusters"]["CHAIN_LOCALNET"]["status"] == "down"
    assert body["status"] == "degraded"


@pytest.mark.django_db
def test_healthz_needs_no_auth_and_only_get(client):
    assert client.post("/healthz").status_code == 405


def test_json_log_line_carries_request_id_and_drops_secrets():
    record = logging.LogRecord("ledger.test", logging.INFO, __file__, 1, "hello %s", ("world",), None)
    record.client_secret = "lsk_should_not_appear"
    record.keyId = "ak_1"
    token = request_id_var.set("rid-123")
    try:
        RequestIdFilter().filter(record)
    finally:
        request_id_var.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "hello world" and line["requestId"] == "rid-123" and line["keyId"] == "ak_1"
    assert "lsk_should_not_appear" not in json.dumps(line)


@pytest.mark.django_db
def test_create_tenant_and_api_key_commands_print_json():
    out = io.StringIO()
    call_command("create_tenant", "--external-id", "INIT", "--name", "Initech", stdout=out)
    assert json.loads(out.getvalue())["externalId"] == "INIT"
    out = io.StringIO()
    call_command("create_api_key", "--org", "INIT", "--roles", "PLATFORM_SENSITIVE_DATA_ACCESS,PLATFORM_UPDATE_DEBIT_API_KEYS", stdout=out)
    issued = json.loads(out.getvalue())
    assert set(issued) == {"keyId", "secret", "organizationExternalId", "roles"}
    assert issued["roles"] == ["PLATFORM_SENSITIVE_DATA_ACCESS", "PLATFORM_UPDATE_DEBIT_API_KEYS"]
    assert ApiKey.objects.get(key_id=issued["keyId"]).organization.external_id == "INIT"


@pytest.mark.django_db
def test_create_api_key_refuses_unknown_org_and_role():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_api_key", "--org", "NOPE", stdout=io.StringIO())
    call_command("create_tenant", "--external-id", "R", stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("create_api_key", "--org", "R", "--roles", "ROOT", stdout=io.StringIO())


@pytest.mark.django_db
def test_openapi_schema_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "/api/v1/auth/whoami" in (tmp_path / "schema.yaml").read_text()


@pytest.mark.django_db
def test_openapi_served_as_json_and_docs_page(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200 and "/api/v1/auth/token" in response.json()["paths"]
    assert client.get("/api/docs/").status_code == 200


@pytest.mark.django_db
def test_admin_creates_key_and_shows_secret_once(admin_client, tenant):
    response = admin_client.post(
        "/admin/tenancy/apikey/add/",
        {"organization": tenant.pk, "name": "ops", "roles": ["PLATFORM_APPROVE_TRANSACTIONS"], "is_active": "on", "rate_limit_per_minute": ""},
        follow=True,
    )
    assert response.status_code == 200
    key = ApiKey.objects.get(name="ops")
    assert key.roles == ["PLATFORM_APPROVE_TRANSACTIONS"]
    messages = [str(m) for m in response.context["messages"]]
    assert any("lsk_" in m and key.key_id in m for m in messages)
    secret = next(m for m in messages if "lsk_" in m).rsplit(" ", 1)[-1]
    from tenancy.services import api_key_for_token

    assert api_key_for_token(secret).pk == key.pk
    page = admin_client.get(f"/admin/tenancy/apikey/{key.pk}/change/").content.decode()
    assert secret not in page and key.secret_hash not in page


@pytest.mark.django_db
def test_bootstrap_demo_creates_key_once():
    out = io.StringIO()
    call_command("bootstrap_demo", stdout=out)
    issued = json.loads(out.getvalue().splitlines()[-1])
    assert issued["organizationExternalId"] == "DEMO" and issued["secret"].startswith("lsk_")
    out = io.StringIO()
    call_command("bootstrap_demo", stdout=out)
    assert "exist already" in out.getvalue() and ApiKey.objects.count() == 1


@pytest.mark.django_db
def test_admin_account_pages_show_no_key_material(admin_client, api, localnet_url):
    created = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True}}).json()["newAccount"]
    from accounts.models import Account
    from custody.models import ManagedKey

    account = Account.unscoped.get(offchain_id=created["offchainId"])
    key = ManagedKey.objects.get(public_key=account.address)
    for url in ("/admin/accounts/account/", f"/admin/accounts/account/{account.pk}/change/", "/admin/custody/managedkey/", f"/admin/custody/managedkey/{key.pk}/change/",
                "/admin/transactions/transaction/", "/admin/accounts/privatekeydisclosure/", "/admin/accounts/account/?q=" + account.address[:10]):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert bytes(key.ciphertext).hex() not in page and "wrapped_dek" not in page
