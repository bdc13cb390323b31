"""Drain scaling of the sharded pump (docs/performance.md, "Drain scaling"; docs/capacity.md).

Transfers are accepted through the HTTP API with no worker running (their transactions stay
SIGNED, their kicks wait in the broker as they would during an outage); then 1 or 2 worker
processes start (``celery worker --concurrency 1`` each, as two machines would run them;
the first with beat) and the drain to CONFIRMED is timed. The drain is followed with a cheap
count (Fetch Transactions filtered by status, ``limit`` 1), not by polling each transaction.

Each measurement gets a fresh stack (node, database, gunicorn). The transfers come from
BENCH_DRAIN_SOURCES positions (TOKEN_MANAGEMENT_AUTHORITY owners: no debit limits), each to
its own destination, round robin: the shard key is the source's owner (transactions/shards.py),
so the sources spread over the shards. One JSON line per measurement, then the ratio:
- ``drain_s``: workers started → nothing SIGNED or SUBMITTED (as the count saw it);
- ``confirmed_per_s``: transfers / (last confirmed_at − first submitted_at), from the rows;
- ``cpu_ms_per_transfer``: CPU per transfer by component during the drain (bench/cpu.py).
- ``postgres_backend_cpu_ms_per_transfer``: the CPU of this run's own PostgreSQL backends
  (pg_stat_activity of its database at the end of the drain: the workers' connections,
  opened when they started), per transfer. Counting every process named postgres, as
  bench_e2e does, also counts other databases' backends on a shared server.
A backlog must be sent before its blockhash expires (150 slots): the node's slot is
stretched to BENCH_DRAIN_SLOT_SECONDS (default 1.0: 150 s) so that the accept phase fits,
and any EXPIRED transfer is reported. BENCH_DRAIN_OPS (default 5000), BENCH_DRAIN_HOLDERS
(default 1,2), BENCH_DRAIN_SETUPS (default postgres; embedded: SQLite has one writer),
BENCH_DRAIN_SHARDS (LEDGER_PUMP_SHARDS, default the setting's). BENCH_DRAIN_PROFILE=1: after
the accept phase, one holder pumps in process under cProfile (bench/profile_pump.py)
instead of the workers, and prints where its time goes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import cpu  # noqa: E402
from bench.bench_e2e import call, confirmed, ok, run_load, stack  # noqa: E402
from bench.common import gunicorn, manage, stop_processes, throwaway_database  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402

OPS = int(os.environ.get("BENCH_DRAIN_OPS", "5000"))
HOLDERS = [int(h) for h in os.environ.get("BENCH_DRAIN_HOLDERS", "1,2").split(",")]
SETUPS = os.environ.get("BENCH_DRAIN_SETUPS", "postgres").split(",")
SOURCES = int(os.environ.get("BENCH_DRAIN_SOURCES", "16"))
SHARDS = os.environ.get("BENCH_DRAIN_SHARDS")
SLOT_SECONDS = os.environ.get("BENCH_DRAIN_SLOT_SECONDS", "1.0")
PROFILE = os.environ.get("BENCH_DRAIN_PROFILE") == "1"
PENDING = {"itemQuery": {"limit": 1, "filter": [{"fieldName": "status", "filterValues": [{"dataType": "TEXT", "filterType": "IN", "valuesString": ["SIGNED", "SUBMITTED"]}]},
                                                 {"fieldName": "operation", "filterValues": [{"dataType": "TEXT", "filterType": "EQUALS", "valueString": "positions.transfer"}]}]}}


def worker(env: dict, tmp: str, name: str, beat: bool) -> subprocess.Popen:
    args = [sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "-n", f"{name}@%h", "--concurrency", "1", "--loglevel", "WARNING"]
    if beat:
        args += ["--beat", "--schedule", str(Path(tmp) / f"beat-{name}")]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)


def setup_sources(port: int, key: str) -> list[tuple[dict, dict]]:
    """SOURCES (source, destination) position pairs of one SPL instrument; each source holds plenty."""
    authority = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True}}, key)["newAccount"]
    instrument = confirmed(port, "POST", "/api/v1/financial-instruments", {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Drain Dollar", "symbol": "DRN", "decimals": 2}}}, key)["newFinancialInstrument"]
    lookup = {"offchainId": instrument["offchainId"]}

    def position() -> dict:
        owner = ok(port, "POST", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "TOKEN_MANAGEMENT_AUTHORITY"}}}, key)["newAccount"]
        made = confirmed(port, "POST", "/api/v1/positions", {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": lookup}}, key)["newPosition"]
        return {"offchainId": made["offchainId"]}

    pairs = []
    for _ in range(SOURCES):
        source, destination = position(), position()
        confirmed(port, "POST", "/api/v1/positions/mint", {"itemData": {"position": {"position": source}, "value": {"lamports": 10**15}}}, key)
        pairs.append((source, destination))
    return pairs


def pending(port: int, key: str) -> int:
    status, data = call(port, "POST", "/api/v1/transactions/bulk/identifiers", PENDING, key)
    if status != 200:
        raise SystemExit(f"Fetch Transactions: {status} {data}")
    return data["count"]


def facts(env: dict) -> dict:
    """From the rows, after the drain: statuses, the transfers' spread over shards, and the
    span first submitted → last confirmed."""
    code = """
import json
from collections import Counter
import django; django.setup()
from django.db.models import Max, Min
from transactions.models import Transaction
from transactions.shards import shard_of
rows = Transaction.unscoped.filter(operation="positions.transfer")
span = rows.aggregate(first=Min("submitted_at"), last=Max("confirmed_at"))
print(json.dumps({"statuses": {s: n for s, n in Counter(rows.values_list("status", flat=True)).items()},
                  "per_shard": sorted(Counter(shard_of(k) for k in rows.values_list("shard_key", flat=True)).values(), reverse=True),
                  "span_s": (span["last"] - span["first"]).total_seconds() if span["last"] and span["first"] else None}))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def backend_cpu_ms(db_url: str) -> float:
    """CPU ms the live backends of ``db_url``'s database used since they started."""
    name = db_url.rsplit("/", 1)[1]
    out = subprocess.run(["psql", db_url, "-tAc", f"select pid from pg_stat_activity where datname = '{name}' and pid <> pg_backend_pid()"], check=True, capture_output=True, text=True).stdout
    sampled = cpu.sample({}, None, {pid: int(pid) for pid in out.split()})
    return sum(ms for label, ms in sampled.items() if label != "machine")


def measure(setup: str, holders: int) -> dict:
    import contextlib

    procs: list = []
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-drain-") as tmp:
        node, env = stack(setup, tmp, db_url, node_args=("--slot-seconds", SLOT_SECONDS))
        if SHARDS:
            env["LEDGER_PUMP_SHARDS"] = SHARDS
        workers: list = []
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
            key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
            workers.append(worker(env, tmp, "setup", beat=True))
            port = free_port()
            procs.append(gunicorn(env, port))
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
            pairs = setup_sources(port, key)
            stop_processes(workers, timeout=60)  # warm shutdown: a running pump finishes its run
            workers = []
            time.sleep(float(os.environ.get("LEDGER_PUMP_LEASE_SECONDS", "5")) + 0.5)  # its leases lapse
            accept_roots = {"web": procs[0].pid, "node": node.proc.pid}
            accept_before = cpu.sample(accept_roots)
            _, _, accept_wall = run_load(port, key, lambda i: {"itemData": {"source": {"position": pairs[i % len(pairs)][0]}, "destination": {"position": pairs[i % len(pairs)][1]},
                                                                              "value": {"lamports": 1 + i % 7}}}, "/api/v1/positions/transfer", 8, OPS)
            accept_cpu = cpu.per_operation(accept_before, cpu.sample(accept_roots), OPS)
            waiting = pending(port, key)
            if PROFILE:  # one holder in process under cProfile instead of the workers (bench/profile_pump.py)
                print(subprocess.run([sys.executable, "bench/profile_pump.py"], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1], flush=True)
                return {"bench": "drain", "profiled": True}
            by_name = {"postgres": "postgres"} if setup == "postgres" else {}
            started = time.monotonic()
            workers = [worker(env, tmp, f"w{i + 1}", beat=i == 0) for i in range(holders)]
            roots = {"web": procs[0].pid, "node": node.proc.pid, **{f"worker{i + 1}": w.pid for i, w in enumerate(workers)}}
            before = cpu.sample(roots, by_name)
            polls = 0
            while time.monotonic() - started < 3600:
                time.sleep(1.0)
                polls += 1
                if pending(port, key) == 0:
                    break
            drain_s = time.monotonic() - started
            spent = cpu.per_operation(before, cpu.sample(roots, by_name), OPS)
            spent["worker"] = round(sum(spent.pop(f"worker{i + 1}") for i in range(holders)), 2)
            backends = backend_cpu_ms(db_url) / OPS if db_url else None
            found = facts(env)
            return {"bench": "drain", "setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite", "holders": holders,
                    "shards": int(SHARDS) if SHARDS else None, "transfers": OPS, "sources": SOURCES, "accepted_rps": round(OPS / accept_wall, 1),
                    "signed_before_drain": waiting, "drain_s": round(drain_s, 1), "drained_per_s": round(OPS / drain_s, 1),
                    "confirmed_per_s": round(OPS / found["span_s"], 1) if found["span_s"] else None, "count_polls": polls,
                    "cpu_ms_per_transfer": spent, "postgres_backend_cpu_ms_per_transfer": round(backends, 2) if backends is not None else None,
                    "accept_cpu_ms_per_transfer": accept_cpu, "statuses": found["statuses"], "transfers_per_shard": found["per_shard"]}
        finally:
            stop_processes(workers + procs, timeout=60)
            node.stop()


def main() -> None:
    for setup in SETUPS:
        results = {}
        for holders in HOLDERS:
            results[holders] = measure(setup, holders)
            print(json.dumps(results[holders]), flush=True)
        if 1 in results and 2 in results:
            one, two = results[1], results[2]
            print(json.dumps({"bench": "drain_scaling", "setup": setup, "transfers": OPS,
                              "drain_ratio_2_over_1": round(one["drain_s"] / two["drain_s"], 2),
                              "confirmed_ratio_2_over_1": round((two["confirmed_per_s"] or 0) / (one["confirmed_per_s"] or 1), 2), "target_ratio_min": 1.3,
                              "worker_cpu_ms_per_transfer": {1: one["cpu_ms_per_transfer"].get("worker"), 2: two["cpu_ms_per_transfer"].get("worker")}}), flush=True)


if __name__ == "__main__":
    main()
