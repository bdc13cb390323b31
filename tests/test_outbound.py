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
    # IPv6 forms that embed an IPv4 address reaching non-public space
    "https://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of 169.254.169.254
    "https://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
    "https://[64:ff9b:1::a00:1]/hook",  # local-use NAT64 (RFC 8215): refused outright
    "https://[64:ff9b:1::808:808]/hook",
    "https://[2002:a00:1::1]/hook",  # 6to4 of 10.0.0.1
    "https://[2002:a9fe:a9fe::]/hook",  # 6to4 of 169.254.169.254
    "https://[::127.0.0.1]/hook",  # IPv4-compatible
    "https://[::10.0.0.1]/hook",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",  # Teredo: refused outright
    "https://[2001:0:808:808::1]/hook",
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


@pytest.mark.parametrize("address, allowed", [
    ("64:ff9b::808:808", True),  # NAT64 of a public address: how IPv6-only hosts reach IPv4
    ("64:ff9b::a00:1", False),
    ("64:ff9b::a9fe:a9fe", False),
    ("64:ff9b:1::808:808", False),  # local-use NAT64: refused whatever it embeds
    ("2002:808:808::1", True),  # 6to4 of a public address
    ("2002:7f00:1::1", False),
    ("2002:c0a8:101::1", False),
    ("::8.8.8.8", False),  # IPv4-compatible (deprecated): 8.8.8.8 is public, but ::/96 is not routed
    ("::127.0.0.1", False),
    ("::ffff:8.8.8.8", True),
    ("::ffff:127.0.0.1", False),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),
    ("2606:4700::1111", True),
])
def test_ipv6_forms_embedding_ipv4_are_judged_by_what_they_reach(settings, address, allowed):
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    assert outbound.address_allowed(ipaddress.ip_address(address)) is allowed


def test_embedded_forms_can_be_allowed_explicitly(settings):
    """LEDGER_OUTBOUND_ALLOWED_NETWORKS names the IPv6 prefix itself, or the IPv4 it embeds."""
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["64:ff9b:1::/48", "10.0.0.0/8"]
    assert outbound.address_allowed(ipaddress.ip_address("64:ff9b:1::a9fe:a9fe"))
    assert outbound.address_allowed(ipaddress.ip_address("64:ff9b::a00:1"))
    assert outbound.address_allowed(ipaddress.ip_address("2002:a00:1::1"))
    assert not outbound.address_allowed(ipaddress.ip_address("64:ff9b::a9fe:a9fe"))


@pytest.fixture
def redirecting_server():
    """A receiver on 127.0.0.1 whose hook answers 302 to an internal path of the same host."""
    import http.server
    import threading

    hits: list[tuple[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            hits.append((self.path, self.headers.get("Host")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path == "/hook":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/internal")
            else:
                self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_delivery_does_not_follow_a_redirect(settings, redirecting_server):
    """The first hop is allowed (a development receiver on 127.0.0.1); its 302 to a
    loopback path is the answer, never a second request."""
    port, hits = redirecting_server
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with outbound.outbound_client() as client:
        response = outbound.outbound_request(client, "POST", f"http://127.0.0.1:{port}/hook", json={"event": "x"})
    assert response.status_code == 302 and response.headers["location"].endswith("/internal")
    assert hits == [("/hook", f"127.0.0.1:{port}")]  # one request: the redirect is not followed
    with pytest.raises(ValueError):
        outbound.outbound_client(follow_redirects=True)


def test_delivery_checks_the_url_before_calling(settings):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = []
    with outbound.outbound_client() as client, pytest.raises(outbound.OutboundUrlRefused):
        outbound.outbound_request(client, "POST", "http://127.0.0.1:9/hook")
