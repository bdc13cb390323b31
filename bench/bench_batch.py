"""Batch payouts end to end (docs/positions.md, "Batch payouts"): the Payroll benchmark.

10,000 transfers among 100 holders, sent as 10 requests of 1,000 to
POST /api/v1/positions/transfer/batch, against the stack as `make run` starts it (local
node, one Celery worker with beat, gunicorn), on the embedded default (SQLite, filesystem
broker) and on PostgreSQL + Redis. Reported: the time from the first request to the last
confirmation and confirmed transfers/s (targets: >= 200/s on PostgreSQL + Redis, >= 100/s
embedded), the HTTP time of each batch request, how many transactions carried the items,
and the raw local-node transfer rate of the same run. One JSON line per setup.

BENCH_BATCH_HOLDERS (100), BENCH_BATCH_REQUESTS (10), BENCH_BATCH_ITEMS (1000),
BENCH_BATCH_CLIENTS (2: batch requests in flight at once), BENCH_E2E_SETUPS as bench_e2e;
BENCH_BATCH_WEB_LOG: keep the API's log in this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.bench_e2e import call, confirmed, ok, raw_node_rate, stack  # noqa: E402
from bench.common import gunicorn, manage, stop_processes, throwaway_database  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402

HOLDERS = int(os.environ.get("BENCH_BATCH_HOLDERS", "100"))
REQUESTS = int(os.environ.get("BENCH_BATCH_REQUESTS", "10"))
ITEMS = int(os.environ.get("BENCH_BATCH_ITEMS", "1000"))
CLIENTS = int(os.environ.get("BENCH_BATCH_CLIENTS", "2"))
SETUPS = os.environ.get("BENCH_E2E_SETUPS", "embedded,postgres").split(",")
WEB_LOG = os.environ.get("BENCH_BATCH_WEB_LOG")
TARGETS = {"postgres": 200.0, "embedded": 100.0}


def setup_holders(port: int, key: str) -> list[dict]:
    """HOLDERS WALLET owners, each with a funded position in one SPL instrument."""
    authority = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True}}, key)["newAccount"]
    instrument = confirmed(port, "POST", "/api/v1/financial-instruments", {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Payroll Dollar", "symbol": "PAY", "decimals": 2}}}, key)["newFinancialInstrument"]
    lookup = {"offchainId": instrument["offchainId"]}

    def holder(_):
        owner = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}}}, key)["newAccount"]
        position = confirmed(port, "POST", "/api/v1/positions", {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": lookup}}, key)["newPosition"]
        confirmed(port, "POST", "/api/v1/positions/mint", {"itemData": {"position": {"position": {"offchainId": position["offchainId"]}}, "value": {"lamports": 10**12}}}, key)
        return {"offchainId": position["offchainId"]}

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(holder, range(HOLDERS)))


def payroll_items(holders: list[dict], k: int) -> list[dict]:
    """Request ``k``: item j is paid by holder j mod n to another holder (an offset of 1 to
    n-1 that moves with j and k), so every holder pays ITEMS/n items per request."""
    n = len(holders)
    return [{"source": {"position": holders[j % n]}, "destination": {"position": holders[(j % n + 1 + (k + j // n) % (n - 1)) % n]},
             "value": {"lamports": 1 + j % 7}} for j in range(ITEMS)]


def batch_state(port: int, key: str, offchain_id: str) -> dict:
    status, body = call(port, "POST", "/api/v1/positions/batches/single", {"itemData": {"batch": {"offchainId": offchain_id}}}, key)
    if status != 200:
        raise RuntimeError(f"Fetch Batch: {status} {body}")
    return body["batch"]


def run_setup(setup: str, raw: float) -> None:
    import contextlib

    procs: list = []
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-batch-") as tmp:
        node, env = stack(setup, tmp, db_url)
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
            key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
            procs.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(Path(tmp) / "beat"), "--concurrency", "2", "--loglevel", "WARNING"],
                                          cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
            port = free_port()
            if WEB_LOG:  # the API's log (errors with their tracebacks) kept for a failed run
                procs.append(subprocess.Popen([sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
                                              cwd=ROOT, env=env, stdout=open(WEB_LOG, "ab"), stderr=subprocess.STDOUT))
            else:
                procs.append(gunicorn(env, port))
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
            holders = setup_holders(port, key)

            http_s: list[float] = []
            batch_ids: list[str] = []
            lock = threading.Lock()
            began = time.time()

            def send(k: int) -> None:
                t0 = time.perf_counter()
                body = ok(port, "POST", "/api/v1/positions/transfer/batch", {"itemData": {"items": payroll_items(holders, k)}}, key, expect=(200,))["batch"]
                with lock:
                    http_s.append(time.perf_counter() - t0)
                    batch_ids.append(body["offchainId"])

            with ThreadPoolExecutor(CLIENTS) as pool:
                list(pool.map(send, range(REQUESTS)))
            accepted = time.time() - began
            done: dict[str, dict] = {}
            deadline = time.time() + 900
            while len(done) < len(batch_ids) and time.time() < deadline:
                for offchain_id in batch_ids:
                    if offchain_id in done:
                        continue
                    state = batch_state(port, key, offchain_id)
                    if not any(s in state["counts"] for s in ("SIGNED", "SUBMITTED", "RETRYING")):
                        done[offchain_id] = state
                time.sleep(0.2)
            span = time.time() - began  # first request → last confirmation seen (within one poll)
            counts: dict[str, int] = {}
            carriers: set[str] = set()
            for state in done.values():
                for status, n in state["counts"].items():
                    counts[status] = counts.get(status, 0) + n
                carriers |= {i["svmTransaction"]["offchainId"] for i in state["items"] if i["svmTransaction"]}
            confirmed_n = counts.get("CONFIRMED", 0) + counts.get("FINALIZED", 0)
            print(json.dumps({
                "bench": "e2e_batch_payroll", "setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite",
                "broker": "redis" if setup == "postgres" else "filesystem", "holders": HOLDERS, "requests": REQUESTS, "items_per_request": ITEMS,
                "clients": CLIENTS, "transfers": REQUESTS * ITEMS, "statuses": counts, "transactions": len(carriers),
                "seconds_first_request_to_last_confirmation": round(span, 1), "seconds_all_accepted": round(accepted, 1),
                "http_s_per_batch_p50": round(sorted(http_s)[len(http_s) // 2], 2) if http_s else None, "http_s_per_batch_max": round(max(http_s), 2) if http_s else None,
                "confirmed_transfers_per_s": round(confirmed_n / span, 1) if span else 0.0, "target_per_s": TARGETS.get(setup),
                "raw_node_transfers_per_s": raw,
            }), flush=True)
        finally:
            stop_processes(procs)
            node.stop()


def main() -> None:
    raw = raw_node_rate()
    for setup in SETUPS:
        run_setup(setup, raw)


if __name__ == "__main__":
    main()
