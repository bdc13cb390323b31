"""Crash safety of a two-holder drain (issue 25; docs/transactions.md, "Shards"): a backlog of
transfers accepted while no worker runs is drained by two worker processes, each holding
some of the pump's shards, and one of them is killed with SIGKILL, then the node, then the
web tier (while clients still send transfers).

The stack is the crash test's (tests/test_crash_safety.py) with two worker processes on
one queue, as two machines would run them (the first with beat). What must hold
afterwards, as there: every transaction ends in a status the client reads, nothing reached
the node that was not recorded with those bytes, effects applied once, the positions'
balances the API answers are the chain's (read with the unmodified solana-py client),
which are what the landed transfers add up to, and ``reconcile`` reports no drift.
"""

from __future__ import annotations

import base64
import json
import random
import secrets
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from solders.pubkey import Pubkey

from tenancy.tests.factories import TenantFactory, issue_key
from tests.crashkit import ENDED, LANDED, MINTED, Api, Findings, build_world, describe, explain_drift, node_transactions, reconcile_localnet, wait_until_settled, wire_bytes
from tests.workers import WebProcess, WorkerProcess, new_queue_name, paused_workers
from localnet.testing import LocalnetProcess, free_port
from transactions.models import PumpLease, Transaction, TransactionEvent

pytestmark = [pytest.mark.chain, pytest.mark.worker]

HOLDERS = 8  # positions; their owners are the ordering keys, spread over the shards
BACKLOG = 600  # accepted with no worker running
TRICKLE = 150  # sent while the drain runs (the web tier's kill meets them)
CLIENTS = 8
SHARDS = 8
REQUEST_DEADLINE = 180.0
SETTLE_TIMEOUT = 90.0
#: (seconds after both workers hold shards, action, what)
TIMELINE = ((0.3, "kill", "second"), (1.0, "kill", "node"), (3.0, "start", "node"), (3.5, "kill", "web"), (4.5, "start", "web"), (6.0, "start", "second"))


class DrainStack:
    def __init__(self, tmp_path, settings):
        self.node = LocalnetProcess(tmp_path / "node", log_path=tmp_path / "node.log")
        self.tmp = tmp_path
        self.settings = settings
        self.running: list = []

    def up(self):
        self.node.start()
        self.running.append(self.node)
        self.settings.LEDGER_CLUSTERS = {**self.settings.LEDGER_CLUSTERS, "CHAIN_LOCALNET": self.node.url}
        self.settings.LEDGER_LOCALNET_RPC_URL = self.node.url
        self.settings.LEDGER_PUMP_SHARDS = SHARDS
        queue = new_queue_name()
        env = {"LEDGER_EMBEDDED": "1", "LEDGER_VAR_DIR": str(self.tmp / "var"), "LEDGER_MASTER_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
               "DJANGO_SECRET_KEY": secrets.token_urlsafe(32), "LEDGER_LOCALNET_RPC_URL": self.node.url, "LEDGER_LOCALNET_AIRDROP_FUNDING": "true",
               "LEDGER_CACHE_PREFIX": queue, "LOG_LEVEL": "WARNING", "LEDGER_PUMP_SHARDS": str(SHARDS)}
        self.first = WorkerProcess(queue, env, beat_schedule=self.tmp / "beat-schedule", log_path=self.tmp / "worker-1.log")
        self.second = WorkerProcess(queue, env, log_path=self.tmp / "worker-2.log")
        self.web = WebProcess(queue, free_port(), env, log_path=self.tmp / "web.log")
        for process in (self.first, self.second):
            process.start()
            self.running.append(process)
        self.web.start()
        self.running.append(self.web)
        return self

    def kill(self, what: str) -> None:
        getattr(self, what).kill()

    def start(self, what: str) -> None:
        getattr(self, what).start()

    def down(self):
        for process in reversed(self.running):
            process.stop()


@pytest.fixture
def drain_stack(transactional_db, tmp_path, settings):
    stack = DrainStack(tmp_path, settings)
    pause = paused_workers()
    pause.__enter__()
    try:
        yield stack.up()
    finally:
        stack.down()
        pause.__exit__(None, None, None)


def holders_by_pid() -> Counter:
    """Live shard leases of the cluster by the worker process (pid) that holds them."""
    from django.utils import timezone

    live = PumpLease.objects.filter(cluster="CHAIN_LOCALNET", lease_until__gt=timezone.now()).exclude(holder="").values_list("holder", flat=True)
    return Counter(int(holder.split(":")[1]) for holder in live)


def transfers(world, count: int, rng: random.Random, first_amount: int) -> list[tuple[int, int, int, dict, str]]:
    out = []
    for i in range(count):
        source, destination = rng.sample(range(HOLDERS), 2)
        amount = first_amount + i
        body = {"itemData": {"source": {"position": {"offchainId": world.holders[source]["offchainId"]}},
                             "destination": {"position": {"offchainId": world.holders[destination]["offchainId"]}}, "value": {"lamports": amount}}}
        out.append((source, destination, amount, body, str(uuid.uuid4())))
    return out


def send_all(api: Api, ops) -> list:
    with ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(lambda op: api.answer("POST", "/api/v1/positions/transfer", op[3], op[4]), ops))


@pytest.mark.django_db(transaction=True)
def test_two_holder_drain_survives_sigkill_of_a_holder_node_and_web(drain_stack, record_property):
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    stack = drain_stack
    tenant = TenantFactory(external_id="CRASHD", name="Crash Drain Bank")
    api = Api(stack.web.port, issue_key(tenant, rate_limit_per_minute=0).secret, deadline=REQUEST_DEADLINE)
    world = build_world(api, HOLDERS)
    setup_ids = {str(i) for i in Transaction.unscoped.filter(tenant=tenant).values_list("offchain_id", flat=True)}
    rng = random.Random(25)

    # The backlog, accepted with no worker running (their kicks wait in the broker).
    stack.first.stop()
    stack.second.stop()
    backlog = transfers(world, BACKLOG, rng, 1)
    answers = send_all(api, backlog)
    assert all(a.status == 200 for a in answers), Counter(a.status for a in answers)
    assert Transaction.unscoped.filter(tenant=tenant, status="SIGNED").count() == BACKLOG

    # Both workers start; the drain runs once each holds shards.
    stack.first.start()
    stack.second.start()
    deadline = time.monotonic() + 30
    while len(holders_by_pid()) < 2:
        assert time.monotonic() < deadline, f"two holders never shared the shards: {holders_by_pid()}"
        time.sleep(0.05)
    shared = holders_by_pid()
    assert stack.second.proc.pid in shared, shared

    trickle = transfers(world, TRICKLE, rng, BACKLOG + 1)
    trickle_answers: list = []
    kills: list[tuple[str, float, int]] = []

    def clients():
        trickle_answers.extend(send_all(api, trickle))

    def chaos(began: float):
        from django.db import connection

        try:
            for after, action, what in TIMELINE:
                time.sleep(max(0.0, began + after - time.monotonic()))
                if action == "kill":
                    left = Transaction.unscoped.filter(tenant=tenant, status__in=["SIGNED", "SUBMITTED"]).count()
                    kills.append((what, round(time.monotonic() - began, 2), left))
                stack.kill(what) if action == "kill" else stack.start(what)
        finally:
            connection.close()

    began = time.monotonic()
    threads = [threading.Thread(target=clients, name="clients"), threading.Thread(target=chaos, args=(began,), name="chaos")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    unsettled = wait_until_settled(tenant, SETTLE_TIMEOUT)
    report = {"holders": dict(shared), "kills": kills, "trickle": dict(Counter(a.status for a in trickle_answers)),
              "retriedOn": dict(Counter(str(w) for a in trickle_answers for _, w in a.retried_on)), "seconds": round(time.monotonic() - began, 1)}
    print("crash-safety drain:", json.dumps(report))
    record_property("crash_safety_drain", json.dumps(report))

    assert [w for w, _, _ in kills] == ["second", "node", "web"], kills
    assert kills[0][2] > 0, "the holder was killed with nothing left to drain"
    assert not unsettled, f"{len(unsettled)} transactions did not end: {Counter(s for _, s, _ in unsettled)}\n{describe(unsettled[:5], stack.node.data_dir)}"
    found = Findings()
    found.expect(all(a.status == 200 for a in trickle_answers), lambda: f"trickle answers {Counter(a.status for a in trickle_answers)}")
    ops = backlog + trickle
    told = {op[4]: a.body["svmTransaction"]["offchainId"] for op, a in zip(ops, answers + trickle_answers) if a.status == 200}

    # Every transaction ended as Fetch Transaction Status shows it; one row per request id.
    def status_of(offchain_id):
        return api.answer("POST", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": offchain_id}}}).body

    with ThreadPoolExecutor(CLIENTS) as pool:
        final = dict(zip(told, pool.map(status_of, told.values())))
    found.expect(all(b["status"] in ENDED for b in final.values()), lambda: f"not ended: {Counter(b['status'] for b in final.values())}")
    landed = {request_id for request_id, b in final.items() if b["status"] in LANDED}
    found.expect(len(landed) >= len(ops) // 2, f"only {len(landed)} of {len(ops)} transfers landed: too few for the checks below to mean much")
    rows = {str(tx.offchain_id): tx for tx in Transaction.unscoped.filter(tenant=tenant)}
    found.expect(set(rows) - setup_ids == set(told.values()), lambda: f"{len(set(rows) - setup_ids)} rows for {len(told)} accepted transfers")

    # Effects once; the node holds exactly the stored bytes of recorded rows.
    applied = Counter(str(i) for i in TransactionEvent.objects.filter(transaction__tenant=tenant, kind="EFFECTS_APPLIED").values_list("transaction__offchain_id", flat=True))
    for key, tx in rows.items():
        found.expect(applied[key] == (1 if tx.status in LANDED else 0), f"{tx}: EFFECTS_APPLIED x{applied[key]}")
    on_node = node_transactions(stack.node.data_dir, [world.mint])
    by_signature = {tx.onchain_id: tx for tx in rows.values() if tx.onchain_id}
    found.expect(set(on_node) <= set(by_signature), lambda: f"on the node but never recorded: {sorted(set(on_node) - set(by_signature))[:5]}")
    for signature, (raw, _err) in on_node.items():
        tx = by_signature.get(signature)
        if tx is not None:
            found.expect(raw == wire_bytes(tx), f"{tx} is on the node with other bytes than it stored")

    # Balances: the chain's are what the landed transfers add up to, and the API answers them.
    expected = [MINTED] * HOLDERS
    for source, destination, amount, _body, request_id in ops:
        if request_id in landed:
            expected[source] -= amount
            expected[destination] += amount
    chain = Client(stack.node.url, timeout=10, commitment=Confirmed)
    onchain = [int(chain.get_token_account_balance(Pubkey.from_string(h["onchainId"])).value.amount) for h in world.holders]
    found.expect(onchain == expected, f"holders' token balances on chain {onchain}, landed transfers add up to {expected}")
    answered = [int(api.ok("POST", "/api/v1/positions/single/balance", {"itemData": {"position": {"offchainId": h["offchainId"]}}})["offchain"]["lamports"]) for h in world.holders]
    found.expect(answered == onchain, f"the API answers balances {answered}, the chain holds {onchain}")

    result, exit_code = reconcile_localnet()
    found.expect(result["drift"] == [] and result["inFlight"] == 0 and exit_code == 0, lambda: "reconcile: " + json.dumps(result) + "\n" + explain_drift(result["drift"], stack.node.data_dir))
    assert not found.items, "\n".join(found.items[:40]) + f"\n(logs of the stack: {stack.tmp})"
