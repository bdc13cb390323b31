"""The fault campaign (issue 36; docs/chain.md, "The fault campaign"): for each fault
profile, mixed operations through the HTTP API while the chain is reached through the
fault front, a worker and the node each SIGKILLed once and restarted, then the checks.

Per profile and setup, a fresh stack: a throwaway database (PostgreSQL + Redis, or the
embedded SQLite + filesystem broker), a local node on its own data directory, the front
in front of it (``LEDGER_CLUSTERS=CHAIN_LOCALNET=<front>``; the service's
``LEDGER_RPC_BUDGETS`` sized under the profile's rate limits, see ``service_budgets``), the
API under gunicorn and one Celery worker with beat. Then ``--ops`` operations at
``--concurrency`` (faults_client.py: seeded accounts, token and network-currency transfers,
durable-nonce transfers, one 500-item batch payout in the middle), every client retrying
with its own x-request-id; the worker is SIGKILLed at 35 % of the answers and the node at
65 %, each restarted 2 s later (the node on its data directory). Then a count (Fetch
Transactions, ``limit`` 1) until nothing is BUILT, SIGNED or SUBMITTED, and one JSON line:
see docs/chain.md for each field. The checks read the node directly, not through the front.

    .venv/bin/python bench/bench_faults.py --ops 300 --profiles passthrough,flaky --setups postgres

Env: BENCH_FAULTS_OPS (2000), BENCH_FAULTS_CONCURRENCY (8), BENCH_FAULTS_PROFILES (all),
BENCH_FAULTS_SETUPS (postgres,embedded), BENCH_FAULTS_SEED (36), BENCH_FAULTS_KEEP (a
directory: keep every run's logs there).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import cpu  # noqa: E402
from bench.common import manage, throwaway_database  # noqa: E402
from bench.faults_client import Api, build_world, count, queued_payroll, run_operations, wait_until_terminal  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from faultfront.profiles import PROFILES, check_profile, load_profile  # noqa: E402
from faultfront.testing import FaultFrontProcess  # noqa: E402
from localnet.testing import LocalnetProcess, free_port  # noqa: E402

#: Profiles of the campaign's own, for its two target figures.
CAMPAIGN_PROFILES = {
    "send-budget-50": {"description": "sendTransaction at 50 per second (the payroll figure).", "rate_limits": {"methods": {"sendTransaction": [50, 1]}}},
    "lossy-30": {"description": "30% of sends answered and dropped (the managed-transfer figure).", "sends": {"drop": 0.3}},
}
#: Payrolls queued while the worker is down, sent once it is back (profile → batches, items
#: each): the send budget, not this machine's accept rate (~32 transactions/s on 2 cores,
#: docs/performance.md), is then what paces the sends — the figure the campaign checks.
QUEUED_PAYROLLS = {"send-budget-50": (16, 1000)}
DEFAULT_PROFILES = ["passthrough", "rate-limited", "method-budgets", "lagging", "lossy-sends", "flaky", "pruned", "old-blockstore", "staging-mix", "restricted", *CAMPAIGN_PROFILES]
#: Methods the service calls; an ``each_method`` budget is set on each of them.
SERVICE_METHODS = ("getLatestBlockhash", "getSignatureStatuses", "getTransaction", "getSignaturesForAddress", "getAccountInfo", "getMultipleAccounts",
                   "getBalance", "simulateTransaction", "getBlockHeight", "getSlot", "getFeeForMessage", "requestAirdrop", "getBlock",
                   "getMinimumBalanceForRentExemption", "getTokenAccountBalance", "isBlockhashValid", "getRecentPrioritizationFees", "getEpochInfo")
KILLS = (("worker", 0.35), ("node", 0.65))
DOWN_SECONDS = 2.0
SETTLE_TIMEOUT = float(os.environ.get("BENCH_FAULTS_SETTLE_TIMEOUT", "420"))
LANDED = ("CONFIRMED", "FINALIZED")
TRANSFERS = ("token_transfer", "currency_transfer", "durable_nonce_transfer", "batch_payout")


def profile_of(name: str) -> dict:
    if name in CAMPAIGN_PROFILES:
        return check_profile({**json.loads(json.dumps(CAMPAIGN_PROFILES[name])), "name": name})
    return load_profile(name)


def service_budgets(profile: dict, cluster: str = "CHAIN_LOCALNET") -> str:
    """LEDGER_RPC_BUDGETS as an operator writes a provider's limits: each rolling window as
    a window (``N/Ws``), which the service counts LEDGER_RPC_WINDOW_MARGIN_SECONDS longer
    (chain/budget.py), so it keeps under the provider's and uses most of it."""
    limits = profile.get("rate_limits", {})
    entries = {}
    for method in SERVICE_METHODS if "each_method" in limits else ():
        entries[method] = limits["each_method"]
    for method, window in limits.get("methods", {}).items():
        entries[method] = window
    if "total" in limits:
        entries["*"] = limits["total"]
    return ",".join(f"{cluster}.{m}={int(n)}/{w:g}s" for m, (n, w) in entries.items())


def budget_figures(profile: dict, stats: dict) -> tuple[dict, int]:
    """Each of the profile's budgets: its limit, the front's peak in one window, the calls
    it refused with 429; and the calls over any limit (0: the front refuses first)."""
    limits = profile.get("rate_limits", {})
    budgets = {f"method:{m}": b for m, b in limits.get("methods", {}).items()}
    if "total" in limits:
        budgets["total"] = limits["total"]
    if "each_method" in limits:
        for name in stats["peak"]:
            budgets.setdefault(name, limits["each_method"])
    out, over = {}, 0
    for name, (limit, window) in budgets.items():
        peak = stats["peak"].get(name, 0)
        over += max(0, peak - limit)
        out[name] = {"limit": limit, "window_s": window, "peak": peak, "refused_429": stats["refused"].get(name, 0)}
    return out, over


class Worker:
    """celery worker --beat in its own process group, so a SIGKILL takes its children too."""

    def __init__(self, env: dict, tmp: Path):
        self.env, self.tmp, self.proc = env, tmp, None

    def start(self) -> "Worker":
        with open(self.tmp / "worker.log", "ab") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(self.tmp / "beat"),
                                          "--concurrency", "2", "--loglevel", "WARNING"], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def signal(self, signum: int, timeout: float) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signum)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def web(env: dict, port: int, tmp: Path) -> subprocess.Popen:
    with open(tmp / "web.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_group(proc: subprocess.Popen | None, timeout: float = 20.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


FACTS = """
import json, sys
from collections import Counter, defaultdict
import django; django.setup()
from django.db.models import Count
from transactions.models import Transaction, TransactionEvent
kinds = json.load(sys.stdin)
rows = {str(o): (s, sig, e) for o, s, sig, e in Transaction.unscoped.filter(offchain_id__in=list(kinds)).values_list("offchain_id", "status", "onchain_id", "effects_applied_at")}
by_kind = defaultdict(Counter)
for o, kind in kinds.items():
    by_kind[kind][rows.get(o, ("MISSING",))[0]] += 1
applied = Counter(TransactionEvent.objects.filter(kind="EFFECTS_APPLIED").values_list("transaction_id", flat=True))
print(json.dumps({
    "statuses": dict(Counter(r[0] for r in rows.values())), "by_kind": {k: dict(v) for k, v in by_kind.items()},
    "all_statuses": dict(Counter(Transaction.unscoped.values_list("status", flat=True))),
    "resigned": TransactionEvent.objects.filter(kind="RESIGNED").count(),
    "effects_twice": sum(1 for n in applied.values() if n > 1),
    "effects_missing": Transaction.unscoped.filter(status__in=["CONFIRMED", "FINALIZED"], effects_applied_at__isnull=True).count(),
    "signatures": {o: r[1] for o, r in rows.items()},
}))
"""


def facts(env: dict, kinds: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", FACTS], cwd=ROOT, env=env, input=json.dumps(kinds), check=True, capture_output=True, text=True, timeout=300).stdout
    return json.loads(out.strip().splitlines()[-1])


def reconcile_drift(env: dict, node_url: str) -> int | None:
    """Drift entries ``manage.py reconcile`` reports, read from the node itself."""
    direct = {**env, "LEDGER_CLUSTERS": f"CHAIN_LOCALNET={node_url}", "LEDGER_LOCALNET_RPC_URL": node_url, "LEDGER_RPC_BUDGETS": ""}
    result = subprocess.run([sys.executable, "manage.py", "reconcile", "--cluster", "CHAIN_LOCALNET"], cwd=ROOT, env=direct, capture_output=True, text=True, timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return sum(len(json.loads(line)["drift"]) for line in lines) if lines else None


def payroll(profile: dict, batch: dict | None, signatures: dict, first_sent: dict) -> dict | None:
    """The batch's sends: how many, over how long, at what rate, against the send budget."""
    if not batch:
        return None
    times = sorted(first_sent[s] for s in (signatures.get(o) for o in batch["transactions"]) if s in first_sent)
    limit = profile.get("rate_limits", {}).get("methods", {}).get("sendTransaction")
    out = {"transactions": len(batch["transactions"]), "sent": len(times), "http_s": round(batch["answered_at"] - batch["accepted_at"], 2)}
    if len(times) > 1:
        span = times[-1] - times[0]
        out.update(send_span_s=round(span, 2), sends_per_s=round((len(times) - 1) / span, 1) if span > 0 else None)
        if limit:
            count, window = limit
            out["budget_per_s"] = count / window
            # The sustained rate against the budget: the sends before the last burst over the
            # time from the first send to that burst (a burst: a send over 0.1 s after the one
            # before). Below one window's worth the sends go out in one burst: no rate.
            starts = [i for i in range(1, len(times)) if times[i] - times[i - 1] > 0.1]
            if starts and times[starts[-1]] - times[0] >= window:
                last = starts[-1]
                whole = int((times[-1] - times[0]) // window)
                per_window = [sum(1 for t in times if times[0] + k * window <= t < times[0] + (k + 1) * window) for k in range(whole + 1)]
                out.update(budget_use=round(last / (times[last] - times[0]) / (count / window), 3), per_window=per_window,
                           bursts_at_s=[round(times[i] - times[0], 2) for i in starts][:40])
            else:
                out["budget_use"] = None
    return out


def attempt_summary(attempts: list[dict]) -> dict:
    """The setup's attempts: answers by status and code, connection errors (the client's own
    timeouts apart), requests sent more than once, and the slowest attempt."""
    answers = Counter(f"{a['status']}:{a['code']}" if a["status"] is not None else f"conn:{a['conn_error']}" for a in attempts)
    tries = Counter(a["request_id"] for a in attempts)
    return {"attempts": len(attempts), "requests": len(tries), "retried_requests": sum(1 for n in tries.values() if n > 1),
            "answers": dict(answers), "client_timeouts": sum(1 for a in attempts if a["timed_out"]),
            "replays": sum(1 for a in attempts if a.get("replay")), "max_elapsed_s": max((a["elapsed_s"] for a in attempts), default=0.0)}


def campaign(setup: str, name: str, ops: int, concurrency: int, seed: int, keep: Path | None) -> dict:
    profile = profile_of(name)
    procs: dict = {}
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, \
            (contextlib.nullcontext(str(keep / f"{setup}-{name}")) if keep else tempfile.TemporaryDirectory(prefix="ledger-faults-")) as tmp_name:
        tmp = Path(tmp_name)
        tmp.mkdir(parents=True, exist_ok=True)
        node = LocalnetProcess(tmp / "localnet")
        front = worker = api = None
        try:
            node.start()
            front = FaultFrontProcess(node.url, {k: v for k, v in profile.items() if k != "name"}, seed, work_dir=tmp).start()
            env = {**os.environ, "LOG_LEVEL": "WARNING", "DJANGO_SETTINGS_MODULE": "ledger_project.settings", "LEDGER_VAR_DIR": str(tmp), "LEDGER_EMBEDDED": "1",
                   "LEDGER_LOCALNET_RPC_URL": front.url, "LEDGER_CLUSTERS": f"CHAIN_LOCALNET={front.url}", "LEDGER_LOCALNET_AIRDROP_FUNDING": "true",
                   "LEDGER_RPC_BUDGETS": service_budgets(profile), "LEDGER_TASK_QUEUE": f"faults-{uuid.uuid4().hex[:8]}"}
            if setup == "postgres":
                env.update({"DATABASE_URL": db_url, "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), "LEDGER_CACHE_PREFIX": f"faults{uuid.uuid4().hex[:6]}"})
            else:
                env.pop("DATABASE_URL", None)
                env.pop("REDIS_URL", None)
            manage(env, "migrate", "--noinput", "-v0")
            manage(env, "create_tenant", "--external-id", "CAMPAIGN", "--name", "Campaign")
            key = json.loads(manage(env, "create_api_key", "--org", "CAMPAIGN", "--rate-limit", "0"))["secret"]
            worker = Worker(env, tmp).start()
            port = free_port()
            procs["web"] = web(env, port, tmp)
            wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}), timeout=60)
            api = Api(port, key)
            began = time.monotonic()
            api.record_attempts = True
            world = build_world(api)
            api.record_attempts = False
            queued = None
            if name in QUEUED_PAYROLLS:
                worker.signal(signal.SIGTERM, 30)
                queued = queued_payroll(api, world, *QUEUED_PAYROLLS[name])
                worker.start()
            setup_s = time.monotonic() - began
            setup_tally = dict(api.tally)
            setup_attempts = attempt_summary(api.attempts)
            api.tally.clear()

            kills: dict = {}
            fired: set = set()
            kill_threads: list[threading.Thread] = []
            kill_lock = threading.Lock()

            def kill(what: str) -> None:
                at = time.monotonic()
                if what == "worker":
                    worker.signal(signal.SIGKILL, 10)
                    time.sleep(DOWN_SECONDS)
                    worker.start()
                else:
                    node.kill()
                    time.sleep(DOWN_SECONDS)
                    node.start()
                kills[what] = {"at_s": round(at - ops_began, 1), "down_s": round(time.monotonic() - at, 1)}

            def on_progress(done: int) -> None:
                for what, share in KILLS:
                    with kill_lock:
                        if what in fired or done < share * ops:
                            continue
                        fired.add(what)
                    thread = threading.Thread(target=kill, args=(what,), daemon=True)
                    kill_threads.append(thread)
                    thread.start()

            before = cpu.sample({}, None, {"loadgen": os.getpid()})
            ops_began = time.monotonic()
            result = run_operations(api, world, ops, concurrency, seed, on_progress)
            ops_s = time.monotonic() - ops_began
            if queued:
                result["transactions"].update({o: "batch_payout" for o in queued["transactions"]})
            after = cpu.sample({}, None, {"loadgen": os.getpid()})
            for thread in kill_threads:
                thread.join(60)
            settle_s, polls, left = wait_until_terminal(api, SETTLE_TIMEOUT)
            held = count(api, ["PENDING_APPROVAL", "PARTIALLY_SIGNED"])
            stats = front.stats()
            found = facts(env, result["transactions"])
            budgets, over = budget_figures(profile, stats)
            tally = api.tally
            statuses = found["statuses"]
            transfers = {k: v for k, v in found["by_kind"].items() if k in TRANSFERS}
            transfer_total = sum(sum(v.values()) for v in transfers.values())
            transfer_landed = sum(v.get(s, 0) for v in transfers.values() for s in LANDED)
            return {
                "bench": "faults", "setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite", "profile": name, "seed": seed,
                "ops": ops, "concurrency": concurrency, "accepted": sum(result["accepted"].values()), "accepted_by_kind": dict(result["accepted"]),
                "refused": dict(result["refused"]), "refused_examples": result["refused_examples"], "gave_up": result["gave_up"], "transactions": len(result["transactions"]),
                "terminal": sum(n for s, n in statuses.items() if s in ("CONFIRMED", "FINALIZED", "FAILED", "EXPIRED", "CANCELLED")),
                "pending_left": left, "held": held, "statuses": statuses, "statuses_by_kind": found["by_kind"],
                "confirmed": sum(statuses.get(s, 0) for s in LANDED), "expired": statuses.get("EXPIRED", 0), "failed": statuses.get("FAILED", 0),
                "resigned": found["resigned"], "transfers_confirmed_share": round(transfer_landed / transfer_total, 4) if transfer_total else None,
                "api_5xx": sum(n for k, n in tally.items() if k.startswith("5xx:")), "api_5xx_detail": {k: n for k, n in tally.items() if k.startswith("5xx:")},
                "api_503_retry_after": sum(n for k, n in tally.items() if k.startswith("503_retry_after")),
                "api_503_detail": {k.split(":", 1)[1]: n for k, n in tally.items() if k.startswith("503_retry_after")},
                "api_429": sum(n for k, n in tally.items() if k.startswith("429")), "api_429_detail": {k.split(":", 1)[1]: n for k, n in tally.items() if k.startswith("429")},
                "conn_errors": tally.get("conn_error", 0),
                "setup_answers": setup_tally, "setup_attempts": setup_attempts, "budgets": budgets, "calls_over_budget": over, "front_calls": stats["calls"], "sends": stats["sends"],
                "two_bytes_signatures": len(stats["signatures_with_two_bytes"]), "effects_twice": found["effects_twice"], "effects_missing": found["effects_missing"],
                "reconcile_drift": reconcile_drift(env, node.url), "payroll": payroll(profile, queued or result["batch"], found["signatures"], stats["first_sent"]),
                "payroll_queued": QUEUED_PAYROLLS.get(name),
                "kills": kills, "seconds": {"setup": round(setup_s, 1), "operations": round(ops_s, 1), "settle": round(settle_s, 1), "count_polls": polls},
                "loadgen_cpu_share": round((after["loadgen"] - before["loadgen"]) / max(1.0, after["machine"] - before["machine"]), 3),
                "service_budgets": env["LEDGER_RPC_BUDGETS"],
            }
        finally:
            if api is not None:  # what the clients met, for a failed run too
                (tmp / "answers.json").write_text(json.dumps(api.tally))
                (tmp / "setup_attempts.json").write_text(json.dumps(api.attempts, indent=1))
            stop_group(procs.get("web"))
            if worker:
                worker.signal(signal.SIGTERM, 30)
            if front:
                front.stop()
            node.stop()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="The fault campaign: one JSON line per profile and setup.")
    parser.add_argument("--ops", type=int, default=int(os.environ.get("BENCH_FAULTS_OPS", "2000")))
    parser.add_argument("--concurrency", type=int, default=int(os.environ.get("BENCH_FAULTS_CONCURRENCY", "8")))
    parser.add_argument("--profiles", default=os.environ.get("BENCH_FAULTS_PROFILES", ",".join(DEFAULT_PROFILES)))
    parser.add_argument("--setups", default=os.environ.get("BENCH_FAULTS_SETUPS", "postgres,embedded"))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_FAULTS_SEED", "36")))
    parser.add_argument("--keep", type=Path, default=os.environ.get("BENCH_FAULTS_KEEP"), help="keep each run's logs under this directory")
    args = parser.parse_args(argv)
    names = [p for p in args.profiles.split(",") if p]
    unknown = [p for p in names if p not in PROFILES and p not in CAMPAIGN_PROFILES]
    if unknown:
        parser.error(f"unknown profiles {unknown}")
    failed = 0
    for setup in args.setups.split(","):
        for name in names:
            try:
                print(json.dumps(campaign(setup, name, args.ops, args.concurrency, args.seed, args.keep)), flush=True)
            except Exception as exc:  # one profile's failure is reported; the others still run
                failed += 1
                print(json.dumps({"bench": "faults", "setup": setup, "profile": name, "error": f"{type(exc).__name__}: {exc}"[:500]}), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
