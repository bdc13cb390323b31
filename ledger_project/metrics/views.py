"""GET /metrics: the Prometheus text format (docs/operations.md, "Metrics"; who may read it:
docs/auth.md, "Metrics").

Counters and histograms are the sum over every process of this instance (multiprocess
files, ``multiproc``); database figures are read now (``collect``).
"""

from __future__ import annotations

import hmac
import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_GET

from ledger_project.api.errors import json_error
from ledger_project.client_address import client_address


@lru_cache(maxsize=8)
def _networks(cidrs: tuple[str, ...]):
    return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip())


def scraper_allowed(request) -> bool:
    """The configured bearer token (constant-time compare), or a client address inside
    LEDGER_METRICS_ALLOWED_NETWORKS (ledger_project.client_address: behind a trusted proxy, the
    client it names, never the proxy itself for a client beyond it). An API key is never enough: tenants do not read
    the platform's figures."""
    token = settings.LEDGER_METRICS_TOKEN
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].strip().encode(), token.encode()):
        return True
    client = client_address(request)
    if client is None:  # no address, or a broken chain of proxies: never allowed
        return False
    address = ipaddress.ip_address(client)
    return any(address in network for network in _networks(tuple(settings.LEDGER_METRICS_ALLOWED_NETWORKS)))


def registry_collect() -> bytes:
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    from .collect import DatabaseCollector
    from .multiproc import scrape_lock

    files = CollectorRegistry()
    multiprocess.MultiProcessCollector(files)
    with scrape_lock():  # a process being folded into the archive is seen once, never twice
        counted = generate_latest(files)
    database = CollectorRegistry()
    database.register(DatabaseCollector())
    return counted + generate_latest(database)


@require_GET
def metrics(request):
    if not scraper_allowed(request):
        response = json_error(request, 401, "UNAUTHENTICATED", "Scrape /metrics with the metrics token (LEDGER_METRICS_TOKEN) "
                                                                 "or from a network in LEDGER_METRICS_ALLOWED_NETWORKS.")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    from prometheus_client import CONTENT_TYPE_LATEST

    return HttpResponse(registry_collect(), content_type=CONTENT_TYPE_LATEST)
