"""Outbound URLs a tenant gives us (webhook ``endpointUrl``, OAuth ``accessTokenUrl``).

A tenant-supplied URL must not reach the service's own network (SSRF): the metadata
service at 169.254.169.254, the local node on localhost:8899, a database on 10.x. Rules
(docs/configuration.md, Outbound URLs):

- ``https`` only, unless ``LEDGER_OUTBOUND_ALLOW_HTTP`` (default: ``DEBUG``, i.e. development);
- no credentials in the URL (they would be logged with it);
- the host is resolved and **every** address must be public (``ipaddress.is_global``, not
  multicast): loopback, link-local, private (RFC 1918, unique local), shared (100.64/10),
  reserved and unspecified addresses are refused — IPv4-mapped IPv6 included — unless the
  address falls in ``LEDGER_OUTBOUND_ALLOWED_NETWORKS`` (CIDRs);
- a host that does not resolve is refused.

Validation calls :func:`check_outbound_url` (400 ``URL_NOT_ALLOWED`` naming the field).
DNS can change between validation and delivery (rebinding), so the delivery worker calls
:func:`outbound_addresses` again right before each call and connects to one of the
addresses it returns (never re-resolving the name), sending the original host name in the
``Host`` header / TLS SNI.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from ledger_project.api.errors import LedgerError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundUrlRefused(LedgerError):
    code = "URL_NOT_ALLOWED"
    default_message = "This URL may not be called by the service."


def _allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr.strip(), strict=False) for cidr in settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS if cidr.strip()]


def address_allowed(address: IPAddress) -> bool:
    """Public, or in an explicitly allowed network."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in _allowed_networks()):
        return True
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
    allowed_schemes = ("https", "http") if settings.LEDGER_OUTBOUND_ALLOW_HTTP else ("https",)
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
