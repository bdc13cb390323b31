"""The client's address (ledger_project/client_address.py; docs/configuration.md, "Behind a
reverse proxy"): X-Forwarded-For is read right to left, and only from a trusted peer; it is
the one reader of REMOTE_ADDR and X-Forwarded-For in the product, and every part that cares
about the client's address (the /metrics allow-list, the staff lockout, the API's throttle,
the staff audit) asks it. Through a real nginx: tests/test_behind_nginx.py."""

from __future__ import annotations

import ast

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from ledger_project.client_address import client_address, proxy_networks, trusted_proxies_setting
from tests.test_house import MODULES, ROOT

PROXIES = ["10.0.0.0/24", "192.168.7.7/32", "2001:db8:f::/48"]


def _request(peer: str | None, *forwarded: str):
    meta = {} if not forwarded else {"HTTP_X_FORWARDED_FOR": ", ".join(forwarded)}
    request = RequestFactory().get("/", **meta)
    if peer is None:
        del request.META["REMOTE_ADDR"]
    else:
        request.META["REMOTE_ADDR"] = peer
    return request


@pytest.fixture(autouse=True)
def proxies(settings):
    settings.LEDGER_TRUSTED_PROXIES = PROXIES


@pytest.mark.parametrize(("peer", "forwarded", "client"), [
    # An untrusted peer is the client, whatever it claims.
    ("203.0.113.9", ["10.0.0.1"], "203.0.113.9"),
    ("203.0.113.9", ["127.0.0.1", "10.0.0.1"], "203.0.113.9"),
    ("2001:db8:1::9", ["10.0.0.1"], "2001:db8:1::9"),
    # A trusted peer without the header: the peer (a request made on the proxy's host).
    ("10.0.0.5", [], "10.0.0.5"),
    ("2001:db8:f::5", [], "2001:db8:f::5"),
    # One proxy: the entry it appended.
    ("10.0.0.5", ["203.0.113.9"], "203.0.113.9"),
    ("2001:db8:f::5", ["2001:db8:1::9"], "2001:db8:1::9"),
    ("10.0.0.5", ["2001:db8:1::9"], "2001:db8:1::9"),
    # Spoofed left-most entries, even trusted-looking or allowed-looking ones, are not reached.
    ("10.0.0.5", ["127.0.0.1", "203.0.113.9"], "203.0.113.9"),
    ("10.0.0.5", ["10.0.0.7", "203.0.113.9"], "203.0.113.9"),
    ("10.0.0.5", ["garbage", "unknown", "203.0.113.9"], "203.0.113.9"),
    # Several proxies: trusted hops skipped right to left, anywhere in the trusted networks.
    ("10.0.0.5", ["198.51.100.1", "203.0.113.9", "192.168.7.7", "10.0.0.200"], "203.0.113.9"),
    ("2001:db8:f::5", ["203.0.113.9", "2001:db8:f:1::1", "10.0.0.9"], "203.0.113.9"),
    # A neighbour of a trusted host is not trusted (/32), so it is the client.
    ("10.0.0.5", ["203.0.113.9", "192.168.7.8"], "192.168.7.8"),
    # Every hop trusted: the left-most trusted hop.
    ("10.0.0.5", ["10.0.0.9", "192.168.7.7"], "10.0.0.9"),
    # Whitespace around entries is the list's, not the address's.
    ("10.0.0.5", [" 203.0.113.9 "], "203.0.113.9"),
    # IPv4-mapped IPv6 (a dual-stack socket's IPv4 peer) is its IPv4 address, trusted or not.
    ("::ffff:10.0.0.5", ["203.0.113.9"], "203.0.113.9"),
    ("::ffff:203.0.113.9", ["10.0.0.1"], "203.0.113.9"),
    ("10.0.0.5", ["::ffff:203.0.113.9"], "203.0.113.9"),
    ("2001:DB8:F::5", ["2001:0DB8:0001:0000::9"], "2001:db8:1::9"),  # one spelling
])
def test_the_client_is_the_first_untrusted_hop_from_the_right(peer, forwarded, client):
    assert client_address(_request(peer, *forwarded)) == client


@pytest.mark.parametrize("entry", ["", "unknown", "203.0.113.9:443", "[2001:db8::1]", "[2001:db8::1]:443", "300.1.1.1", "_hidden", "203.0.113.9 x"])
def test_a_malformed_entry_met_in_the_walk_is_an_unknown_client(entry):
    """A trusted proxy wrote it (a client's own entries are never reached), so the chain is
    broken: None, allowed nothing — not the proxy's address, which may be allowed much."""
    assert client_address(_request("10.0.0.5", "198.51.100.1", entry, "10.0.0.9")) is None
    assert client_address(_request("10.0.0.5", entry)) == (None if entry else "10.0.0.5")  # an empty field is no field
    # Left of the first untrusted hop it is never read.
    assert client_address(_request("10.0.0.5", entry, "203.0.113.9")) == "203.0.113.9"


def test_repeated_headers_are_one_list_in_arrival_order():
    """gunicorn joins repeated fields with ","; the right end is the last proxy's."""
    assert client_address(_request("10.0.0.5", "127.0.0.1,203.0.113.9")) == "203.0.113.9"


def test_without_trusted_proxies_the_header_is_never_read(settings):
    settings.LEDGER_TRUSTED_PROXIES = []
    assert client_address(_request("10.0.0.5", "203.0.113.9")) == "10.0.0.5"
    assert client_address(_request("127.0.0.1", "203.0.113.9")) == "127.0.0.1"


def test_no_peer_address_is_none():
    assert client_address(_request(None, "203.0.113.9")) is None
    assert client_address(_request("", "203.0.113.9")) is None
    assert client_address(_request("unix:/run/ledger.sock")) is None
    assert client_address(None) is None


@pytest.mark.parametrize("bad", ["10.0.0.5/8", "10.0.0.0/33", "proxy.internal", "2001:db8::1/32"])
def test_a_trusted_proxy_entry_that_is_no_network_is_refused_at_start(bad):
    with pytest.raises(ImproperlyConfigured, match="LEDGER_TRUSTED_PROXIES"):
        trusted_proxies_setting(["10.0.0.0/24", bad])


def test_bare_addresses_and_blanks_in_the_setting():
    assert [str(n) for n in proxy_networks(("10.0.0.7", " ", "::1"))] == ["10.0.0.7/32", "::1/128"]


# --- Who asks -------------------------------------------------------------------------------


def test_the_metrics_allow_list_judges_the_client_not_the_proxy(settings):
    from ledger_project.metrics.views import scraper_allowed

    settings.LEDGER_METRICS_TOKEN = ""
    settings.LEDGER_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/24"]  # the proxies' network, as the review found it
    assert scraper_allowed(_request("10.0.0.5"))  # scraped on the proxy's host
    assert not scraper_allowed(_request("10.0.0.5", "203.0.113.9"))
    assert not scraper_allowed(_request("10.0.0.5", "10.0.0.1", "203.0.113.9"))  # forged
    assert not scraper_allowed(_request("10.0.0.5", "unknown"))
    assert not scraper_allowed(_request("203.0.113.9", "10.0.0.1"))


def test_django_axes_uses_the_one_rule():
    from axes.helpers import get_client_ip_address

    assert get_client_ip_address(_request("10.0.0.5", "127.0.0.1", "203.0.113.9")) == "203.0.113.9"
    assert get_client_ip_address(_request("203.0.113.9", "10.0.0.1")) == "203.0.113.9"


@pytest.mark.django_db
def test_the_audit_records_the_client_behind_the_proxy():
    from backoffice.audit import AuditKind, audit_record

    entry = audit_record(request=_request("10.0.0.5", "127.0.0.1", "203.0.113.9"), kind=AuditKind.LOGIN_FAILED, action="login", actor_name="vera")
    assert entry.ip == "203.0.113.9"
    assert audit_record(kind=AuditKind.LOGIN_FAILED, action="login").ip is None


def test_the_api_throttle_counts_the_client_behind_the_proxy():
    from rest_framework.request import Request

    from tenancy.throttling import ApiKeyRateThrottle

    throttle = ApiKeyRateThrottle()
    assert throttle.get_ident(Request(_request("10.0.0.5", "127.0.0.1", "203.0.113.9"))) == "203.0.113.9"
    assert throttle.get_ident(Request(_request("203.0.113.9", "198.51.100.1"))) == "203.0.113.9"
    assert throttle.get_ident(Request(_request("10.0.0.5", "unknown"))) == "unknown"


# --- Nothing else reads them ------------------------------------------------------------------

#: The request's address and the proxies' header, as a string the code could look up.
_READ = {"remote_addr", "http_x_forwarded_for", "x-forwarded-for", "x_forwarded_for", "num_proxies"}


def test_no_other_product_file_reads_the_peer_address_or_x_forwarded_for():
    """REMOTE_ADDR, X-Forwarded-For (as a header or a META key) and DRF's NUM_PROXIES appear
    as strings only in ledger_project/client_address.py (docstrings and comments aside)."""
    own = ROOT / "ledger_project" / "client_address.py"
    found = []
    for name, path in MODULES.items():
        if path == own:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else node.attr if isinstance(node, ast.Attribute) else None
            if text is not None and text.strip().lower() in _READ:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    assert not found


def test_every_throttle_of_the_product_identifies_clients_by_the_one_rule():
    """DRF's own get_ident reads X-Forwarded-For by NUM_PROXIES: every throttle of ours overrides it."""
    import tenancy.throttling  # noqa: F401  (the product's throttles, loaded)
    from rest_framework.throttling import BaseThrottle

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    ours = [cls for cls in subclasses(BaseThrottle) if cls.__module__.split(".")[0] in {m.split(".")[0] for m in MODULES}]
    assert ours and all(cls.get_ident is not BaseThrottle.get_ident for cls in ours)


@pytest.mark.django_db
def test_a_broken_chain_signs_in_as_one_unknown_address(client, settings):
    """django-axes counts requests with no address (a trusted proxy wrote a malformed hop)
    together, under no address, and the audit stores none: nothing is granted to the proxy's."""
    from backoffice.models import AuditKind, LoginFailure, StaffAuditEntry
    from backoffice.tests.staff import PASSWORD, staff_user

    settings.LEDGER_ADMIN_LOCKOUT_FAILURES = 2
    staff_user("viewer", "vera")
    broken = {"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "unknown"}
    for _ in range(2):
        assert client.post("/admin/login/?next=/admin/", {"username": "vera", "password": "wrong"}, **broken).status_code == 200
    assert list(LoginFailure.objects.values_list("ip_address", "failures_since_start")) == [(None, 2)]
    assert "Too many failed sign-ins" in client.post("/admin/login/?next=/admin/", {"username": "vera", "password": PASSWORD}, **broken).content.decode()
    assert set(StaffAuditEntry.objects.values_list("ip", flat=True)) == {None}
    # A client the proxy named is another pair.
    named = {"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}
    assert client.post("/admin/login/?next=/admin/", {"username": "vera", "password": PASSWORD}, **named).status_code == 302
    assert StaffAuditEntry.objects.filter(kind=AuditKind.LOGIN).get().ip == "203.0.113.9"
