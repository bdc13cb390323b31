"""Crash safety (issue 11): 1,000 chain-changing operations through the HTTP API while the
worker, then the local node, then the web tier are killed with SIGKILL and restarted.

The stack runs as `make run` starts it (scripts/run_embedded.py), each piece its own OS
process on the test database (SQLite or PostgreSQL, whichever pytest-django made) and the
test's broker (the filesystem one or Redis): a local node on a data directory of its own,
restarted on the same data after its kill; a Celery worker with beat on a queue of its
own; the API under gunicorn.conf.py. Eight client threads send Create Account (seeded,
paid by a funding account of the tenant) and Transfer Financial Instrument requests
(random holders, a distinct amount each), every one with its own x-request-id; a
connection error, 5xx or 429 is retried with the same id until an answer comes.

What must hold afterwards (docs/transactions.md, "Crash safety"):
- a crash costs a retry, never a wrong answer: no 500 (a connection error or a 503 while
  a process is down is expected), no refusal, and a request sent again later replays its
  first answer byte for byte;
- every accepted operation's transaction ends — CONFIRMED/FINALIZED, or a terminal status
  Fetch Transaction Status shows with success false — within SETTLE_TIMEOUT of the last
  answer; none is left SIGNED or SUBMITTED;
- one Transaction row per accepted request id, the one the client was told about, and no
  other; one account record per accepted Create Account (ACTIVE if it landed, else FAILED);
- every transaction the node holds that touches the test's mint or funding account is one
  of those rows, byte for byte its stored message and signatures (nothing sent that was
  not recorded, nothing re-signed); landed rows are on the node without error;
- effects once: one EFFECTS_APPLIED event per landed transaction, none for the others;
- chain balances read with the unmodified solana-py client are exactly what the landed
  operations add up to (each new account holds one seed; the holders' tokens move by the
  landed transfers only), and ``manage.py reconcile`` reports no drift.

Kills: the worker with what it had taken (acks_late; the filesystem broker has no
redelivery, so the restarted worker's reconcile_inflight must find the lost work); the node
mid-stream (its group commit answers nothing it has not stored); and the whole web tier,
the gunicorn master with all its workers, as a host crash or an OOM kill would take it —
rather than one worker, which the master replaces at once: every request in flight in
every worker dies in whatever phase it was, and clients meet a closed port until the
restart.

Time: setup and checks take seconds; the load and the settling are the engine's. A failure
prints what the engine did with the transactions at fault, and the logs of the stack stay
in the test's tmp_path.
"""

from __future__ import annotations

import base64
import json
import random
import secrets
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
from solders.pubkey import Pubkey

from accounts.models import Account
from tenancy.tests.factories import TenantFactory, issue_key
from tests.crashkit import ENDED, HOLDERS, LANDED, MINTED, Answer, Api, Findings, Stack, World, build_world, describe, explain_drift, latency, node_transactions, reconcile_localnet, server_errors, wait_until_settled, wire_bytes
from tests.workers import WebProcess, WorkerProcess, new_queue_name, paused_workers
from localnet.testing import LocalnetProcess, free_port
from transactions.models import Transaction, TransactionEvent

pytestmark = [pytest.mark.chain, pytest.mark.worker]

OPERATIONS = 1000
CLIENTS = 8
ACCOUNT_SHARE = 0.4  # the rest are transfers
SEED = 1_000_000  # lamports of each new account (rent exemption of 0 bytes: 890,880)
#: (what, share of operations answered when it is killed, seconds it stays down)
KILLS = (("worker", 0.2, 2.0), ("node", 0.45, 2.0), ("web", 0.7, 1.0))
REQUEST_DEADLINE = 180.0  # one operation, retries included
# After the last answer, for every transaction to end. The pump settles what is left within
# a second or two of the last answer (the lease of a killed holder lapses in 5 s); the rest
# is room for a loaded CI machine.
SETTLE_TIMEOUT = 60.0


# --- The stack ---------------------------------------------------------------------------


@pytest.fixture
def stack(transactional_db, tmp_path, settings):
    """Local node, worker with beat and gunicorn on the test database; this process's
    settings point at the node too (reconcile, the solana-py client)."""
    queue = new_queue_name()
    node = LocalnetProcess(tmp_path / "node", log_path=tmp_path / "node.log").start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_LOCALNET": node.url}
    settings.LEDGER_LOCALNET_RPC_URL = node.url
    # A var dir of its own: the embedded broker's folder is listed whole for every message
    # it delivers, and the shared one keeps what earlier tests' stopped workers left behind.
    # Keys given outright, so no process makes one up (docs/custody.md).
    env = {"LEDGER_EMBEDDED": "1", "LEDGER_VAR_DIR": str(tmp_path / "var"), "LEDGER_MASTER_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
           "DJANGO_SECRET_KEY": secrets.token_urlsafe(32), "LEDGER_LOCALNET_RPC_URL": node.url, "LEDGER_LOCALNET_AIRDROP_FUNDING": "true",
           "LEDGER_CACHE_PREFIX": queue, "LOG_LEVEL": "WARNING"}
    worker = WorkerProcess(queue, env, beat_schedule=tmp_path / "beat-schedule", log_path=tmp_path / "worker.log")
    web = WebProcess(queue, free_port(), env, log_path=tmp_path / "web.log")
    running = [node]
    pause = paused_workers()
    pause.__enter__()
    try:
        worker.start()
        running.append(worker)
        web.start()
        running.append(web)
        yield Stack(node, worker, web, tmp_path)
    finally:
        for process in reversed(running):
            process.stop()
        pause.__exit__(None, None, None)


# --- Setup through the API ---------------------------------------------------------------


@dataclass
class Operation:
    kind: str  # "account" or "transfer"
    path: str
    body: dict
    request_id: str
    source: int | None = None
    destination: int | None = None
    amount: int = 0


def plan(world: World) -> list[Operation]:
    """OPERATIONS requests, interleaved: seeded accounts paid by the funder, and transfers
    between random holders of a distinct amount each (no two transfers can build the
    same message)."""
    rng = random.Random(11)
    ops = []
    for i in range(OPERATIONS):
        request_id = str(uuid.uuid4())
        if rng.random() < ACCOUNT_SHARE:
            ops.append(Operation("account", "/api/v1/accounts", {
                "itemData": {"managed": True, "seed": {"lamports": SEED}},
                "svmTransactionConfig": {"feePayer": {"offchainId": world.funder["offchainId"]}}}, request_id))
        else:
            source, destination = rng.sample(range(HOLDERS), 2)
            amount = i + 1
            ops.append(Operation("transfer", "/api/v1/positions/transfer", {"itemData": {
                "source": {"position": {"offchainId": world.holders[source]["offchainId"]}},
                "destination": {"position": {"offchainId": world.holders[destination]["offchainId"]}},
                "value": {"lamports": amount}}}, request_id, source, destination, amount))
    return ops


# --- Load with kills ---------------------------------------------------------------------


@dataclass
class Kill:
    what: str
    answered_before: int
    in_flight: int  # this tenant's transactions SIGNED or SUBMITTED at the kill
    killed_at: float
    back_at: float = 0.0


def run_load(api: Api, stack: Stack, ops: list[Operation], tenant) -> tuple[dict[int, Answer], list[Kill], float]:
    answers: dict[int, Answer] = {}
    failures: list[BaseException] = []
    lock = threading.Lock()
    next_op = iter(range(len(ops)))
    done = threading.Event()

    def client():
        while not failures:
            with lock:
                i = next(next_op, None)
            if i is None:
                return
            op = ops[i]
            try:
                answer = api.answer("POST", op.path, op.body, op.request_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                failures.append(exc)
                return
            with lock:
                answers[i] = answer

    kills: list[Kill] = []

    def chaos():
        from django.db import connection

        try:
            for what, share, down in KILLS:
                while len(answers) < share * len(ops) and not done.is_set():
                    time.sleep(0.02)
                if done.is_set():
                    return
                in_flight = Transaction.unscoped.filter(tenant=tenant, status__in=["SIGNED", "SUBMITTED"]).count()
                kill = Kill(what, len(answers), in_flight, time.monotonic())
                stack.kill(what)
                time.sleep(down)
                stack.start(what)
                kill.back_at = time.monotonic()
                kills.append(kill)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)
        finally:
            connection.close()  # this thread's own connection: none may outlive the test database

    began = time.monotonic()
    threads = [threading.Thread(target=client, name=f"client-{n}") for n in range(CLIENTS)]
    killer = threading.Thread(target=chaos, name="chaos")
    killer.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    killer.join()
    if failures:
        raise failures[0]
    return answers, kills, time.monotonic() - began


# --- The test ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_operations_survive_sigkill_of_worker_node_and_web(stack, record_property):
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    tenant = TenantFactory(external_id="CRASH", name="Crash Test Bank")
    api = Api(stack.web.port, issue_key(tenant, rate_limit_per_minute=0).secret, deadline=REQUEST_DEADLINE)
    timings = {}
    t0 = time.monotonic()
    world = build_world(api)
    timings["setup"] = time.monotonic() - t0
    ops = plan(world)
    setup_ids = {str(i) for i in Transaction.unscoped.filter(tenant=tenant).values_list("offchain_id", flat=True)}
    setup_accounts = set(Account.unscoped.filter(tenant=tenant).values_list("address", flat=True))

    answers, kills, timings["load"] = run_load(api, stack, ops, tenant)
    t1 = time.monotonic()
    unsettled = wait_until_settled(tenant, SETTLE_TIMEOUT)
    timings["settle"] = time.monotonic() - t1
    retried_on = Counter(str(what) for a in answers.values() for _, what in a.retried_on)
    report = {"timings": {k: round(v, 1) for k, v in timings.items()}, "latency": latency(tenant),
              "kills": [(k.what, k.answered_before, k.in_flight, round(k.back_at - k.killed_at, 1)) for k in kills],
              "answers": dict(Counter(a.status for a in answers.values())), "retriedOn": dict(retried_on),
              "operationsRetried": sum(1 for a in answers.values() if a.retried_on), "replayed": sum(1 for a in answers.values() if a.replayed),
              "answeredPerSecond": round(len(answers) / timings["load"], 1)}
    print("crash-safety:", json.dumps(report))
    record_property("crash_safety", json.dumps(report))

    # The premise: every operation was answered, each kill hit work in flight.
    assert len(answers) == OPERATIONS
    assert [k.what for k in kills] == ["worker", "node", "web"], kills
    assert all(k.answered_before < OPERATIONS for k in kills), kills
    assert kills[0].in_flight > 0, "the worker was killed with nothing in flight"
    assert any(kills[2].killed_at <= at for a in answers.values() for at, _ in a.retried_on), "no client met the web tier's crash"
    # ... and every transaction ended: effects applied, or failure effects run.
    assert not unsettled, f"{len(unsettled)} transactions did not end within {SETTLE_TIMEOUT}s: {Counter(s for _, s, _ in unsettled)}\n{describe(unsettled[:5], stack.node.data_dir)}"

    found = Findings()
    # A crash costs a retry, never a wrong answer: connection errors and 502/503/504 only
    # (a 500 is a bug), and every operation accepted (nothing here is refusable).
    found.expect(set(retried_on) <= {"502", "503", "504"} | {n for n in retried_on if not n.isdigit()},
                 lambda: f"server errors other than unavailability: {dict(retried_on)}; the web tier logged {server_errors(stack.web.log_path).most_common(5)}")
    refused = {i: a for i, a in answers.items() if a.status not in (200, 201)}
    found.expect(not refused, lambda: f"{len(refused)} operations refused: {[(a.status, a.body) for a in list(refused.values())[:5]]}")
    accepted = {i: a for i, a in answers.items() if a.status in (200, 201)}
    told = {i: a.body["svmTransaction"]["offchainId"] for i, a in accepted.items()}

    # Every accepted operation's transaction ended, as Fetch Transaction Status shows it.
    def status_of(offchain_id):
        return api.answer("POST", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": offchain_id}}})

    with ThreadPoolExecutor(CLIENTS) as pool:
        seen = dict(zip(told, pool.map(status_of, told.values())))
    assert all(s.status == 200 for s in seen.values()), [(s.status, s.body) for s in seen.values() if s.status != 200][:5]
    final = {i: s.body for i, s in seen.items()}
    found.expect(all(body["status"] in ENDED for body in final.values()), lambda: f"not ended: {Counter(b['status'] for b in final.values())}")
    for body in final.values():
        found.expect(body["success"] is (body["status"] in LANDED) and (body["status"] in LANDED or body["errorMessage"]), body)
    landed_ops = {i for i in accepted if final[i]["status"] in LANDED}
    for kind in ("account", "transfer"):
        count = sum(1 for i in landed_ops if ops[i].kind == kind)
        found.expect(count >= 100, f"only {count} {kind} operations landed: too few for the checks below to mean much")

    # One row per accepted request id, the one the client was told about; no other rows.
    rows = {str(tx.offchain_id): tx for tx in Transaction.unscoped.filter(tenant=tenant)}
    by_request = defaultdict(list)
    for key, tx in rows.items():
        if key not in setup_ids:
            by_request[str(tx.request_id)].append(key)
    expected_rows = {ops[i].request_id: [told[i]] for i in accepted}
    found.expect(expected_rows == dict(by_request), lambda: "rows per request id differ from the answers: "
                 f"{[(r, expected_rows.get(r), by_request.get(r)) for r in set(expected_rows) | set(by_request) if expected_rows.get(r) != by_request.get(r)][:5]}")

    # One account record per accepted Create Account, ACTIVE when its transaction landed,
    # FAILED otherwise; no other records.
    statuses = dict(Account.unscoped.filter(tenant=tenant).exclude(address__in=setup_accounts).values_list("address", "status"))
    created = {i: accepted[i].body["newAccount"]["onchainId"] for i in accepted if ops[i].kind == "account"}
    found.expect(set(statuses) == set(created.values()) and len(created) == len(set(created.values())),
                 f"{len(statuses)} new account records for {len(created)} accepted Create Account requests")
    wrong_status = {a: statuses.get(a) for i, a in created.items() if statuses.get(a) != ("ACTIVE" if i in landed_ops else "FAILED")}
    found.expect(not wrong_status, f"account records in the wrong status: {list(wrong_status.items())[:5]}")

    # A client retrying after all this gets the very answer it got first.
    again = [i for i in sorted(accepted)[::20]]
    with ThreadPoolExecutor(CLIENTS) as pool:
        replays = dict(zip(again, pool.map(lambda i: api.answer("POST", ops[i].path, ops[i].body, ops[i].request_id), again)))
    found.expect(all(r.replayed and r.status == answers[i].status and r.raw == answers[i].raw for i, r in replays.items()),
                 lambda: f"replays differ from the first answers: {[(i, r.status, r.replayed) for i, r in replays.items() if not (r.replayed and r.raw == answers[i].raw)][:5]}")

    # Effects once: one EFFECTS_APPLIED per landed transaction, none for the others (which
    # ran their failure effects once).
    applied = Counter(str(i) for i in TransactionEvent.objects.filter(transaction__tenant=tenant, kind="EFFECTS_APPLIED").values_list("transaction__offchain_id", flat=True))
    failure_applied = Counter(str(i) for i in TransactionEvent.objects.filter(transaction__tenant=tenant, kind="FAILURE_EFFECTS_APPLIED").values_list("transaction__offchain_id", flat=True))
    for key, tx in rows.items():
        landed = tx.status in LANDED
        found.expect(applied[key] == (1 if landed else 0) and failure_applied[key] <= (0 if landed else 1),
                     f"{tx}: EFFECTS_APPLIED x{applied[key]}, FAILURE_EFFECTS_APPLIED x{failure_applied[key]}")

    # The node's view: everything touching the mint or the funder is a recorded row, sent
    # with exactly its stored bytes; landed rows are on chain without error, the others
    # not at all (or, FAILED, with their error).
    on_node = node_transactions(stack.node.data_dir, [world.mint, world.funder["onchainId"]])
    by_signature = {tx.onchain_id: tx for tx in rows.values() if tx.onchain_id}
    found.expect(set(on_node) <= set(by_signature), lambda: f"on the node but never recorded: {sorted(set(on_node) - set(by_signature))[:5]}")
    for signature, (raw, err) in on_node.items():
        tx = by_signature.get(signature)
        if tx is not None:
            found.expect(raw == wire_bytes(tx), f"{tx} is on the node with other bytes than it stored")
            found.expect(err is None if tx.status in LANDED else (tx.status == "FAILED" and err is not None), f"{tx} is on the node with error {err}")
    for tx in rows.values():
        found.expect(tx.status not in LANDED or tx.onchain_id in on_node, f"{tx} is {tx.status} but not on the node")

    # Chain balances (unmodified solana-py client) are what the landed operations add up to.
    chain = Client(stack.node.url, timeout=10, commitment=Confirmed)
    expected = [MINTED] * HOLDERS
    for i in landed_ops:
        if ops[i].kind == "transfer":
            expected[ops[i].source] -= ops[i].amount
            expected[ops[i].destination] += ops[i].amount
    onchain = [int(chain.get_token_account_balance(Pubkey.from_string(h["onchainId"])).value.amount) for h in world.holders]
    found.expect(onchain == expected, f"holders' token balances on chain {onchain}, landed transfers add up to {expected}")
    addresses = list(created.values())
    lamports = {}
    for start in range(0, len(addresses), 100):
        batch = addresses[start:start + 100]
        for address, info in zip(batch, chain.get_multiple_accounts([Pubkey.from_string(a) for a in batch]).value):
            lamports[address] = info.lamports if info is not None else 0
    wrong = {a: lamports[a] for i, a in created.items() if lamports[a] != (SEED if i in landed_ops else 0)}
    found.expect(not wrong, f"new accounts with other lamports than their one seed (or none): {list(wrong.items())[:5]}")

    # reconcile: the database and the chain agree.
    result, exit_code = reconcile_localnet()
    found.expect(result["drift"] == [] and result["inFlight"] == 0 and exit_code == 0, lambda: "reconcile: " + json.dumps(result) + "\n" + explain_drift(result["drift"], stack.node.data_dir))
    found.expect(result["positionsChecked"] == HOLDERS and result["accountsChecked"] >= len(landed_ops & set(created)) + 2 * HOLDERS + 2, lambda: f"reconcile checked too little: {result}")

    print("crash-safety outcome:", json.dumps({"final": dict(Counter(b["status"] for b in final.values())), "onNode": len(on_node),
                                                "reconcile": {k: v for k, v in result.items() if k != "drift"}, "drift": len(result["drift"])}))
    ended = [(tx.offchain_id,) for tx in rows.values() if tx.status not in LANDED]
    if ended:
        print(f"crash-safety: {len(ended)} ended without landing, e.g.\n" + describe(ended[:3], stack.node.data_dir))
    assert not found.items, "\n".join(found.items[:40]) + f"\n(logs of the stack: {stack.logs})"


# --- Batch payouts (docs/positions.md, "Batch payouts") ----------------------------------

BATCH_ITEMS = 1000
#: (seconds after the batch request was first sent, action, what): the worker and then the
#: node are killed while the request is read and built (the node's absence is a 503: the
#: client sends it again), both come back, and the web tier is killed while that retry runs.
#: The request takes a second or so; the test reports which kills a client met (retriedOn)
#: and requires one at least.
BATCH_TIMELINE = ((0.05, "kill", "worker"), (0.15, "kill", "node"), (2.0, "start", "worker"), (2.1, "start", "node"), (2.6, "kill", "web"), (3.6, "start", "web"))
BATCH_ENDED = ENDED | {"REJECTED"}


def batch_state(api: Api, offchain_id: str) -> dict:
    answer = api.answer("POST", "/api/v1/positions/batches/single", {"itemData": {"batch": {"offchainId": offchain_id}}})
    assert answer.status == 200, answer.body
    return answer.body["batch"]


@pytest.mark.django_db(transaction=True)
def test_batch_of_1000_survives_sigkill_of_worker_node_and_web(stack, record_property):
    """One batch of 1,000 transfers (distinct amounts) while the worker, then the node,
    then the web tier are killed: every item ends in a status the client can read, the
    answer replays byte for byte, nothing reached the node that was not recorded with those
    bytes, effects applied once, chain balances are what the landed items add up to and
    reconcile finds no drift."""
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    from positions.models import Batch, BatchItem

    tenant = TenantFactory(external_id="CRASHB", name="Crash Batch Bank")
    api = Api(stack.web.port, issue_key(tenant, rate_limit_per_minute=0).secret, deadline=REQUEST_DEADLINE)
    world = build_world(api)
    setup_ids = {str(i) for i in Transaction.unscoped.filter(tenant=tenant).values_list("offchain_id", flat=True)}
    rng = random.Random(7)
    legs = [tuple(rng.sample(range(HOLDERS), 2)) for _ in range(BATCH_ITEMS)]
    items = [{"source": {"position": {"offchainId": world.holders[s]["offchainId"]}}, "destination": {"position": {"offchainId": world.holders[d]["offchainId"]}},
              "value": {"lamports": i + 1}} for i, (s, d) in enumerate(legs)]
    body, request_id = {"itemData": {"items": items}}, str(uuid.uuid4())

    kills: list[tuple[str, float]] = []

    def chaos(began: float):
        from django.db import connection

        try:
            for after, action, what in BATCH_TIMELINE:
                time.sleep(max(0.0, began + after - time.monotonic()))
                getattr(stack, action)(what)
                if action == "kill":
                    kills.append((what, round(time.monotonic() - began, 2)))
        finally:
            connection.close()

    began = time.monotonic()
    killer = threading.Thread(target=chaos, args=(began,), name="chaos")
    killer.start()
    answer = api.answer("POST", "/api/v1/positions/transfer/batch", body, request_id)
    killer.join()
    assert [w for w, _ in kills] == ["worker", "node", "web"], kills
    assert answer.status == 200, answer.body
    offchain_id = answer.body["batch"]["offchainId"]

    deadline = time.monotonic() + SETTLE_TIMEOUT + 60
    while True:
        state = batch_state(api, offchain_id)
        if all(i["status"] in BATCH_ENDED for i in state["items"]) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    report = {"kills": kills, "retriedOn": [str(w) for _, w in answer.retried_on], "counts": state["counts"], "seconds": round(time.monotonic() - began, 1)}
    print("crash-safety batch:", json.dumps(report))
    record_property("crash_safety_batch", json.dumps(report))

    assert answer.retried_on, "no kill met the batch request in flight"
    found = Findings()
    found.expect(all(i["status"] in BATCH_ENDED for i in state["items"]), lambda: f"items not ended: {state['counts']}")
    found.expect(state["itemCount"] == BATCH_ITEMS and len(state["items"]) == BATCH_ITEMS, state["itemCount"])
    landed = {i["index"] for i in state["items"] if i["status"] in LANDED}
    found.expect(len(landed) >= BATCH_ITEMS // 2, f"only {len(landed)} items landed: too few for the checks below to mean much")
    found.expect(all(i["errors"] for i in state["items"] if i["status"] == "REJECTED"), "a rejected item without its reason")
    # One batch for the request id; the retry after the web tier's crash replays it.
    found.expect(Batch.unscoped.filter(tenant=tenant).count() == 1, "more than one batch recorded for one request id")
    again = api.answer("POST", "/api/v1/positions/transfer/batch", body, request_id)
    found.expect(again.replayed and again.raw == answer.raw, "the batch's answer does not replay byte for byte")

    # Every transaction of the tenant beyond the setup carries items of the batch (or carried
    # them before a retry); no other rows.
    rows = {str(tx.offchain_id): tx for tx in Transaction.unscoped.filter(tenant=tenant)}
    carriers = set()
    for current, first in BatchItem.objects.filter(batch__tenant=tenant).values_list("transaction__offchain_id", "first_transaction__offchain_id"):
        carriers |= {str(x) for x in (current, first) if x}
    found.expect(set(rows) - setup_ids == carriers, lambda: f"rows {len(set(rows) - setup_ids)} vs carriers {len(carriers)}")
    for key, tx in rows.items():
        if key not in setup_ids:
            found.expect(tx.status in ENDED, f"{tx} did not end")

    # Effects once.
    applied = Counter(str(i) for i in TransactionEvent.objects.filter(transaction__tenant=tenant, kind="EFFECTS_APPLIED").values_list("transaction__offchain_id", flat=True))
    for key, tx in rows.items():
        found.expect(applied[key] == (1 if tx.status in LANDED else 0), f"{tx}: EFFECTS_APPLIED x{applied[key]}")

    # The node: every transaction touching the mint is a recorded row with its stored bytes.
    on_node = node_transactions(stack.node.data_dir, [world.mint])
    by_signature = {tx.onchain_id: tx for tx in rows.values() if tx.onchain_id}
    found.expect(set(on_node) <= set(by_signature), lambda: f"on the node but never recorded: {sorted(set(on_node) - set(by_signature))[:5]}")
    for signature, (raw, err) in on_node.items():
        tx = by_signature.get(signature)
        if tx is not None:
            found.expect(raw == wire_bytes(tx), f"{tx} is on the node with other bytes than it stored")

    # Chain balances are what the landed items add up to; reconcile finds no drift.
    chain = Client(stack.node.url, timeout=10, commitment=Confirmed)
    expected = [MINTED] * HOLDERS
    for index in landed:
        source, destination = legs[index]
        expected[source] -= index + 1
        expected[destination] += index + 1
    onchain = [int(chain.get_token_account_balance(Pubkey.from_string(h["onchainId"])).value.amount) for h in world.holders]
    found.expect(onchain == expected, f"holders' token balances on chain {onchain}, landed items add up to {expected}")
    result, exit_code = reconcile_localnet()
    found.expect(result["drift"] == [] and exit_code == 0, lambda: "reconcile: " + json.dumps(result) + "\n" + explain_drift(result["drift"], stack.node.data_dir))
    assert not found.items, "\n".join(found.items[:40]) + f"\n(logs of the stack: {stack.logs})"
