"""SSRF: URLs a tenant gives the service to call (webhook endpointUrl, OAuth
accessTokenUrl) must be https and resolve to public addresses only — at validation and
again at delivery (ledger_project/outbound.py, docs/configuration.md)."""

from __future__ import annotations

import ipaddress

import pytest

from conftest import assert_error
from instruments.tests.factories import FinancialInstrumentFactory
from ledger_project import outbound

PATH = "/api/v1/financial-instruments"
INTERNAL = [
    "https://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254/latest/meta-data/",
    "https://localhost:8899/",
    "https://127.0.0.1/hook",
    "https://10.1.2.3/hook",
    "https://192.168.1.1/hook",
    "https://172.16.0.1/hook",
    "https://100.64.0.1/hook",
    "https://0.0.0.0/hook",
    "https://[::1]/hook",
    "https://[fd00::1]/hook",
    "https://[::ffff:10.0.0.1]/hook",
    "https://internal.example/hook",  # a name that resolves to a private address
    "http://hooks.example/hook",  # plain http outside development
    "https://user:pw@hooks.example/hook",
    "https://nowhere.invalid/hook",  # does not resolve
]


@pytest.fixture
def internal_dns(monkeypatch):
    resolve = outbound._resolve

    def fake(host, port):
        if host == "internal.example":
            return [ipaddress.ip_address("10.0.0.7")]
        if host == "nowhere.invalid":
            return []
        return resolve(host, port)

    monkeypatch.setattr(outbound, "_resolve", fake)


def _hook(url: str, oauth: bool = False) -> dict:
    if oauth:
        return {"endpointUrl": "https://hooks.example/tx", "name": "n", "oauth2AuthConfig": {"accessTokenUrl": url, "flowType": "CLIENT_CREDENTIALS", "clientId": "c", "clientSecret": "s"}}
    return {"endpointUrl": url, "name": "n"}


@pytest.mark.django_db
@pytest.mark.parametrize("url", INTERNAL)
def test_webhook_urls_to_internal_addresses_are_refused(api, tenant, internal_dns, settings, url):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = False
    instrument = FinancialInstrumentFactory(tenant=tenant)
    lookup = {"onchainId": instrument.address}
    for oauth, field in ((False, "endpointUrl"), (True, "oauth2AuthConfig.accessTokenUrl")):
        response = api.call("patch", PATH, {"itemData": {"mintAccount": lookup, "postTransactionSubmitWebhooks": [_hook(url, oauth)]}})
        body = assert_error(response, 400, "URL_NOT_ALLOWED", f"itemData.postTransactionSubmitWebhooks[0].{field}")
        assert "10.0.0.7" not in str(body)  # says what kind of address, not which
    instrument.refresh_from_db()
    assert not instrument.post_transaction_submit_webhooks


@pytest.mark.django_db
def test_public_https_urls_pass_and_settings_open_what_development_needs(settings, internal_dns):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = False
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    assert outbound.outbound_addresses("https://hooks.example/tx") == [ipaddress.ip_address("93.184.215.14")]
    assert outbound.outbound_addresses("https://93.184.215.14:8443/tx")
    with pytest.raises(outbound.OutboundUrlRefused):
        outbound.check_outbound_url("http://hooks.example/tx")
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    outbound.check_outbound_url("http://hooks.example/tx")
    with pytest.raises(outbound.OutboundUrlRefused):
        outbound.check_outbound_url("http://127.0.0.1:9000/tx")
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8", "10.0.0.0/8"]
    outbound.check_outbound_url("http://127.0.0.1:9000/tx")
    outbound.check_outbound_url("https://internal.example/tx")
    with pytest.raises(outbound.OutboundUrlRefused):
        outbound.check_outbound_url("https://169.254.169.254/")


def test_delivery_checks_again_so_a_rebound_name_is_refused(monkeypatch, settings):
    """DNS rebinding: public when validated, private when delivered."""
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    answers = iter([["93.184.215.14"], ["93.184.215.14", "169.254.169.254"]])
    monkeypatch.setattr(outbound, "_resolve", lambda host, port: [ipaddress.ip_address(a) for a in next(answers)])
    outbound.check_outbound_url("https://rebind.test/hook")  # at validation
    with pytest.raises(outbound.OutboundUrlRefused, match="non-public"):
        outbound.outbound_addresses("https://rebind.test/hook")  # at delivery
