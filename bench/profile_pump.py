"""Where a pump holder's time goes during a drain (docs/performance.md, "Drain scaling").

Run by bench/bench_drain.py with BENCH_DRAIN_PROFILE=1 in place of the worker processes,
in the drain stack's environment: one holder pumps the backlog in this process under
cProfile for PROFILE_PUMP_SECONDS (default 30), then prints one JSON line: transfers that
reached CONFIRMED meanwhile, the process's CPU per confirmed transfer, the wall time spent
in SQL (by statement kind) and in JSON-RPC calls (by method), and the functions with the
most own time (PROFILE_TOP, default 25) and the most inclusive time among the pump's own
modules. PROFILE_PUMP_DUMP=path also writes the raw profile there (pstats).
"""

from __future__ import annotations

import cProfile
import io
import json
import os
import pstats
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledger_project.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.db import connection  # noqa: E402

from transactions import pump  # noqa: E402
from transactions.models import Transaction, TransactionStatus  # noqa: E402

SECONDS = float(os.environ.get("PROFILE_PUMP_SECONDS", "30"))
TOP = int(os.environ.get("PROFILE_TOP", "25"))
CLUSTER = "CHAIN_LOCALNET"


def main() -> None:
    sql: Counter = Counter()
    rpc: Counter = Counter()

    def timed_sql(execute, sql_text, params, many, context):
        began = time.perf_counter()
        try:
            return execute(sql_text, params, many, context)
        finally:
            sql[sql_text.split(None, 1)[0].upper()] += time.perf_counter() - began

    real_send = httpx.Client.send

    def timed_send(self, request, **kwargs):
        body = json.loads(request.content or b"null")
        method = (body[0] if isinstance(body, list) else body or {}).get("method", "?") if body else "?"
        began = time.perf_counter()
        try:
            return real_send(self, request, **kwargs)
        finally:
            rpc[method] += time.perf_counter() - began

    httpx.Client.send = timed_send
    landed = [TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED]
    before = Transaction.unscoped.filter(status__in=landed).count()
    cpu0 = time.process_time()
    profile = cProfile.Profile()
    with connection.execute_wrapper(timed_sql):
        profile.enable()
        pump.pump_run(CLUSTER, holder=pump.new_holder(), run_seconds=SECONDS)
        profile.disable()
    cpu = time.process_time() - cpu0
    if os.environ.get("PROFILE_PUMP_DUMP"):
        profile.dump_stats(os.environ["PROFILE_PUMP_DUMP"])
    confirmed = Transaction.unscoped.filter(status__in=landed).count() - before
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    own = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:TOP]
    ours = sorted(((k, v) for k, v in stats.stats.items() if "/work/" in k[0] and "/.venv/" not in k[0]), key=lambda kv: -kv[1][3])[:TOP]

    def name(key):
        path, line, fn = key
        return f"{Path(path).parent.name}/{Path(path).name}:{line}:{fn}"

    print(json.dumps({"bench": "profile_pump", "seconds": SECONDS, "confirmed": confirmed, "cpu_s": round(cpu, 2),
                      "cpu_ms_per_confirmed": round(cpu * 1000 / confirmed, 2) if confirmed else None,
                      "sql_wait_s": {k: round(v, 2) for k, v in sql.most_common()}, "rpc_wait_s": {k: round(v, 2) for k, v in rpc.most_common()},
                      "own_s": [(name(k), round(v[2], 3), v[1]) for k, v in own], "inclusive_s": [(name(k), round(v[3], 3)) for k, v in ours]}), flush=True)


if __name__ == "__main__":
    main()
