"""Authenticated fetch endpoint under gunicorn at concurrency 16: requests/s, p50, p99.

Runs against a throwaway database (SQLite in a temp dir, or the DATABASE_URL server's
database when set) and a key with no rate limit. The load generator shares the 2-core
machine with the server, so figures are conservative. Prints one JSON line.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from transactions.localnet.testing import free_port  # noqa: E402

CONCURRENCY = 16
DURATION = 8.0
PY = sys.executable


def manage(env, *args) -> str:
    return subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        env = {**os.environ, "LEDGER_VAR_DIR": tmp, "LOG_LEVEL": "WARNING"}
        if not os.environ.get("DATABASE_URL"):
            env.pop("DATABASE_URL", None)
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
        key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))
        port = free_port()
        server = subprocess.Popen([PY, "-m", "gunicorn", "ledger_project.wsgi", "--bind", f"127.0.0.1:{port}", "--config", "gunicorn.conf.py", "--log-level", "warning"],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            headers = {"Authorization": f"Bearer {key['secret']}", "Content-Type": "application/json"}
            body = json.dumps({"tenancyConfig": {"overrideOrganizationExternalId": "BENCH"}})
            deadline = time.monotonic() + 30
            while True:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    conn.request("POST", "/api/v1/auth/whoami", body, headers)
                    if conn.getresponse().status == 200:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start")
                time.sleep(0.2)
            latencies: list[float] = []
            errors = [0]
            lock = threading.Lock()
            stop_at = time.monotonic() + DURATION

            def client():
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                mine = []
                while time.monotonic() < stop_at:
                    started = time.perf_counter()
                    conn.request("POST", "/api/v1/auth/whoami", body, headers)
                    response = conn.getresponse()
                    response.read()
                    mine.append(time.perf_counter() - started)
                    if response.status != 200:
                        errors[0] += 1
                with lock:
                    latencies.extend(mine)

            threads = [threading.Thread(target=client) for _ in range(CONCURRENCY)]
            began = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - began
            latencies.sort()
            q = statistics.quantiles(latencies, n=100)
            print(json.dumps({"bench": "api_whoami_authenticated", "server": "gunicorn (gunicorn.conf.py)", "database": "postgresql" if os.environ.get("DATABASE_URL") else "sqlite",
                              "concurrency": CONCURRENCY, "requests": len(latencies), "errors": errors[0], "rps": round(len(latencies) / elapsed, 1),
                              "p50_ms": round(q[49] * 1000, 2), "p99_ms": round(q[98] * 1000, 2)}))
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
