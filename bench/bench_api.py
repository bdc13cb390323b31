"""Authenticated fetch endpoint under gunicorn at concurrency 16: requests/s, p50, p99.

Runs against a throwaway database (SQLite in a temp dir, or the DATABASE_URL server's
database when set) and a key with no rate limit. The load generator shares the 2-core
machine with the server, so figures are conservative. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import gunicorn, manage  # noqa: E402
from bench.loadgen import closed_loop, wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402

CONCURRENCY = 16
DURATION = 8.0


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        env = {**os.environ, "LEDGER_VAR_DIR": tmp, "LOG_LEVEL": "WARNING"}
        if not os.environ.get("DATABASE_URL"):
            env.pop("DATABASE_URL", None)
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
        key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))
        port = free_port()
        server = gunicorn(env, port)
        try:
            headers = {"Authorization": f"Bearer {key['secret']}", "Content-Type": "application/json"}
            body = json.dumps({"tenancyConfig": {"overrideOrganizationExternalId": "BENCH"}})
            request = ("POST", "/api/v1/auth/whoami", body, headers)
            wait_until_up(port, request)
            result = closed_loop(port, lambda rnd: request, CONCURRENCY, DURATION)
            print(json.dumps({"bench": "api_whoami_authenticated", "server": "gunicorn (gunicorn.conf.py)", "database": "postgresql" if os.environ.get("DATABASE_URL") else "sqlite",
                              "concurrency": CONCURRENCY, "load_generator": "python", **result}))
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
