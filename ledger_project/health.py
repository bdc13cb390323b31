"""GET /healthz: database, broker and each configured cluster's RPC, without auth.

200 when the database answers (the service can take requests); the broker and clusters
are reported and mark the status "degraded" when down, since reads still work. 503 when
the database is down.
"""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET


def _timed(fn):
    started = time.perf_counter()
    try:
        detail = fn()
        return {"status": "ok", "latencyMs": round((time.perf_counter() - started) * 1000, 1), **(detail or {})}
    except Exception as exc:  # a health check reports every failure, whatever it is
        return {"status": "down", "error": f"{type(exc).__name__}: {exc}"[:300]}


def _database():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"engine": connection.vendor}


def _broker():
    url = settings.CELERY_BROKER_URL
    if url.startswith("redis"):
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
        return {"kind": "redis"}
    return {"kind": url.split(":", 1)[0]}


def _cluster(url: str):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getHealth"}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=2) as resp:
        answer = json.loads(resp.read())
    if answer.get("result") != "ok":
        raise RuntimeError(str(answer.get("error") or answer)[:200])
    return {}


@require_GET
def healthz(request):
    clusters = dict(settings.LEDGER_CLUSTERS)
    with ThreadPoolExecutor(max_workers=max(1, len(clusters))) as pool:
        futures = {name: pool.submit(_timed, lambda u=url: _cluster(u)) for name, url in clusters.items()}
        database = _timed(_database)
        broker = _timed(_broker)
        cluster_status = {name: future.result() for name, future in futures.items()}
    checks = {"database": database, "broker": broker, "clusters": cluster_status}
    if database["status"] != "ok":
        status, code = "down", 503
    elif broker["status"] != "ok" or any(c["status"] != "ok" for c in cluster_status.values()):
        status, code = "degraded", 200
    else:
        status, code = "ok", 200
    return JsonResponse({"status": status, "checks": checks}, status=code)
