"""Outbound URLs a tenant gives us (webhook ``endpointUrl``, OAuth ``accessTokenUrl``).

A tenant-supplied URL must not reach the service's own network (SSRF): the metadata
service at 169.254.169.254, the local node on localhost:8899, a database on 10.x. Rules
(docs/configuration.md, Outbound URLs):

- ``https`` only, unless ``LEDGER_OUTBOUND_ALLOW_HTTP`` (default: ``DEBUG``, i.e. development);
- no credentials in the URL (they would be logged with it);
- the host is resolved and **every** address must be public (``ipaddress.is_global``, not
  multicast): loopback, link-local, private (RFC 1918, unique local), shared (100.64/10),
  reserved and unspecified addresses are refused unless the address falls in
  ``LEDGER_OUTBOUND_ALLOWED_NETWORKS`` (CIDRs). IPv6 forms embedding an IPv4 address are
  judged by that IPv4 address (IPv4-mapped ``::ffff:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4
  ``2002::/16``); local-use NAT64 ``64:ff9b:1::/48``, Teredo ``2001::/32`` and
  IPv4-compatible ``::/96`` are refused outright;
- a host that does not resolve is refused.

Validation calls :func:`check_outbound_url` (400 ``URL_NOT_ALLOWED`` naming the field).
DNS can change between validation and delivery (rebinding), so the delivery worker calls
:func:`outbound_addresses` again right before each call and connects to one of the
addresses it returns (never re-resolving the name), sending the original host name in the
``Host`` header / TLS SNI: :func:`outbound_request` does both.

Delivery never follows redirects (``follow_redirects=False`` on :func:`outbound_client`): a
3xx is the receiver's answer, recorded as such. A redirect is a new URL that was never
checked, the classic way round an SSRF check (public hook → 302 → 169.254.169.254).

``http`` is allowed only in development: ``LEDGER_OUTBOUND_ALLOW_HTTP`` takes effect in the
embedded mode or with ``DEBUG`` (tests and `make run`), never in production. Answers are read
up to a cap (:func:`outbound_send`, ``LEDGER_OUTBOUND_MAX_RESPONSE_BYTES``): a receiver cannot
make a worker buffer an endless body.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from ledger_project.api.errors import LedgerError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundUrlRefused(LedgerError):
    code = "URL_NOT_ALLOWED"
    default_message = "This URL may not be called by the service."


def http_allowed() -> bool:
    """Plain http to tenant URLs: only where LEDGER_OUTBOUND_ALLOW_HTTP says so *and* the
    process is not a production one (embedded mode or DEBUG): https in production."""
    return bool(settings.LEDGER_OUTBOUND_ALLOW_HTTP and (settings.DEBUG or getattr(settings, "LEDGER_EMBEDDED", False)))


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr.strip(), strict=False) for cidr in settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS if cidr.strip()]


#: IPv6 prefixes refused outright (unless the address is in LEDGER_OUTBOUND_ALLOWED_NETWORKS):
#: where the IPv4 address they lead to cannot be read reliably, or the form is not routed.
_REFUSED_IPV6 = (
    ipaddress.ip_network("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215): operator-defined layout
    ipaddress.ip_network("2001::/32"),  # Teredo: the client address is obfuscated, the relay anyone's
    ipaddress.ip_network("::/96"),  # IPv4-compatible (deprecated, RFC 4291), :: and ::1 included
)
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052: the last 32 bits are the IPv4


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches through a translation or tunnel form
    (IPv4-mapped, NAT64 well-known prefix, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour  # 2002::/16


def address_allowed(address: IPAddress) -> bool:
    """Public, or in an explicitly allowed network. An IPv6 form embedding an IPv4
    address is judged by the IPv4 address it reaches; forms whose target cannot be read
    (local-use NAT64, Teredo, IPv4-compatible) are refused unless allowed explicitly."""
    allowed = _allowed_networks()
    if any(address in network for network in allowed):
        return True
    if isinstance(address, ipaddress.IPv6Address):
        if any(address in network for network in _REFUSED_IPV6):
            return False
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return address_allowed(embedded)
    return address.is_global and not address.is_multicast


def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        return []
    out: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if address not in out:
            out.append(address)
    return out


def outbound_addresses(url: str, *, field: str | None = None) -> list[IPAddress]:
    """The addresses ``url`` may be called at (all of its host's, all allowed), or
    OutboundUrlRefused. Call at validation and again at delivery time."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise OutboundUrlRefused("Not a valid URL.", field=field) from None
    scheme = (parts.scheme or "").lower()
    allowed_schemes = ("https", "http") if http_allowed() else ("https",)
    if scheme not in allowed_schemes:
        raise OutboundUrlRefused(f"The URL must use {' or '.join(allowed_schemes)}.", field=field)
    if parts.username is not None or parts.password is not None:
        raise OutboundUrlRefused("Credentials may not be part of the URL; use the auth config.", field=field)
    host = parts.hostname
    if not host:
        raise OutboundUrlRefused("The URL has no host.", field=field)
    addresses = _resolve(host, port or (443 if scheme == "https" else 80))
    if not addresses:
        raise OutboundUrlRefused(f"The host {host!r} does not resolve.", field=field)
    refused = [a for a in addresses if not address_allowed(a)]
    if refused:
        # Say what kind of address, not which: the answer must not map internal DNS.
        raise OutboundUrlRefused(
            f"The host {host!r} resolves to a loopback, link-local, private or otherwise non-public address; "
            "the service calls public addresses only (LEDGER_OUTBOUND_ALLOWED_NETWORKS).",
            field=field,
        )
    return addresses


def check_outbound_url(url: str, *, field: str | None = None) -> None:
    """Refuse (400 URL_NOT_ALLOWED) a URL the service may not call."""
    outbound_addresses(url, field=field)


#: The client settings of every outbound call (webhook delivery, OAuth token requests).
#: ``follow_redirects`` must stay False: see the module docstring. ``trust_env=False``: no
#: proxy or .netrc credentials picked up from the worker's environment.
OUTBOUND_CLIENT_SETTINGS = {"follow_redirects": False, "trust_env": False, "timeout": 10.0}


def outbound_client(**overrides):
    """An ``httpx.Client`` for calls to tenant-given URLs (redirects not followed). Send
    through :func:`outbound_request`, which checks the URL again first."""
    import httpx

    if overrides.get("follow_redirects"):
        raise ValueError("Outbound calls never follow redirects (ledger_project/outbound.py).")
    return httpx.Client(**{**OUTBOUND_CLIENT_SETTINGS, **overrides})


def _pinned(url: str, kwargs: dict) -> str:
    """``url`` checked again and rewritten to the first address the check returned; the
    host name goes into ``Host`` and TLS SNI (``kwargs`` is updated)."""
    addresses = outbound_addresses(url)
    parts = urlsplit(url)
    address = addresses[0]
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    kwargs["headers"] = {**kwargs.get("headers", {}), "Host": parts.netloc}
    kwargs["extensions"] = {**kwargs.get("extensions", {}), "sni_hostname": parts.hostname}
    return parts._replace(netloc=netloc).geturl()


def outbound_request(client, method: str, url: str, **kwargs):
    """Check ``url`` again (delivery time: DNS rebinding) and call it at the first address
    the check returned, with the URL's host name in ``Host`` and TLS SNI (so the
    certificate is verified for the name). Raises OutboundUrlRefused; a 3xx answer is
    returned as it is, never followed."""
    pinned = _pinned(url, kwargs)
    return client.request(method, pinned, follow_redirects=False, **kwargs)


@dataclass(frozen=True)
class OutboundResponse:
    """An answer read up to a cap: ``body`` holds at most ``max_body_bytes`` bytes;
    ``truncated`` says the receiver sent more (the rest was never read)."""

    status_code: int
    headers: dict
    body: bytes
    truncated: bool


def outbound_send(client, method: str, url: str, *, max_body_bytes: int | None = None, deadline: float | None = None, **kwargs) -> OutboundResponse:
    """``outbound_request`` that reads at most ``max_body_bytes`` of the answer
    (LEDGER_OUTBOUND_MAX_RESPONSE_BYTES by default). A longer body is cut: the connection
    is closed rather than drained, so a receiver cannot hold a worker with an endless one.
    With ``deadline`` (``time.monotonic()``), a body still arriving then raises
    ``httpx.ReadTimeout``: httpx's timeouts bound each read, not the whole answer, and a
    receiver dripping a byte at a time would otherwise hold the call for cap × timeout."""
    import httpx

    cap = settings.LEDGER_OUTBOUND_MAX_RESPONSE_BYTES if max_body_bytes is None else max_body_bytes
    pinned = _pinned(url, kwargs)
    with client.stream(method, pinned, follow_redirects=False, **kwargs) as response:
        body = bytearray()
        truncated = False
        for chunk in response.iter_raw():
            body += chunk
            if len(body) > cap:
                truncated = True
                del body[cap:]
                break
            if deadline is not None and time.monotonic() > deadline:
                raise httpx.ReadTimeout("the answer was still arriving at the deadline", request=response.request)
        return OutboundResponse(response.status_code, dict(response.headers), bytes(body), truncated)
