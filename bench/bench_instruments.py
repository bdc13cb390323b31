"""Financial instruments: creation latency on the local node, calculator throughput, and
Fetch Financial Instruments over 200,000 instruments in PostgreSQL.

1. Create Financial Instrument (TOKEN_2022 with metadata, metadata pointer, pausable,
   permanent delegate, close authority) one after another through the HTTP API: p50 of the
   201 answer (built, simulated, signed, recorded) and p50 with ?wait=confirmed (submitted
   by the Celery worker and confirmed on the node).
2. Token Extensions Calculator at concurrency 8: requests/s.
3. A filtered, sorted page of 100 over 200,000 instruments / 20 tenants at concurrency 8
   (target p50 < 50 ms), detailed and compact, next to the raw SQL time.
Prints one JSON line per measurement. Needs PostgreSQL (DATABASE_URL's server, default local).
Seeds rows for many tenants at once, so it writes through ``Model.unscoped``.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.common import gunicorn, manage, orm_page_ms, stop_processes, throwaway_database, vacuum_analyze, wrk_load  # noqa: E402
from bench.loadgen import closed_loop, wait_until_up  # noqa: E402
from localnet.testing import LocalnetProcess, free_port  # noqa: E402

INSTRUMENTS = int(os.environ.get("BENCH_INSTRUMENTS", "200000"))
TENANTS = 20
CREATES = int(os.environ.get("BENCH_CREATES", "30"))
CONCURRENCY = 8
DURATION = 8.0
PAGE_QUERY = {"itemQuery": {"limit": 100, "filter": [
    {"fieldName": "version", "operator": "AND", "filterValues": [{"dataType": "TEXT", "filterType": "EQUALS", "valueString": "TOKEN_2022"}]},
    {"fieldName": "paused", "operator": "AND", "filterValues": [{"dataType": "BOOLEAN", "filterType": "EQUALS", "valueBoolean": False}]}],
    "sort": [{"fieldName": "creationTransactionAt", "sortDirection": "DESC"}]}}


def call(port: int, method: str, path: str, body: dict, key: str) -> tuple[int, dict, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request(method, path, json.dumps(body), {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = json.loads(response.read() or b"{}")
    return response.status, data, time.perf_counter() - started


def creation(port: int, key: str) -> dict:
    status, body, _ = call(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True}}, key)
    assert status == 201, body
    authority = {"offchainId": body["newAccount"]["offchainId"]}
    item = {
        "offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}}, "version": "TOKEN_2022",
        "mintAuthority": authority, "permanentDelegateAuthority": authority, "closingAuthority": authority, "pausableAuthority": authority,
        "onchainData": {"name": "Bench Bond", "symbol": "BB", "decimals": 2, "uri": "https://bench.example/bb.json"},
    }
    answered, confirmed = [], []
    for i in range(CREATES):
        wait = i % 2 == 1
        status, body, seconds = call(port, "POST", "/api/v1/financial-instruments" + ("?wait=confirmed" if wait else ""), {"itemData": item}, key)
        assert status == 201, body
        if wait:
            assert body["svmTransaction"]["status"] == "CONFIRMED", body
        (confirmed if wait else answered).append(seconds * 1000)
    return {"creates": CREATES, "p50_ms": round(statistics.median(answered), 1), "confirmed_p50_ms": round(statistics.median(confirmed), 1)}


def calculator(port: int, key: str) -> dict:
    body = json.dumps({"extensions": ["METADATA_POINTER", "TOKEN_METADATA", "PAUSABLE", "PERMANENT_DELEGATE", "MINT_CLOSE_AUTHORITY"], "metadata": {"name": "Bench Bond", "symbol": "BB"}})
    script = f'wrk.method = "POST"\nwrk.body = "{body.replace(chr(34), chr(92) + chr(34))}"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer {key}"\n'
    request = ("POST", "/api/v1/financial-instruments/token-extensions-calculator", body, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    closed_loop(port, lambda rnd: request, CONCURRENCY, 1.0)  # warm-up
    return wrk_load(port, script, request[1], CONCURRENCY, DURATION) or {"load_generator": "python", **closed_loop(port, lambda rnd: request, CONCURRENCY, DURATION)}


def seed(env: dict) -> dict:
    """Tenants, keys and instruments (each with its mint account record), in bulk."""
    code = f"""
import json, random, datetime
import django; django.setup()
from django.utils import timezone
from solders.keypair import Keypair
from accounts.models import Account
from instruments.models import FinancialInstrument
from tenancy.models import TenantOrganization
from tenancy.services import api_key_create
out = {{"keys": {{}}}}
now = timezone.now()
per = {INSTRUMENTS} // {TENANTS}
for t in range({TENANTS}):
    tenant = TenantOrganization.objects.create(external_id=f"I{{t:02d}}", name=f"Tenant {{t}}")
    out["keys"][tenant.external_id] = api_key_create(organization=tenant, rate_limit_per_minute=0).secret
    authority = Account.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", address=str(Keypair().pubkey()), managed=False, type="WALLET")
    mints = Account.unscoped.bulk_create([Account(tenant=tenant, cluster="CHAIN_LOCALNET", address=str(Keypair().pubkey()), managed=False, type="ASSET_TOKEN") for _ in range(per)], batch_size=5000)
    rows = []
    for i, mint in enumerate(mints):
        t22 = i % 2 == 0
        rows.append(FinancialInstrument(tenant=tenant, cluster="CHAIN_LOCALNET", mint_account=mint, address=mint.address, version="TOKEN_2022" if t22 else "SPL",
            al_id=f"ALFICBD{{t * per + i:08d}}", al_category="FIXED_INCOME", al_type="CORPORATE_BOND", name=f"Bond {{i}}", symbol=f"B{{i}}", decimals=2,
            extensions=["MINT_CLOSE_AUTHORITY", "METADATA_POINTER", "PAUSABLE", "TOKEN_METADATA"] if t22 else [], paused=(i % 10 == 0) if t22 else None,
            default_position_state="INITIALIZED", mint_authority=authority, mint_authority_address=authority.address,
            pausable_authority=authority if t22 else None, pausable_authority_address=authority.address if t22 else "",
            closing_authority=authority if t22 else None, closing_authority_address=authority.address if t22 else "",
            supply_onchain=random.randint(0, 10**12), creation_transaction_at=now - datetime.timedelta(seconds=i), last_transaction_at=now - datetime.timedelta(seconds=i // 2)))
    FinancialInstrument.unscoped.bulk_create(rows, batch_size=5000)
print(json.dumps(out))
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def page_load(port: int, key: str, level: str) -> dict:
    body = json.dumps(PAGE_QUERY)
    path = f"/api/v1/financial-instruments/bulk/{level}"
    script = f'wrk.method = "POST"\nwrk.body = "{body.replace(chr(34), chr(92) + chr(34))}"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer {key}"\n'
    request = ("POST", path, body, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    wait_until_up(port, request)
    closed_loop(port, lambda rnd: request, CONCURRENCY, 2.0)  # warm-up
    return wrk_load(port, script, path, CONCURRENCY, DURATION) or {"load_generator": "python", **closed_loop(port, lambda rnd: request, CONCURRENCY, DURATION)}


def main() -> None:
    procs: list = []
    with throwaway_database() as db_url, tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
        node = LocalnetProcess(Path(tmp) / "localnet").start()
        env = {**os.environ, "DATABASE_URL": db_url, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings",
               "LEDGER_VAR_DIR": tmp, "LEDGER_LOCALNET_RPC_URL": node.url,
               # Mint rent comes from a funding account (docs/accounts.md, "Who pays"); the
               # benchmark uses the embedded airdrop funding, as make run does.
               "LEDGER_LOCALNET_AIRDROP_FUNDING": "true"}
        env.pop("REDIS_URL", None)  # the filesystem broker under tmp: nothing shared with other runs
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
            key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
            log = open(os.environ["BENCH_WORKER_LOG"], "w") if os.environ.get("BENCH_WORKER_LOG") else subprocess.DEVNULL
            worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--pool", "threads", "--concurrency", "4", "--loglevel", "INFO" if log is not subprocess.DEVNULL else "WARNING"],
                                      cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            procs.append(worker)
            port = free_port()
            procs.append(gunicorn(env, port))
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
            common = {"server": "gunicorn (gunicorn.conf.py)", "database": "postgresql", "chain": "local node"}
            print(json.dumps({"bench": "instruments_create_token2022_5_extensions", **common, **creation(port, key)}), flush=True)
            print(json.dumps({"bench": "instruments_token_extensions_calculator", **common, "concurrency": CONCURRENCY, **calculator(port, key)}), flush=True)

            # The page measurement needs neither the worker nor the node: stop them so
            # their polling does not share the two cores with the server.
            worker.terminate()
            worker.wait(15)
            procs.remove(worker)
            node.stop()
            started = time.perf_counter()
            data = seed(env)
            seed_seconds = round(time.perf_counter() - started, 1)
            vacuum_analyze(db_url)
            tenant = sorted(data["keys"])[0]
            sql_ms = round(orm_page_ms(env, tenant, "instruments.selectors:instrument_list", PAGE_QUERY["itemQuery"], "instruments.FinancialInstrument"), 2)
            for level in ("detailed", "compact"):
                result = page_load(port, data["keys"][tenant], level)
                print(json.dumps({"bench": f"instruments_bulk_page_100_{level}", **common, "instruments": INSTRUMENTS, "tenants": TENANTS, "concurrency": CONCURRENCY,
                                  "seed_seconds": seed_seconds, **result, "target_p50_ms": 50, "raw_sql_p50_ms": sql_ms}), flush=True)
        finally:
            stop_processes(procs)
            node.stop()


if __name__ == "__main__":
    main()
