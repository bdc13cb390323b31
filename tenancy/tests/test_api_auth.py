"""Authentication: bearer secrets, access tokens, inactive keys, roles and tenancy override."""

import base64
from urllib.parse import urlencode

import pytest
from django.core import signing

from conftest import assert_error, make_client
from tenancy import services
from tenancy.roles import Role
from tenancy.tests.factories import issue_key

WHOAMI = "/api/v1/auth/whoami"
TOKEN = "/api/v1/auth/token"

pytestmark = pytest.mark.django_db


def test_no_authorization_header_is_401(anon):
    response = anon.get(WHOAMI)
    body = assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert body["requestId"]


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Token xyz", "Bearer not-a-key"])
def test_malformed_or_unknown_bearer_is_401(db, header):
    client = make_client(None)
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_error(client.get(WHOAMI), 401, "UNAUTHENTICATED")


def test_valid_secret_authenticates_and_names_key(api, api_key, tenant):
    response = api.get(WHOAMI)
    assert response.status_code == 200
    body = response.json()
    assert body["keyId"] == api_key.api_key.key_id
    assert body["organization"]["externalId"] == "ACME"
    assert body["actingOrganization"]["externalId"] == "ACME"
    assert body["svmCluster"] == "CHAIN_LOCALNET"
    assert "secret" not in response.content.decode()


def test_inactive_key_is_401(api, api_key):
    services.api_key_deactivate(api_key=api_key.api_key)
    assert_error(api.get(WHOAMI), 401, "API_KEY_INACTIVE")


def test_inactive_organization_is_401(api, tenant):
    services.tenant_set_active(tenant=tenant, active=False)
    assert_error(api.get(WHOAMI), 401, "API_KEY_INACTIVE")


def test_secret_is_stored_only_as_hash(api_key):
    api_key.api_key.refresh_from_db()
    assert api_key.secret not in str(vars(api_key.api_key))
    assert api_key.api_key.secret_hash == services.hash_secret(api_key.secret)


class TestAccessToken:
    def test_client_credentials_json_issues_working_token(self, anon, api_key):
        response = anon.post(TOKEN, {"grant_type": "client_credentials", "client_id": api_key.api_key.key_id, "client_secret": api_key.secret}, format="json")
        assert response.status_code == 200
        body = response.json()
        assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
        assert response["Cache-Control"] == "no-store"
        assert make_client(body["access_token"]).get(WHOAMI).status_code == 200

    def test_form_and_basic_auth_are_accepted(self, anon, api_key):
        form = anon.post(TOKEN, urlencode({"grant_type": "client_credentials", "client_id": api_key.api_key.key_id, "client_secret": api_key.secret}), content_type="application/x-www-form-urlencoded")
        assert form.status_code == 200
        basic = make_client(None)
        basic.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"{api_key.api_key.key_id}:{api_key.secret}".encode()).decode())
        assert basic.post(TOKEN, {"grant_type": "client_credentials"}, format="json").status_code == 200

    def test_wrong_secret_is_401(self, anon, api_key):
        response = anon.post(TOKEN, {"grant_type": "client_credentials", "client_id": api_key.api_key.key_id, "client_secret": "nope"}, format="json")
        assert_error(response, 401, "INVALID_CLIENT")

    def test_wrong_grant_type_is_400(self, anon, api_key):
        response = anon.post(TOKEN, {"grant_type": "password", "client_id": api_key.api_key.key_id, "client_secret": api_key.secret}, format="json")
        assert_error(response, 400, "INVALID_ENUM", "grant_type")

    def test_expired_token_is_401(self, api_key, monkeypatch):
        token = services.access_token_issue(client_id=api_key.api_key.key_id, client_secret=api_key.secret)["access_token"]
        real_time = signing.time.time
        monkeypatch.setattr(signing.time, "time", lambda: real_time() + 3601)
        assert_error(make_client(token).get(WHOAMI), 401, "TOKEN_EXPIRED")

    def test_tampered_token_is_401(self, api_key):
        token = services.access_token_issue(client_id=api_key.api_key.key_id, client_secret=api_key.secret)["access_token"]
        assert_error(make_client(token[:-2] + "xx").get(WHOAMI), 401, "UNAUTHENTICATED")

    def test_deactivating_key_kills_its_tokens(self, api_key):
        token = services.access_token_issue(client_id=api_key.api_key.key_id, client_secret=api_key.secret)["access_token"]
        services.api_key_deactivate(api_key=api_key.api_key)
        assert_error(make_client(token).get(WHOAMI), 401, "API_KEY_INACTIVE")


class TestTenancyOverride:
    def test_override_without_role_is_403(self, api, other_tenant):
        response = api.post(WHOAMI, {"tenancyConfig": {"overrideOrganizationExternalId": "GLOBEX"}}, format="json")
        assert_error(response, 403, "MISSING_ROLE", "tenancyConfig.overrideOrganizationExternalId")

    def test_override_with_role_acts_for_other_org(self, tenant, other_tenant):
        client = make_client(issue_key(tenant, roles=[Role.PLATFORM_CROSS_TENANT_ACCESS]).secret)
        response = client.post(WHOAMI, {"tenancyConfig": {"overrideOrganizationExternalId": "GLOBEX"}}, format="json")
        assert response.status_code == 200
        assert response.json()["actingOrganization"]["externalId"] == "GLOBEX"

    def test_override_naming_own_org_needs_no_role(self, api):
        response = api.post(WHOAMI, {"tenancyConfig": {"overrideOrganizationExternalId": "ACME"}}, format="json")
        assert response.status_code == 200

    def test_override_to_unknown_org_is_404(self, tenant):
        client = make_client(issue_key(tenant, roles=[Role.PLATFORM_CROSS_TENANT_ACCESS]).secret)
        response = client.post(WHOAMI, {"tenancyConfig": {"overrideOrganizationExternalId": "NOPE"}}, format="json")
        assert_error(response, 404, "ORGANIZATION_NOT_FOUND")

    def test_override_of_wrong_type_is_400(self, api):
        response = api.post(WHOAMI, {"tenancyConfig": {"overrideOrganizationExternalId": 5}}, format="json")
        assert_error(response, 400, "INVALID_TYPE", "tenancyConfig.overrideOrganizationExternalId")


class TestClusters:
    def test_unknown_cluster_is_400(self, api):
        assert_error(api.get(WHOAMI + "?svmCluster=CHAIN_NOWHERE"), 400, "INVALID_CLUSTER", "svmCluster")

    def test_empty_cluster_name_is_400(self, api):
        assert_error(api.get(WHOAMI + "?chainClusterId=&svmCluster=CHAIN_LOCALNET"), 400, "INVALID_CLUSTER", "chainClusterId")
        assert_error(api.get(WHOAMI + "?svmCluster="), 400, "INVALID_CLUSTER", "svmCluster")

    def test_older_alias_is_accepted(self, api):
        response = api.get(WHOAMI + "?chainClusterId=CHAIN_LOCALNET")
        assert response.status_code == 200 and response.json()["svmCluster"] == "CHAIN_LOCALNET"

    def test_conflicting_cluster_params_are_400(self, api, settings):
        settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_DEVNET": "http://127.0.0.1:1"}
        assert_error(api.get(WHOAMI + "?svmCluster=CHAIN_LOCALNET&chainClusterId=CHAIN_DEVNET"), 400, "INVALID_CLUSTER")

    def test_configured_cluster_is_selectable(self, api, settings):
        settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_DEVNET": "http://127.0.0.1:1"}
        assert api.get(WHOAMI + "?svmCluster=CHAIN_DEVNET").json()["svmCluster"] == "CHAIN_DEVNET"


def test_rate_limit_is_429_with_retry_after(tenant):
    client = make_client(issue_key(tenant, rate_limit_per_minute=2).secret)
    assert client.get(WHOAMI).status_code == 200
    assert client.get(WHOAMI).status_code == 200
    response = client.get(WHOAMI)
    assert_error(response, 429, "RATE_LIMITED")
    assert 1 <= int(response["Retry-After"]) <= 61


def test_rate_limit_is_per_key(tenant):
    limited = make_client(issue_key(tenant, rate_limit_per_minute=1).secret)
    other = make_client(issue_key(tenant, rate_limit_per_minute=1).secret)
    assert limited.get(WHOAMI).status_code == 200
    assert limited.get(WHOAMI).status_code == 429
    assert other.get(WHOAMI).status_code == 200


def test_unknown_role_is_refused(tenant):
    from ledger_project.api.errors import LedgerError

    with pytest.raises(LedgerError):
        services.api_key_create(organization=tenant, roles=["PLATFORM_GOD_MODE"])
