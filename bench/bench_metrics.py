"""What the metrics middleware adds to a request (docs/operations.md, "Metrics"; target
under 0.5 ms).

In process, through Django's test client (the whole middleware, DRF and view stack), on the
embedded defaults (SQLite in a temporary folder, multiprocess metric files there too):
``POST /api/v1/auth/whoami`` with a cached API key, ``METRICS_OPS`` times per round
(default 300), alternating rounds with and without ``MetricsMiddleware`` (METRICS_ROUNDS,
default 8) so both see the same machine. Prints one JSON line: per-request p50 and mean of
each, the difference, and the middleware alone (a counter and a histogram in multiprocess
mode, timed around a view that does nothing).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = int(os.environ.get("METRICS_OPS", "300"))
ROUNDS = int(os.environ.get("METRICS_ROUNDS", "8"))


def main() -> None:
    var = tempfile.mkdtemp(prefix="bench-metrics-")
    for name in ("DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"):
        os.environ.pop(name, None)
    os.environ.update({"LEDGER_EMBEDDED": "1", "LEDGER_VAR_DIR": var, "DJANGO_SETTINGS_MODULE": "ledger_project.settings",
                       "LEDGER_API_KEY_CACHE_SECONDS": "300"})
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client, override_settings
    from django.test.utils import setup_test_environment

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from tenancy.tests.factories import TenantFactory, issue_key

    secret = issue_key(TenantFactory(external_id="BENCH", name="Bench"), rate_limit_per_minute=10**9).secret
    header = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    with_metrics = Client()
    without = [m for m in settings.MIDDLEWARE if not m.endswith("MetricsMiddleware")]
    assert len(without) == len(settings.MIDDLEWARE) - 1
    with override_settings(MIDDLEWARE=without):
        plain = Client()
        plain.post("/api/v1/auth/whoami", {}, content_type="application/json", **header)  # loads this client's middleware chain without metrics
    with_metrics.post("/api/v1/auth/whoami", {}, content_type="application/json", **header)

    def timed(client) -> list[float]:
        out = []
        for _ in range(OPS):
            started = time.perf_counter()
            response = client.post("/api/v1/auth/whoami", {}, content_type="application/json", **header)
            out.append(time.perf_counter() - started)
            assert response.status_code == 200, response.content[:200]
        return out

    timed(plain), timed(with_metrics)  # warm both (caches, the metric files' first pages)
    times = {"with": [], "without": []}
    for _ in range(ROUNDS):
        times["without"] += timed(plain)
        times["with"] += timed(with_metrics)

    from django.http import HttpResponse
    from django.test import RequestFactory
    from django.urls import resolve

    from ledger_project.metrics.middleware import MetricsMiddleware

    request = RequestFactory().post("/api/v1/auth/whoami")
    request.resolver_match = resolve("/api/v1/auth/whoami")
    answer = HttpResponse()
    middleware = MetricsMiddleware(lambda r: answer)
    calls = 20_000
    started = time.perf_counter()
    for _ in range(calls):
        middleware(request)
    alone_us = (time.perf_counter() - started) / calls * 1e6

    ms = lambda values: round(values * 1000, 3)  # noqa: E731
    p50 = {k: statistics.median(v) for k, v in times.items()}
    mean = {k: statistics.fmean(v) for k, v in times.items()}
    print(json.dumps({
        "bench": "metrics_middleware", "requests_each": OPS * ROUNDS, "endpoint": "POST /api/v1/auth/whoami (in process)",
        "p50_ms_with": ms(p50["with"]), "p50_ms_without": ms(p50["without"]), "p50_added_ms": ms(p50["with"] - p50["without"]),
        "mean_ms_with": ms(mean["with"]), "mean_ms_without": ms(mean["without"]), "mean_added_ms": ms(mean["with"] - mean["without"]),
        "middleware_alone_us": round(alone_us, 1), "target_added_ms": 0.5,
    }), flush=True)


if __name__ == "__main__":
    main()
