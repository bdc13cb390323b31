"""The client's address: the one rule every part uses, behind reverse proxies or not
(docs/configuration.md, "Behind a reverse proxy").

gunicorn sets REMOTE_ADDR from the socket only (its ``forwarded_allow_ips`` governs the
scheme headers, never the address), so behind a proxy REMOTE_ADDR is the proxy. The proxy
says whom it served in ``X-Forwarded-For``, appending its own peer on the right; everything
to the left of what our proxies wrote came from the client and may be forged. So:

- the socket peer (REMOTE_ADDR) outside LEDGER_TRUSTED_PROXIES is the client, whatever the
  header says (the default trusts no proxy: the header is never read);
- a trusted peer: walk X-Forwarded-For right to left, skipping entries that are trusted
  proxies too; the first untrusted entry is the client. Every entry trusted (or no header):
  the left-most trusted hop is the client — a request that started on a proxy's host;
- a malformed entry (not a bare IPv4/IPv6 address: empty, ``unknown``, a port, garbage) met
  in the walk stops it with None, "unknown client". Only one of our proxies can have written
  it (a client's own entries lie left of the first untrusted one, never reached), so the
  chain is broken, and answering with the proxy's address instead would hand a forger
  whatever that address is allowed (/metrics' networks); None is allowed nothing.

IPv4-mapped IPv6 addresses (``::ffff:10.0.0.5``, a dual-stack socket's IPv4 peer) are read
as the IPv4 address, so one client has one spelling. The answer is a string (what the
audit and django-axes store) or None.

This module is the only reader of REMOTE_ADDR and X-Forwarded-For in the product
(tests/test_client_address.py holds that).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _address(text) -> Address | None:
    if not isinstance(text, str):
        return None
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@lru_cache(maxsize=8)
def proxy_networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    """LEDGER_TRUSTED_PROXIES as networks. A bare address is its own /32 or /128; host bits
    set (``10.0.0.5/8``) are refused rather than widened, since the list grants trust."""
    networks = []
    for cidr in (c.strip() for c in cidrs):
        if not cidr:
            continue
        try:
            networks.append(ipaddress.ip_network(cidr, strict=True))
        except ValueError as exc:
            raise ImproperlyConfigured(f"LEDGER_TRUSTED_PROXIES: {cidr!r} is not a network ({exc}); docs/configuration.md.") from exc
    return tuple(networks)


def trusted_proxies_setting(cidrs: list[str]) -> list[str]:
    """For settings.py: the list as given, refused at start when an entry is not a network."""
    proxy_networks(tuple(cidrs))
    return cidrs


def _trusted(address: Address, networks: tuple[Network, ...]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def client_address(request) -> str | None:
    """The address of the client ``request`` came from, by the rule above; None when it has
    none (no request, no socket address, a broken chain of proxies). ``request`` is Django's
    HttpRequest or DRF's Request (django-axes hands either)."""
    meta = getattr(request, "META", None)
    if meta is None:
        return None
    peer = _address(meta.get("REMOTE_ADDR"))
    if peer is None:
        return None
    networks = proxy_networks(tuple(settings.LEDGER_TRUSTED_PROXIES))
    if not _trusted(peer, networks):
        return str(peer)
    client = peer
    forwarded = meta.get("HTTP_X_FORWARDED_FOR")
    # gunicorn joins repeated X-Forwarded-For fields with "," in arrival order, so the
    # right end is still the last proxy's entry.
    for entry in reversed(forwarded.split(",")) if forwarded else ():
        hop = _address(entry)
        if hop is None:
            return None
        client = hop
        if not _trusted(hop, networks):
            break
    return str(client)


__all__ = ["client_address", "proxy_networks", "trusted_proxies_setting"]
