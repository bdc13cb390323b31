"""Webhooks (issue 13), against the stack `make run` starts (local node, a Celery worker with
beat, gunicorn), on the embedded default (SQLite, filesystem broker) and on PostgreSQL +
Redis, with a real local receiver (http.server, keep-alive, in this process):

- ``webhook_deliveries``: BENCH_WEBHOOKS_EVENTS (default 5000) events written to the outbox
  in one commit by the engine's own writer (``outbox.transaction_events``, for recorded
  FINALIZED transactions: nothing for the pump to follow), one webhook; the worker's
  delivery loop sends them. Deliveries/s = events ÷ (last receipt − first receipt). Target
  ≥ 500/s.
- ``webhook_confirmation_to_delivery``: BENCH_WEBHOOKS_OPS (default 100) seeded account
  creations through the API at concurrency 4, a webhook for transaction.post_submit: for each
  CONFIRMED event, receipt time − its ``occurredAt`` (when the pump recorded the
  confirmation, in the same database transaction). Target p50 < 1 s.

The worker runs with beat and concurrency 3, as `make run` starts it. One JSON line per
measurement. BENCH_WEBHOOKS_SETUPS=embedded,postgres picks setups.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import cpu  # noqa: E402
from bench.bench_e2e import ok, pct, run_load, stack  # noqa: E402
from bench.common import gunicorn, manage, stop_processes, throwaway_database  # noqa: E402
from bench.loadgen import wait_until_up  # noqa: E402
from localnet.testing import free_port  # noqa: E402
from webhooks.tests.webhookkit import Receiver  # noqa: E402

EVENTS = int(os.environ.get("BENCH_WEBHOOKS_EVENTS", "5000"))
OPS = int(os.environ.get("BENCH_WEBHOOKS_OPS", "100"))
SETUPS = os.environ.get("BENCH_WEBHOOKS_SETUPS", "embedded,postgres").split(",")

WRITE_EVENTS = """
import os, time
import django; django.setup()
from django.db import transaction
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from tenancy.models import TenantOrganization
from webhooks import outbox
from transactions.models import Transaction, TransactionStatus
from webhooks.models import WebhookEventType
tenant = TenantOrganization.objects.get(external_id="BENCH")
payer = Keypair()
message = bytes(Message([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey()))
rows = [Transaction(tenant=tenant, cluster="CHAIN_LOCALNET", operation="bench.webhooks", message=message, blockhash=str(Hash.default()), fee_payer=str(payer.pubkey()),
                    status=TransactionStatus.FINALIZED, onchain_id=f"bench-{i}", required_signers=[str(payer.pubkey())]) for i in range(int(os.environ["EVENTS"]))]
Transaction.unscoped.bulk_create(rows, batch_size=500)
txs = list(Transaction.unscoped.filter(operation="bench.webhooks").order_by("pk"))
with transaction.atomic():
    written = outbox.transaction_events(txs, WebhookEventType.POST_SUBMIT)
print(written, time.time())
"""


def _occurred(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def deliveries(env: dict, port: int, key: str, receiver: Receiver, worker_pid: int) -> dict:
    ok(port, "POST", "/api/v1/webhooks", {"itemData": {"name": "bench", "endpointUrl": receiver.url("/bulk"), "eventTypes": ["transaction.post_submit"]}}, key, expect=(201,))
    by_name = {"postgres": "postgres"} if env.get("DATABASE_URL") else {}
    before = cpu.sample({"worker": worker_pid}, by_name, {"receiver": os.getpid()})
    result = subprocess.run([sys.executable, "-c", WRITE_EVENTS], cwd=ROOT, env={**env, "EVENTS": str(EVENTS)}, check=True, capture_output=True, text=True)
    written, committed = result.stdout.split()
    deadline = time.time() + 600
    while len(receiver.delivered()) < int(written) and time.time() < deadline:
        time.sleep(0.2)
    got = sorted(r.at for r in receiver.delivered() if r.path == "/bulk")
    span = got[-1] - got[0] if len(got) > 1 else None
    # CPU per delivery by component ("other": the event writer's process and the rest of the
    # machine): the loop is one process, so its CPU bounds the rate at 1000 / worker ms.
    spent = cpu.per_operation(before, cpu.sample({"worker": worker_pid}, by_name, {"receiver": os.getpid()}), len(got))
    return {"bench": "webhook_deliveries", "events": int(written), "delivered": len(got), "distinct_ids": len({r.event_id for r in receiver.delivered()}),
            "deliveries_per_s": round(len(got) / span, 1) if span else None, "commit_to_last_s": round(got[-1] - float(committed), 2) if got else None,
            "cpu_ms_per_delivery": spent, "target_per_s": 500, "load_average": os.getloadavg()[0]}


def latency(env: dict, port: int, key: str, receiver: Receiver) -> dict:
    ok(port, "POST", "/api/v1/webhooks", {"itemData": {"name": "latency", "endpointUrl": receiver.url("/latency"), "eventTypes": ["transaction.post_submit"]}}, key, expect=(201,))
    started, _, wall = run_load(port, key, lambda i: {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}, "/api/v1/accounts", 4, OPS)
    ids = {i for i, _ in started}
    deadline = time.time() + 120

    def confirmed():
        return [r for r in receiver.delivered() if r.path == "/latency" and r.json["data"]["transaction"]["offchainId"] in ids
                and r.json["data"]["transaction"]["status"] in ("CONFIRMED", "FINALIZED")]

    while len(confirmed()) < len(ids) and time.time() < deadline:
        time.sleep(0.2)
    got = confirmed()
    waits = [r.at - _occurred(r.json["occurredAt"]) for r in got]
    # Where the wait went: the confirmation's database transaction until its commit (the
    # event row's time is its INSERT), then until the delivery loop's attempt began.
    result = subprocess.run([sys.executable, "-c", STAGES], cwd=ROOT, env=env, input=json.dumps([r.event_id for r in got]), check=True, capture_output=True, text=True)
    stages = json.loads(result.stdout.strip().splitlines()[-1])
    return {"bench": "webhook_confirmation_to_delivery", "operations": OPS, "confirmed_events": len(waits),
            "p50_ms": pct(waits, 0.5), "p99_ms": pct(waits, 0.99), "mean_ms": round(statistics.mean(waits) * 1000, 1) if waits else None,
            "written_to_attempt_p50_ms": pct(stages, 0.5), "written_to_attempt_p99_ms": pct(stages, 0.99),
            "accepted_rps": round(OPS / wall, 1), "target_p50_ms": 1000, "load_average": os.getloadavg()[0]}


STAGES = """
import json, sys
import django; django.setup()
from webhooks.models import WebhookAttempt
ids = json.load(sys.stdin)
rows = WebhookAttempt.objects.filter(event__event_id__in=ids, number=1).values_list("started_at", "event__created_at")
print(json.dumps([(started - written).total_seconds() for started, written in rows]))
"""


def run_setup(setup: str) -> None:
    procs: list = []
    with (throwaway_database() if setup == "postgres" else contextlib.nullcontext(None)) as db_url, tempfile.TemporaryDirectory(prefix="ledger-webhooks-") as tmp:
        node, env = stack(setup, tmp, db_url)
        # The receiver listens on this machine, as with `make run` (docs/webhooks.md, Safety).
        env.update({"LEDGER_OUTBOUND_ALLOW_HTTP": "true", "LEDGER_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8"})
        try:
            with Receiver() as receiver:
                manage(env, "migrate", "--noinput", "-v0")
                manage(env, "create_tenant", "--external-id", "BENCH", "--name", "Bench")
                key = json.loads(manage(env, "create_api_key", "--org", "BENCH", "--rate-limit", "0"))["secret"]
                procs.append(subprocess.Popen([sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "--beat", "--schedule", str(Path(tmp) / "beat"),
                                               "--concurrency", os.environ.get("BENCH_WEBHOOKS_CONCURRENCY", "3"), "--loglevel", "WARNING"],
                                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
                port = free_port()
                procs.append(gunicorn(env, port))
                wait_until_up(port, ("POST", "/api/v1/auth/whoami", "{}", {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}))
                # Warm-up: the platform fee payer funded, the worker's start-up tasks done.
                ok(port, "POST", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}}}, key)
                time.sleep(float(os.environ.get("BENCH_WEBHOOKS_SETTLE_SECONDS", "10")))
                common = {"setup": setup, "database": "postgresql" if setup == "postgres" else "sqlite", "broker": "redis" if setup == "postgres" else "filesystem",
                          "delivery_threads": int(env.get("LEDGER_WEBHOOK_DELIVERY_THREADS", "16"))}
                print(json.dumps({**deliveries(env, port, key, receiver, procs[0].pid), **common}), flush=True)
                print(json.dumps({**latency(env, port, key, receiver), **common}), flush=True)
        finally:
            stop_processes(procs)
            node.stop()


def main() -> None:
    for setup in SETUPS:
        run_setup(setup)


if __name__ == "__main__":
    main()
