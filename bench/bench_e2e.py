"""End to end through the HTTP API, against the stack started the way `make run` starts it
(local node, a Celery worker, gunicorn), on the embedded default (SQLite, filesystem
broker) and on PostgreSQL + Redis:

- Transfer Financial Instrument (issue 10) and seeded account creation (issue 11), each
  at concurrency 8 and 32: accepted req/s, HTTP p50/p99, request → CONFIRMED p50/p99 and
  confirmed operations/s (first request → last confirmation);
- the cost of the debit-limit check: the same transfers from a WALLET owner (limits
  evaluated, MANAGED destination: within them) against a TOKEN_MANAGEMENT_AUTHORITY owner
  (no limits apply), as a ratio of confirmed/s in the same run;
- the raw local-node transfer rate (bench_localnet.over_rpc) in the same run.
One JSON line per measurement. BENCH_E2E_OPS (default 200) operations per measurement;
BENCH_E2E_SETUPS=embedded,postgres picks setups. BENCH_E2E_HTTP_ONLY=1 measures the request
path alone: the worker stops once the setup is confirmed, so the requests share the
machine with gunicorn, the node and the database only; their transactions stay SIGNED
(their submissions wait in a queue of the run's own) and only accepted req/s and HTTP
latency are reported (docs/performance.md).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import cpu  # noqa: E402
from bench.common import gunicorn, manage, stop_processes, throwaway_database  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import LocalnetProcess, free_port  # noqa: E402

OPS = int(os.environ.get("BENCH_E2E_OPS", "200"))
SETUPS = os.environ.get("BENCH_E2E_SETUPS", "embedded,postgres").split(",")
CASES = [c for c in os.environ.get("BENCH_E2E_CASES", "").split(",") if c]  # e.g. create_account_seeded; default: all
CONCURRENCY = [int(c) for c in os.environ.get("BENCH_E2E_CONCURRENCY", "8,32").split(",")]
WORKER_LOG = os.environ.get("BENCH_E2E_WORKER_LOG")  # keep the worker's log (DEBUG for the pump) here
TERMINAL = {"CONFIRMED", "FINALIZED", "FAILED", "EXPIRED", "CANCELLED"}
HTTP_ONLY = os.environ.get("BENCH_E2E_HTTP_ONLY") == "1"


def call(port: int, method: str, path: str, body: dict, key: str, conn=None) -> tuple[int, dict]:
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request(method, path, json.dumps(body), {"Authorization": f"Bearer {key}", "Content-Type": "application/json", "x-request-id": str(uuid.uuid4())})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def ok(port, method, path, body, key, expect=(200, 201)) -> dict:
    status, data = call(port, method, path, body, key)
    if status not in expect:
        raise SystemExit(f"{method} {path}: {status} {data}")
    return data


def confirmed(port, method, path, body, key) -> dict:
    data = ok(port, method, path + "?wait=confirmed", body, key)
    tx = data.get("svmTransaction")
    if tx is not None and tx["status"] not in ("CONFIRMED", "FINALIZED"):
        raise SystemExit(f"{path}: {tx}")
    return data


def setup_instrument(port: int, key: str) -> dict:
    """Two WALLET owners and two TOKEN_MANAGEMENT_AUTHORITY owners with positions in one SPL
    instrument; the sources hold plenty."""
    authority = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True}}, key)["newAccount"]
    instrument = confirmed(port, "POST", "/api/v1/financial-instruments", {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Bench Dollar", "symbol": "BUSD", "decimals": 2}}}, key)["newFinancialInstrument"]
    lookup = {"offchainId": instrument["offchainId"]}
    out = {}
    for kind in ("WALLET", "TOKEN_MANAGEMENT_AUTHORITY"):
        pair = []
        for _ in range(2):
            owner = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": kind}}}, key)["newAccount"]
            position = confirmed(port, "POST", "/api/v1/positions", {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": lookup}}, key)["newPosition"]
            pair.append({"offchainId": position["offchainId"]})
        confirmed(port, "POST", "/api/v1/positions/mint", {"itemData": {"position": {"position": pair[0]}, "value": {"lamports": 10**15}}}, key)
        out[kind] = pair
    return out


def run_load(port: int, key: str, make_body, path: str, concurrency: int, n: int) -> tuple[list[tuple[str, float]], list[float], float]:
    """``n`` requests from ``concurrency`` keep-alive clients; returns (offchainId of the
    transaction, request start time) pairs, HTTP latencies and the wall time."""
    started_at: list[tuple[str, float]] = []
    latencies: list[float] = []
    lock = threading.Lock()
    counter = iter(range(n))

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            t0 = time.time()
            p0 = time.perf_counter()
            status, data = call(port, "POST", path, make_body(i), key, conn)
            elapsed = time.perf_counter() - p0
            if status not in (200, 201):
                raise RuntimeError(f"{path}: {status} {data}")
            with lock:
                latencies.append(elapsed)
                started_at.append((data["svmTransaction"]["offchainId"], t0))

    began = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return started_at, latencies, time.perf_counter() - began


def settle_times(env: dict, ids: list[str], timeout: float = 600) -> dict[str, tuple[str, float | None]]:
    """Wait until every transaction is terminal; (status, confirmed_at epoch) by offchainId,
    read from the database (the status endpoint says the same, one request per id)."""
    code = """
import json, os, sys, time
import django; django.setup()
from transactions.models import Transaction
ids = json.load(sys.stdin)
deadline = time.time() + float(os.environ["SETTLE_TIMEOUT"])
while True:
    rows = {str(o): (s, c.timestamp() if c else None) for o, s, c in Transaction.unscoped.filter(offchain_id__in=ids).values_list("offchain_id", "status", "confirmed_at")}
    if all(rows.get(i, ("", None))[0] in ("CONFIRMED", "FINALIZED", "FAILED", "EXPIRED", "CANCELLED") for i in ids) or time.time() > deadline:
        print(json.dumps(rows)); break
    time.sleep(0.2)
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "SETTLE_TIMEOUT": str(timeout)}, input=json.dumps(ids), check=True, capture_output=True, text=True)
    return {k: tuple(v) for k, v in json.loads(result.stdout.strip().splitlines()[-1]).items()}


def drain(env: dict, timeout: float = 120) -> None:
    """Wait until no transaction is still followed (SUBMITTED or CONFIRMED, not yet
    finalized): the next measurement starts with an idle worker, not the previous one's
    finalization polling."""
    code = """
import os, time
import django; django.setup()
from transactions.models import Transaction
deadline = time.time() + float(os.environ["DRAIN_TIMEOUT"])
while Transaction.unscoped.filter(status__in=["SIGNED", "SUBMITTED", "CONFIRMED"]).exists() and time.time() < deadline:
    time.sleep(0.5)
"""
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, "DRAIN_TIMEOUT": str(timeout)}, check=True)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1)


def measure(env: dict, port: int, key: str, name: str, path: str, make_body, concurrency: int, roots: dict[str, int]) -> dict:
    by_name = {"postgres": "postgres"} if env.get("DATABASE_URL") else {}
    if HTTP_ONLY:
        before = cpu.sample(roots, by_name, {"loadgen": os.getpid()})
        started_at, latencies, wall = run_load(port, key, make_body, path, concurrency, OPS)
        return {"bench": f"e2e_http_only_{name}", "concurrency": concurrency, "operations": OPS, "accepted_rps": round(OPS / wall, 1),
                "http_p50_ms": pct(latencies, 0.5), "http_p99_ms": pct(latencies, 0.99),
                "cpu_ms_per_op": cpu.per_operation(before, cpu.sample(roots, by_name, {"loadgen": os.getpid()}), OPS)}
    drain(env)
    before = cpu.sample(roots, by_name, {"loadgen": os.getpid()})
    started_at, latencies, wall = run_load(port, key, make_body, path, concurrency, OPS)
    settled = settle_times(env, [i for i, _ in started_at])
    spent = cpu.per_operation(before, cpu.sample(roots, by_name, {"loadgen": os.getpid()}), OPS)
    to_confirmed = [settled[i][1] - t0 for i, t0 in started_at if settled.get(i, ("", None))[0] in ("CONFIRMED", "FINALIZED") and settled[i][1]]
    confirmed_n = len(to_confirmed)
    last = max((settled[i][1] for i, _ in started_at if settled.get(i, ("", None))[1]), default=None)
    first = min(t0 for _, t0 in started_at)
    span = (last - first) if last else None
    statuses: dict[str, int] = {}
    for i, _ in started_at:
        statuses[settled.get(i, ("UNKNOWN",))[0]] = statuses.get(settled.get(i, ("UNKNOWN",))[0], 0) + 1
    return {
        "bench": f"e2e_{name}", "concurrency": concurrency, "operations": OPS, "accepted_rps": round(OPS / wall, 1),
        "http_p50_ms": pct(latencies, 0.5), "http_p99_ms": pct(latencies, 0.99),
        "to_confirmed_p50_ms": pct(to_confirmed, 0.5), "to_confirmed_p99_ms": pct(to_confirmed, 0.99),
        "confirmed_per_s": round(confirmed_n / span, 1) if span else 0.0, "statuses": statuses,
        # Where each operation's CPU went ("other": the settle poller's process and the rest
        # of the machine), and the rate the cores could reach at the service's own cost
        # (web, worker, node, database server) if nothing else ran.
        "cpu_ms_per_op": spent, "service_cpu_bound_ops_per_s": service_bound(spent),
    }


def service_bound(spent: dict) -> float | None:
    service = sum(spent.get(k, 0.0) for k in ("web", "worker", "node", "postgres"))
    return round(os.cpu_count() * 1000 / service, 1) if service else None


def raw_node_rate() -> float:
    from bench.bench_localnet import over_rpc

    return round(over_rpc(1500)[0][0][0], 1)


def stack(setup: str, tmp: str, db_url: str | None, node_args: tuple[str, ...] = ()):
    node = LocalnetProcess(Path(tmp) / "localnet", extra_args=node_args).start()
    # A queue of the run's own: a shared Redis may carry other workers' "ledger" queue.
    env = {**os.environ, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings", "LEDGER_VAR_DIR": tmp,
           "LEDGER_LOCALNET_RPC_URL": node.url, "LEDGER_LOCALNET_AIRDROP_FUNDING": "true", "LEDGER_EMBEDDED": "1",
           "LEDGER_TASK_QUEUE": f"bench-{uuid.uuid4().hex[:8]}"}
    if setup == "postgres":
        env.update({"DATABASE_URL": db_url, "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), "LEDGER_CACHE_PREFIX": f"bench{uuid.uuid4().hex[:6]}"})
    else:
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
    return node, env


def run_setup(setup: str, raw: float) -> None:
    import contextlib

    procs: list = []
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-e2e-") as tmp:
        node, env = stack(setup, tmp, db_url)
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
            key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
            # As make run starts it (scripts/run_embedded.py): one worker, beat, concurrency 2.
            worker_out = open(WORKER_LOG, "ab") if WORKER_LOG else subprocess.DEVNULL
            worker_env = {**env, "LOG_LEVEL": "DEBUG"} if WORKER_LOG else env
            procs.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(Path(tmp) / "beat"), "--concurrency", "2", "--loglevel", "INFO" if WORKER_LOG else "WARNING"],
                                          cwd=ROOT, env=worker_env, stdout=worker_out, stderr=subprocess.STDOUT))
            port = free_port()
            procs.append(gunicorn(env, port))
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
            positions = setup_instrument(port, key)
            if HTTP_ONLY:
                worker = procs.pop(0)
                worker.terminate()
                worker.wait(30)
            common = {"setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite", "broker": "redis" if setup == "postgres" else "filesystem", "raw_node_transfers_per_s": raw}

            def transfer(kind):
                source, destination = positions[kind]
                return lambda i: {"itemData": {"source": {"position": source}, "destination": {"position": destination}, "value": {"lamports": 1 + i % 7}}}

            def seeded_account(i):
                return {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}

            results = {}
            for concurrency in CONCURRENCY:
                for name, path, body in (("transfer_financial_instrument", "/api/v1/positions/transfer", transfer("WALLET")),
                                         ("transfer_no_debit_limits", "/api/v1/positions/transfer", transfer("TOKEN_MANAGEMENT_AUTHORITY")),
                                         ("create_account_seeded", "/api/v1/accounts", seeded_account)):
                    if CASES and name not in CASES:
                        continue
                    roots = {"web": procs[-1].pid, "node": node.proc.pid}
                    if not HTTP_ONLY:
                        roots["worker"] = procs[0].pid
                    result = measure(env, port, key, name, path, body, concurrency, roots)
                    results[(name, concurrency)] = result
                    print(json.dumps({**result, **common}), flush=True)
                with_limits, without = results.get(("transfer_financial_instrument", concurrency)), results.get(("transfer_no_debit_limits", concurrency))
                if with_limits and without and without.get("confirmed_per_s"):
                    print(json.dumps({"bench": "e2e_debit_limit_check_cost", "concurrency": concurrency, **common,
                                      "confirmed_per_s_ratio": round(with_limits["confirmed_per_s"] / without["confirmed_per_s"], 3),
                                      "http_p50_ratio": round((with_limits["http_p50_ms"] or 0) / (without["http_p50_ms"] or 1), 3), "target_ratio_min": 0.9}), flush=True)
        finally:
            stop_processes(procs)
            node.stop()
            if HTTP_ONLY and setup == "postgres":  # the submissions no worker took
                import redis

                redis.Redis.from_url(env["REDIS_URL"]).delete(env["LEDGER_TASK_QUEUE"])


def main() -> None:
    raw = raw_node_rate()
    for setup in SETUPS:
        run_setup(setup, raw)


if __name__ == "__main__":
    main()
