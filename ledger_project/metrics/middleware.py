"""Requests by route and status, and their latency (docs/operations.md, "Metrics").

The route is the URL pattern Django resolved (``api/v1/accounts/single``,
``admin/<app>/<model>/<path:object_id>/change/``), never the path: labels stay bounded
whatever clients send. A path that resolves to nothing is ``unmatched``.
"""

from __future__ import annotations

import time

from .meters import http_request_duration, http_requests


class MetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        http_requests.labels(method, route, str(response.status_code)).inc()
        http_request_duration.labels(method, route).observe(elapsed)
        return response


_METHODS = frozenset(("GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "OPTIONS"))
