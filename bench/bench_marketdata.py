"""Market data (issue 16): evaluations and onchain updates per second across
BENCH_MARKETDATA_FEEDS (default 100) feeds, against the stack `make run` starts (local
node, a Celery worker with beat, gunicorn), on the embedded default (SQLite, filesystem
broker) and on PostgreSQL + Redis, with real local price servers (http.server, in this
process; docs/marketdata.md, "Performance").

Each feed's job is the median of two of BENCH_MARKETDATA_SERVERS (default 4) price servers
(as docs/marketdata.md's example, smaller). Every feed is created through the API (its
instrument too) and confirmed; then, BENCH_MARKETDATA_ROUNDS times (default 3), every feed
is refreshed at once (Refresh Oracle Data Source from 8 clients; the worker evaluates each
job — two HTTP calls — and sends the Update signed by the feed's authority) and the round
ends when every evaluation is settled:

- ``evaluations_per_s``: evaluations finished ÷ (last finish − first request);
- ``onchain_updates_per_s``: updates confirmed on chain ÷ (last confirmation − first request);
- ``request_to_confirmed_p50_ms`` / ``p99``: from a refresh's request to its update's
  confirmation.

The worker runs with beat and BENCH_MARKETDATA_CONCURRENCY (default 8) threads. One JSON
line per setup. BENCH_MARKETDATA_SETUPS=embedded,postgres picks setups.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import cpu  # noqa: E402
from bench.bench_e2e import call, ok, pct, settle_times, stack  # noqa: E402
from bench.common import gunicorn, manage, stop_processes, throwaway_database  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402
from webhooks.tests.webhookkit import JsonSource  # noqa: E402

FEEDS = int(os.environ.get("BENCH_MARKETDATA_FEEDS", "100"))
SERVERS = int(os.environ.get("BENCH_MARKETDATA_SERVERS", "4"))
ROUNDS = int(os.environ.get("BENCH_MARKETDATA_ROUNDS", "3"))
CLIENTS = 8
SETUPS = os.environ.get("BENCH_MARKETDATA_SETUPS", "embedded,postgres").split(",")
BASE = "/api/v1/market-data/onchain-data-source"
SETTLED = ("CONFIRMED", "FAILED", "REJECTED", "NOT_LANDED")


def parallel(port: int, key: str, method: str, path: str, bodies: list[dict]) -> list[tuple[dict, float]]:
    """Every body sent from CLIENTS keep-alive clients; (answer, request start) in order."""
    answers: list = [None] * len(bodies)
    lock, counter = threading.Lock(), iter(range(len(bodies)))

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            began = time.time()
            status, data = call(port, method, path, bodies[i], key, conn)
            if status not in (200, 201):
                raise RuntimeError(f"{method} {path}: {status} {data}")
            answers[i] = (data, began)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def job(servers: list[JsonSource], i: int) -> str:
    pair = (servers[i % len(servers)], servers[(i + 1) % len(servers)])
    return json.dumps({"tasks": [{"medianTask": {"jobs": [{"tasks": [{"httpTask": {"url": s.url("/price")}}, {"jsonParseTask": {"path": "$.price"}}]} for s in pair]}}]})


SETTLE = """
import json, os, sys, time
import django; django.setup()
from marketdata.models import DataSourceEvaluation
ids = json.load(sys.stdin)
deadline = time.time() + 600
while True:
    rows = list(DataSourceEvaluation.unscoped.filter(offchain_id__in=ids).values_list("offchain_id", "status", "finished_at", "transaction__confirmed_at"))
    if all(r[1] in os.environ["SETTLED"].split(",") for r in rows) and len(rows) == len(ids) or time.time() > deadline:
        print(json.dumps([(str(o), s, f.timestamp() if f else None, c.timestamp() if c else None) for o, s, f, c in rows])); break
    time.sleep(0.2)
"""


def refresh_round(env: dict, port: int, key: str, sources: list[dict]) -> tuple[list, float, list[float]]:
    """Refresh every feed at once; (settled rows, first request time, request → confirmed)."""
    answers = parallel(port, key, "PATCH", f"{BASE}/refresh", [{"itemData": {"onchainDataSource": s}} for s in sources])
    began = {a["evaluation"]["offchainId"]: t for a, t in answers}
    result = subprocess.run([sys.executable, "-c", SETTLE], cwd=ROOT, env={**env, "SETTLED": ",".join(SETTLED)}, input=json.dumps(list(began)),
                            check=True, capture_output=True, text=True)
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    waits = [c - began[o] for o, _, _, c in rows if c]
    return [(s, f, c) for _, s, f, c in rows], min(began.values()), waits


def run_setup(setup: str) -> None:
    procs: list = []
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-marketdata-") as tmp:
        node, env = stack(setup, tmp, db_url)
        # The price servers listen on this machine, as with `make run` (docs/marketdata.md).
        env.update({"LEDGER_OUTBOUND_ALLOW_HTTP": "true", "LEDGER_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8"})
        servers = [JsonSource(document={"price": f"{100 + i}.25"}).start() for i in range(SERVERS)]
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
            key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
            procs.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(Path(tmp) / "beat"),
                                           "--concurrency", os.environ.get("BENCH_MARKETDATA_CONCURRENCY", "8"), "--loglevel", "WARNING"],
                                          cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
            port = free_port()
            procs.append(gunicorn(env, port))
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
            ok(port, "POST", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}, key)  # warm-up
            authority = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True}}, key)["newAccount"]
            made = parallel(port, key, "POST", "/api/v1/financial-instruments", [{"itemData": {
                "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
                "onchainData": {"name": f"Bond {i}", "symbol": "BND", "decimals": 0}}} for i in range(FEEDS)])
            settle_times(env, [a["svmTransaction"]["offchainId"] for a, _ in made])
            created = parallel(port, key, "POST", BASE, [{"itemData": {
                "defiProtocol": "PARTNER_ORACLE", "partnerOracleDetails": {"kind": "QUOTES", "jobDefinition": job(servers, i), "refreshIntervalSeconds": None},
                "financialInstrument": {"offchainId": a["newFinancialInstrument"]["offchainId"]}, "oracleDataSourceAuthority": {"offchainId": authority["offchainId"]},
                "dataDetails": {"kind": "PRICE"}}} for i, (a, _) in enumerate(made)])
            settle_times(env, [a["svmTransaction"]["offchainId"] for a, _ in created])
            sources = [a["newOnchainDataSource"] for a, _ in created]

            by_name = {"postgres": "postgres"} if setup == "postgres" else {}
            roots = {"web": procs[1].pid, "worker": procs[0].pid, "node": node.proc.pid}
            before = cpu.sample(roots, by_name, {"loadgen": os.getpid()})
            evaluated = confirmed = 0
            spans_eval, spans_conf, waits, statuses = 0.0, 0.0, [], {}
            for _ in range(ROUNDS):
                rows, first, round_waits = refresh_round(env, port, key, sources)
                finished = [f for _, f, _ in rows if f]
                landed = [c for s, _, c in rows if s == "CONFIRMED" and c]
                evaluated += len(finished)
                confirmed += len(landed)
                spans_eval += (max(finished) - first) if finished else 0
                spans_conf += (max(landed) - first) if landed else 0
                waits += round_waits
                for s, _, _ in rows:
                    statuses[s] = statuses.get(s, 0) + 1
            spent = cpu.per_operation(before, cpu.sample(roots, by_name, {"loadgen": os.getpid()}), confirmed)
            print(json.dumps({
                "bench": "marketdata_refresh", "setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite",
                "broker": "redis" if setup == "postgres" else "filesystem", "feeds": FEEDS, "rounds": ROUNDS, "sources_per_job": 2, "statuses": statuses,
                "evaluations_per_s": round(evaluated / spans_eval, 1) if spans_eval else None,
                "onchain_updates_per_s": round(confirmed / spans_conf, 1) if spans_conf else None,
                "request_to_confirmed_p50_ms": pct(waits, 0.5), "request_to_confirmed_p99_ms": pct(waits, 0.99),
                "cpu_ms_per_update": spent, "worker_threads": int(os.environ.get("BENCH_MARKETDATA_CONCURRENCY", "8")), "load_average": os.getloadavg()[0],
            }), flush=True)
        finally:
            for server in servers:
                server.stop()
            stop_processes(procs)
            node.stop()


def main() -> None:
    for setup in SETUPS:
        run_setup(setup)


if __name__ == "__main__":
    main()
