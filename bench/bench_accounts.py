"""Accounts at scale: 200,000 accounts in PostgreSQL across 20 tenants.

Through the HTTP API under gunicorn at concurrency 8: Fetch Account Details (p99 target
< 15 ms) and a filtered, sorted Fetch Accounts page of 100 (p50 target < 50 ms), next to
the raw SQL time of the same page query. Uses a throwaway database on the PostgreSQL
server of DATABASE_URL (default: the local one). Prints one JSON line per measurement.
Seeds rows for many tenants at once, so it writes through ``Model.unscoped``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import gunicorn, manage, orm_page_ms, throwaway_database, vacuum_analyze, wrk_load  # noqa: E402
from bench.loadgen import closed_loop as load  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402

ACCOUNTS = int(os.environ.get("BENCH_ACCOUNTS", "200000"))
TENANTS = 20
CONCURRENCY = 8
DURATION = 8.0
PAGE_QUERY = {"itemQuery": {"limit": 100, "filter": [
    {"fieldName": "type", "operator": "AND", "filterValues": [{"dataType": "TEXT", "filterType": "EQUALS", "valueString": "ASSETS_WALLET"}]},
    {"fieldName": "managed", "operator": "AND", "filterValues": [{"dataType": "BOOLEAN", "filterType": "EQUALS", "valueBoolean": False}]}],
    "sort": [{"fieldName": "creationTransactionAt", "sortDirection": "DESC"}]}}


def seed(env: dict) -> dict:
    """Tenants, keys and accounts, inserted in bulk through the ORM; returns keys and addresses."""
    code = f"""
import json, random, uuid, datetime
import django; django.setup()
from django.utils import timezone
from solders.keypair import Keypair
from accounts.models import Account
from tenancy.models import TenantOrganization
from tenancy.services import api_key_create
out = {{"keys": {{}}, "addresses": {{}}}}
types = ["WALLET", "ASSETS_WALLET", "CURRENCIES_WALLET", "DEFI_SETTLEMENT_WALLET", "TOKEN_MANAGEMENT_AUTHORITY"]
now = timezone.now()
per = {ACCOUNTS} // {TENANTS}
for t in range({TENANTS}):
    tenant = TenantOrganization.objects.create(external_id=f"T{{t:02d}}", name=f"Tenant {{t}}")
    out["keys"][tenant.external_id] = api_key_create(organization=tenant, rate_limit_per_minute=0).secret
    rows = []
    for i in range(per):
        rows.append(Account(tenant=tenant, cluster="CHAIN_LOCALNET", address=str(Keypair().pubkey()), managed=False, type=types[i % 5], shared_across_tenants=bool(i % 7 == 0),
                            code=f"C{{t}}-{{i}}", name=f"account {{i}}", lamports_balance=random.randint(0, 10**12),
                            creation_transaction_at=now - datetime.timedelta(seconds=i), last_transaction_at=now - datetime.timedelta(seconds=i // 2)))
    Account.unscoped.bulk_create(rows, batch_size=5000)
    out["addresses"][tenant.external_id] = [r.address for r in random.sample(rows, min(2000, len(rows)))]
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _lua_details(data: dict) -> str:
    pairs = [(data["keys"][t], a) for t in data["keys"] for a in data["addresses"][t][:200]]
    random.Random(1).shuffle(pairs)
    rows = "".join(f'reqs[{i + 1}] = {{"{k}", "{a}"}}\n' for i, (k, a) in enumerate(pairs))
    return ("local reqs = {}\n" + rows + """
local n = 0
request = function()
  n = n % #reqs + 1
  local r = reqs[n]
  return wrk.format("POST", "/api/v1/accounts/single", {["Authorization"]="Bearer " .. r[1], ["Content-Type"]="application/json"}, '{"itemData":{"onchainId":"' .. r[2] .. '"}}')
end
""")


def _lua_page(secret: str) -> str:
    body = json.dumps(PAGE_QUERY).replace('"', '\\"')
    return f'wrk.method = "POST"\nwrk.body = "{body}"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer {secret}"\n'


def _server_label(env: dict) -> str:
    import multiprocessing

    workers = env.get("GUNICORN_WORKERS") or multiprocessing.cpu_count() * 2
    return f"gunicorn {workers} workers x {env.get('GUNICORN_THREADS') or 2} threads"


def measure(port: int, data: dict, tenants: list, common: dict, sql_ms: float) -> None:
    def details(rnd):
        tenant = rnd.choice(tenants)
        body = json.dumps({"itemData": {"onchainId": rnd.choice(data["addresses"][tenant])}})
        return "POST", "/api/v1/accounts/single", body, {"Authorization": f"Bearer {data['keys'][tenant]}", "Content-Type": "application/json"}

    def page(rnd):
        tenant = rnd.choice(tenants)
        return "POST", "/api/v1/accounts/bulk/detailed", json.dumps(PAGE_QUERY), {"Authorization": f"Bearer {data['keys'][tenant]}", "Content-Type": "application/json"}

    wait_until_up(port, details(random.Random(0)))
    load(port, details, CONCURRENCY, 2.0)  # warm-up: connections, caches, prepared statements
    fetch = wrk_load(port, _lua_details(data), "/api/v1/accounts/single", CONCURRENCY, DURATION) or {"load_generator": "python", **load(port, details, CONCURRENCY, DURATION)}
    bulk = wrk_load(port, _lua_page(data["keys"][tenants[0]]), "/api/v1/accounts/bulk/detailed", CONCURRENCY, DURATION) or {"load_generator": "python", **load(port, page, CONCURRENCY, DURATION)}
    common = {"accounts": ACCOUNTS, "tenants": TENANTS, "concurrency": CONCURRENCY, "database": "postgresql", **common}
    print(json.dumps({"bench": "accounts_fetch_details", **common, **fetch, "target_p99_ms": 15}), flush=True)
    print(json.dumps({"bench": "accounts_bulk_page_100", **common, **bulk, "target_p50_ms": 50, "raw_sql_p50_ms": round(sql_ms, 2)}), flush=True)


def main() -> None:
    with throwaway_database() as db_url:
        env = {**os.environ, "DATABASE_URL": db_url, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings"}
        env.pop("REDIS_URL", None)
        manage(env, "migrate", "--noinput", "-v0")
        started = time.perf_counter()
        data = seed(env)
        seed_seconds = time.perf_counter() - started
        vacuum_analyze(db_url)
        tenants = list(data["keys"])
        sql_ms = orm_page_ms(env, tenants[0], "accounts.selectors:account_list", PAGE_QUERY["itemQuery"], "accounts.Account")
        # BENCH_SERVER_CONFIGS="4x2,8x1" compares gunicorn workers x threads in one run.
        for config in (os.environ.get("BENCH_SERVER_CONFIGS") or "default").split(","):
            server_env = dict(env)
            if config != "default":
                server_env["GUNICORN_WORKERS"], server_env["GUNICORN_THREADS"] = config.split("x")
            port = free_port()
            server = gunicorn(server_env, port)
            try:
                measure(port, data, tenants, {"seed_seconds": round(seed_seconds, 1), "server": _server_label(server_env)}, sql_ms)
            finally:
                server.terminate()
                server.wait(10)


if __name__ == "__main__":
    main()
