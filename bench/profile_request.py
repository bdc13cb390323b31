"""Where the time of one chain-changing request goes (issue 11; docs/performance.md).

In process, through Django's test client (the whole middleware, DRF and view stack; no
HTTP parsing), against a local node, on SQLite and on PostgreSQL:

- Transfer Financial Instrument between two existing positions (WALLET owner, debit
  limits evaluated), and
- Create Account, managed, seeded with lamports (on the local node the seed comes from
  the airdrop funder, as in bench_e2e),

each ``PROFILE_OPS`` times (default 200) with an ``x-request-id``. For each it prints one
JSON line: wall time per request (p50, mean), SQL queries and RPC calls per request (by
statement kind and by JSON-RPC method) with the time spent waiting on each, the Celery
enqueue time, and the CPU left for Python (wall minus database, RPC and enqueue). A
second pass under cProfile attributes that Python time to the stages of the request
(``STAGES``: inclusive times of named functions, without the waits inside them).

Setup goes through the API with a Celery worker (``?wait=confirmed``); during the
measured requests the worker is not running and submissions go to a queue no one reads,
so the node and this process have the machine to themselves. PROFILE_SETUPS picks
setups (embedded, postgres); PROFILE_TOP=N prints the N functions with the most own time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = int(os.environ.get("PROFILE_OPS", "200"))
SETUPS = os.environ.get("PROFILE_SETUPS", "embedded,postgres").split(",")
TOP = int(os.environ.get("PROFILE_TOP", "0"))

#: stage → the functions whose time makes it up ("module:qualname"). Time is charged to the
#: innermost stage running (exclusive); database statements, RPC calls and the broker
#: publish inside a stage are charged to that stage's waits, apart from its Python time.
STAGES = {
    "auth: key lookup, throttle, tenant": ["tenancy.authentication:BearerTokenAuthentication.authenticate", "tenancy.throttling:ApiKeyRateThrottle.allow_request",
                                           "tenancy.viewsets:tenant_from_request", "ledger_project.api.clusters:cluster_from_request"],
    "middleware: request id, JSON parse": ["ledger_project.middleware:guard_api_request", "ledger_project.middleware:parse_request_id"],
    "idempotency: fingerprint, lookup": ["tenancy.idempotency:request_fingerprint", "tenancy.idempotency:_run_once"],
    "idempotency: record insert (opens the write phase)": ["tenancy.idempotency:_Pending.begin"],
    "body validation": ["ledger_project.api.envelope:validated"],
    "read phase: lookups, checks": ["positions.movement:_transfer_leg", "accounts.services:account_draft"],
    "service body (the rest of it)": ["accounts.services:account_create", "positions.movement:position_transfer"],
    "debit-limit decision": ["positions.movement:_debits"],
    "key generation": ["custody.services:managed_key_generate"],
    "funding (localnet airdrop)": ["accounts.services:funding_signer"],
    "fee payer, svmTransactionConfig": ["accounts.signers:transaction_config"],
    "build: blockhash, compile": ["chain.builder:build", "transactions.services:transaction_build"],
    "simulation": ["chain.rpc:ChainRpc.simulate"],
    "key decryption (signers)": ["custody.services:managed_key_signer"],
    "signing": ["chain.signing:sign_all"],
    "write phase: locks, re-checks, rows": ["positions.movement:_write", "accounts.services:funding_effects", "accounts.services:account_save"],
    "key sealing": ["custody.services:managed_key_store"],
    "Transaction row, events": ["transactions.services:transaction_record"],
    "response: serialize": ["transactions.responses:mutation_response"],
    "response: render, store, commit": ["tenancy.idempotency:_Pending.commit"],
}

def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


# --- parent: the stack ------------------------------------------------------------------------


def run_setup(setup: str) -> None:
    import contextlib

    from bench.common import manage, throwaway_database
    from localnet.testing import LocalnetProcess

    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-profile-") as tmp:
        node = LocalnetProcess(Path(tmp) / "localnet").start()
        setup_queue = f"profile-setup-{uuid.uuid4().hex[:6]}"
        env = {**os.environ, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings", "LEDGER_VAR_DIR": tmp,
               "LEDGER_LOCALNET_RPC_URL": node.url, "LEDGER_LOCALNET_AIRDROP_FUNDING": "true", "LEDGER_EMBEDDED": "1", "LEDGER_TASK_QUEUE": setup_queue}
        if setup == "postgres":
            env.update({"DATABASE_URL": db_url, "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), "LEDGER_CACHE_PREFIX": f"prof{uuid.uuid4().hex[:6]}"})
        else:
            env.pop("DATABASE_URL", None)
            env.pop("REDIS_URL", None)
        worker = None
        try:
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "PROF", "--name", "Profile")
            key = json.loads(manage(env, "create_api_key", "--org", "PROF", "--rate-limit", "0"))["secret"]
            worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--concurrency", "2", "--loglevel", "WARNING", "-Q", setup_queue],
                                      cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            child = subprocess.Popen([sys.executable, __file__, "--child", setup], cwd=ROOT, env={**env, "PROFILE_KEY": key}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            # The child does its setup, says "setup done", and waits for the worker to stop.
            line = child.stdout.readline()
            if line.strip() != "setup done":
                raise SystemExit(f"profile child: {line!r}")
            worker.terminate()
            worker.wait(30)
            worker = None
            child.stdin.write("go\n")
            child.stdin.flush()
            for out in child.stdout:
                print(out, end="", flush=True)
            if child.wait() != 0:
                raise SystemExit(f"profile child exited {child.returncode}")
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(30)
            node.stop()


# --- child: in-process measurement ------------------------------------------------------------


class StageClock:
    """Time per (stage, kind), exclusive (the innermost stage running is charged): kind
    "python" (the stage's own code), "sql:<VERB>", "rpc:<method>" or "enqueue" (waits).
    Wall time and this thread's CPU time both: on a shared machine the CPU time is the
    steadier measure of what the request costs. Single-threaded (the test client)."""

    def __init__(self):
        self.active = False
        self.trace: list[str] | None = None
        self.prev_end = 0.0
        self.reset()

    def reset(self):
        self.stack = ["other: Django, DRF, test client"]
        self.last, self.last_cpu = time.perf_counter(), time.thread_time()
        self.time: dict[tuple[str, str], float] = {}
        self.cpu: dict[tuple[str, str], float] = {}
        self.count: dict[tuple[str, str], int] = {}

    def _charge(self, kind: str = "python") -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        if self.active:
            key = (self.stack[-1], kind)
            self.time[key] = self.time.get(key, 0.0) + now - self.last
            self.cpu[key] = self.cpu.get(key, 0.0) + cpu - self.last_cpu
        self.last, self.last_cpu = now, cpu

    def enter(self, stage: str) -> None:
        self._charge()
        self.stack.append(stage)

    def leave(self) -> None:
        self._charge()
        self.stack.pop()

    def wait(self, kind: str, fn, *args, detail: str = "", **kwargs):
        self._charge()
        t0, c0 = self.last, self.last_cpu
        gap, self.prev_end = t0 - self.prev_end, t0
        try:
            return fn(*args, **kwargs)
        finally:
            self._charge(kind)
            if self.active:
                key = (self.stack[-1], kind)
                self.count[key] = self.count.get(key, 0) + 1
            if self.trace is not None:
                self.trace.append(f"+{gap * 1000:6.2f} {(self.last - t0) * 1000:6.2f} ms (cpu {(self.last_cpu - c0) * 1000:5.2f})  {self.stack[-1][:28]:28}  {kind:12} {detail[:180]}")
            self.prev_end = self.last

    # --- installing ---------------------------------------------------------------------
    def stage(self, name: str, fn):
        import functools

        clock = self

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            clock.enter(name)
            try:
                return fn(*args, **kwargs)
            finally:
                clock.leave()

        timed.__profiled__ = True
        return timed

    def install(self):
        import importlib

        from celery.app.task import Task
        from django.db.backends.base.base import BaseDatabaseWrapper
        from django.db.backends.utils import CursorWrapper

        from chain.rpc import ChainRpc

        clock = self
        for stage, targets in STAGES.items():
            for target in targets:
                module_name, qualname = target.split(":")
                module = importlib.import_module(module_name)
                owner, attr = module, qualname
                if "." in qualname:
                    cls_name, attr = qualname.split(".")
                    owner = getattr(module, cls_name)
                original = getattr(owner, attr)
                timed = self.stage(stage, original)
                setattr(owner, attr, timed)
                if owner is module:  # also where it was imported by name
                    for other in list(sys.modules.values()):
                        namespace = getattr(other, "__dict__", None)
                        if namespace is None:
                            continue
                        for key, value in list(namespace.items()):
                            if value is original:
                                setattr(other, key, timed)

        def sql_kind(sql) -> str:
            return "sql:" + (sql.split(None, 1)[0].upper() if sql else "?")

        original_execute, original_executemany = CursorWrapper._execute, CursorWrapper._executemany
        CursorWrapper._execute = lambda cursor, sql, params, *ignored: clock.wait(sql_kind(sql), original_execute, cursor, sql, params, *ignored, detail=sql or "")
        CursorWrapper._executemany = lambda cursor, sql, params, *ignored: clock.wait(sql_kind(sql), original_executemany, cursor, sql, params, *ignored, detail=sql or "")
        original_commit = BaseDatabaseWrapper._commit
        BaseDatabaseWrapper._commit = lambda conn: clock.wait("sql:COMMIT", original_commit, conn)
        # SQLite's BEGIN IMMEDIATE goes through a cursor (counted above); PostgreSQL's BEGIN
        # rides on the first statement.

        original_call = ChainRpc._call

        def _call(rpc, fn, *args, **kwargs):
            name = getattr(fn, "__name__", "?")
            if name == "make_request" and args:
                name = type(args[0]).__name__
            return clock.wait(f"rpc:{name}", original_call, rpc, fn, *args, **kwargs)

        ChainRpc._call = _call
        original_apply = Task.apply_async
        Task.apply_async = lambda task, *args, **kwargs: clock.wait("enqueue", original_apply, task, *args, **kwargs)

    def report(self, n: int) -> dict:
        """Per stage: wall ms, CPU ms (its code and the client side of its waits), and per
        wait kind [calls, wall ms]."""
        stages: dict[str, dict] = {}
        for (stage, kind), seconds in self.time.items():
            entry = stages.setdefault(stage, {"ms": 0.0, "cpu_ms": 0.0})
            entry["ms"] += seconds / n * 1000
            entry["cpu_ms"] += self.cpu[(stage, kind)] / n * 1000
            if kind != "python":
                entry[kind] = [round(self.count.get((stage, kind), 0) / n, 2), round(seconds / n * 1000, 3)]
        for entry in stages.values():
            entry["ms"], entry["cpu_ms"] = round(entry["ms"], 3), round(entry["cpu_ms"], 3)
        return dict(sorted(stages.items(), key=lambda item: -item[1]["cpu_ms"]))

    def totals(self, n: int, prefix: str) -> tuple[float, float, float, dict]:
        """(calls, wall ms, CPU ms per request, {kind: [calls, wall ms]}) of waits of ``prefix``."""
        kinds: dict[str, list] = {}
        cpu = 0.0
        for (stage, kind), seconds in self.time.items():
            if kind.startswith(prefix):
                entry = kinds.setdefault(kind[len(prefix):], [0, 0.0])
                entry[0] += self.count.get((stage, kind), 0)
                entry[1] += seconds
                cpu += self.cpu[(stage, kind)]
        calls = sum(v[0] for v in kinds.values()) / n
        ms = sum(v[1] for v in kinds.values()) / n * 1000
        return round(calls, 2), round(ms, 3), round(cpu / n * 1000, 3), {k: [round(v[0] / n, 2), round(v[1] / n * 1000, 3)] for k, v in sorted(kinds.items())}


def child(setup: str) -> None:
    import django

    django.setup()
    from django.db import connection

    from conftest import make_client
    from tests.workers import route_tasks_to

    api = make_client(os.environ["PROFILE_KEY"])

    def call(path, body, wait=False, expect=(200, 201)):
        response = api.call("post", path + ("?wait=confirmed" if wait else ""), body, request_id=uuid.uuid4())
        if response.status_code not in expect:
            raise SystemExit(f"{path}: {response.status_code} {response.content[:500]!r}")
        return response

    # Setup through the API (as bench_e2e): an SPL instrument, two WALLET owners with positions.
    authority = call("/api/v1/accounts", {"itemData": {"managed": True}}).json()["newAccount"]
    instrument = call("/api/v1/financial-instruments", {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Profile Dollar", "symbol": "PUSD", "decimals": 2}}}, wait=True).json()["newFinancialInstrument"]
    positions = []
    for _ in range(2):
        owner = call("/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}}}).json()["newAccount"]
        positions.append(call("/api/v1/positions", {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": {"offchainId": instrument["offchainId"]}}}, wait=True).json()["newPosition"])
    call("/api/v1/positions/mint", {"itemData": {"position": {"position": {"offchainId": positions[0]["offchainId"]}}, "value": {"lamports": 10**15}}}, wait=True)
    print("setup done", flush=True)
    sys.stdin.readline()  # the parent stopped the worker
    route_tasks_to(f"profile-sink-{uuid.uuid4().hex[:6]}")  # submissions: the real broker, no consumer

    source, destination = ({"position": {"offchainId": p["offchainId"]}} for p in positions)
    operations = {
        "transfer_financial_instrument": ("/api/v1/positions/transfer", lambda i: {"itemData": {"source": source, "destination": destination, "value": {"lamports": 1 + i % 7}}}),
        "create_account_seeded": ("/api/v1/accounts", lambda i: {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}),
    }
    clock = StageClock()
    clock.install()
    for name, (path, body) in operations.items():
        for i in range(10):  # warm up: imports, caches, connections
            call(path, body(i))
        clock.reset()
        clock.active = True
        times, cpus = [], []
        for i in range(OPS):
            t0, c0 = time.perf_counter(), time.thread_time()
            call(path, body(i))
            times.append(time.perf_counter() - t0)
            cpus.append(time.thread_time() - c0)
        clock.active = False
        times.sort()
        cpus.sort()
        wall = sum(times) / OPS * 1000
        sql_n, sql_ms, sql_cpu, sql_kinds = clock.totals(OPS, "sql:")
        rpc_n, rpc_ms, rpc_cpu, rpc_kinds = clock.totals(OPS, "rpc:")
        enq_n, enq_ms, enq_cpu, _ = clock.totals(OPS, "enqueue")
        cpu_mean = sum(cpus) / OPS * 1000
        result = {
            "bench": f"profile_{name}", "setup": setup, "database": connection.vendor, "operations": OPS,
            "wall_p50_ms": round(times[OPS // 2] * 1000, 2), "wall_mean_ms": round(wall, 2),
            "cpu_p50_ms": round(cpus[OPS // 2] * 1000, 2), "cpu_mean_ms": round(cpu_mean, 2),
            "sql_per_request": sql_n, "sql_ms": sql_ms, "sql_cpu_ms": sql_cpu, "sql_by_kind": sql_kinds,
            "rpc_per_request": rpc_n, "rpc_ms": rpc_ms, "rpc_cpu_ms": rpc_cpu, "rpc_by_method": rpc_kinds,
            "enqueue_per_request": enq_n, "enqueue_ms": enq_ms, "enqueue_cpu_ms": enq_cpu,
            "python_cpu_ms": round(cpu_mean - sql_cpu - rpc_cpu - enq_cpu, 2),
            "stages": clock.report(OPS),
        }
        print(json.dumps(result), flush=True)
        if os.environ.get("PROFILE_SQL"):  # the statements and RPC calls of one more request
            clock.trace = []
            clock.prev_end = time.perf_counter()
            call(path, body(0))
            print("\n".join(clock.trace), file=sys.stderr, flush=True)
            clock.trace = None
        if TOP:
            print(top_functions(lambda i: call(path, body(i))), file=sys.stderr, flush=True)


def top_functions(run) -> str:
    """The PROFILE_TOP functions with the most own time over a cProfile pass (only inside
    PROFILE_FOCUS="module:function" when set)."""
    import cProfile
    import functools
    import importlib
    import io
    import pstats

    profiler = cProfile.Profile()
    focus = os.environ.get("PROFILE_FOCUS")
    if focus:
        module_name, name = focus.split(":")
        module = importlib.import_module(module_name)
        original = getattr(module, name)

        @functools.wraps(original)
        def focused(*args, **kwargs):
            profiler.enable()
            try:
                return original(*args, **kwargs)
            finally:
                profiler.disable()

        replaced = [(m, k) for m in list(sys.modules.values()) for k, v in list(getattr(m, "__dict__", {}).items()) if v is original]
        for m, k in replaced:
            setattr(m, k, focused)
    else:
        profiler.enable()
    for i in range(max(20, OPS // 4)):
        run(i)
    profiler.disable()
    if focus:
        for m, k in replaced:
            setattr(m, k, original)
        if not profiler.getstats():
            return ""
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer).sort_stats(os.environ.get("PROFILE_SORT", "tottime"))
    if os.environ.get("PROFILE_OURS"):  # only the project's own functions
        stats.print_stats(r"^(?!.*(site-packages|lib/python3)).*\.py", TOP)
    else:
        stats.print_stats(TOP)
    return buffer.getvalue()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    for setup in SETUPS:
        run_setup(setup)


if __name__ == "__main__":
    main()
