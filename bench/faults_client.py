"""The fault campaign's clients (bench/bench_faults.py): an API client that retries as a
careful user does, the world the operations need, the mixed operations, and the count that
follows them to the end.

A client sends each operation with its own x-request-id and sends it again, the same id and
body, on a connection error, 429 or 5xx, honouring Retry-After (at most RETRY_AFTER_MAX s a
wait), until REQUEST_DEADLINE. Every answer is tallied: a 503 with Retry-After (the
service's CHAIN_UNAVAILABLE / CHAIN_BUSY / NONCE_POOL_EMPTY, what it promises under
faults) apart from any other 5xx, which must never happen.

While ``record_attempts`` is set (the campaign sets it for the world's setup), every attempt
is also kept in ``attempts``: path, x-request-id, attempt number, status, error code,
elapsed seconds, and whether the connection failed and whether that was the client's own
60 s timeout firing (the server may still be running that attempt while the retry starts).
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

HTTP_TIMEOUT = 60.0  # the client's http.client timeout for one attempt

REQUEST_DEADLINE = 180.0  # one operation, retries included
RETRY_AFTER_MAX = 5.0
BATCH_ITEMS = 500
HOLDERS = 8  # token positions, WALLET owners, each minted MINTED
MINTED = 10**12
WALLETS = 4  # network-currency wallets, each seeded WALLET_SEED lamports
WALLET_SEED = 10**10
NONCE_ACCOUNTS = 8  # the tenant's own durable nonce accounts
MIX = (("seeded_account", 0.3), ("token_transfer", 0.3), ("currency_transfer", 0.25), ("durable_nonce_transfer", 0.15))
PENDING_STATUSES = ["BUILT", "SIGNED", "SUBMITTED"]


class Api:
    """One keep-alive connection per thread; ``send`` retries until a final answer."""

    def __init__(self, port: int, secret: str):
        self.port, self.secret = port, secret
        self.local = threading.local()
        self.lock = threading.Lock()
        self.tally: Counter = Counter()  # answers seen: "503_retry_after:<code>", "5xx:<status>:<code>", "429:<code>", "conn_error"
        self.record_attempts = False
        self.attempts: list[dict] = []  # while record_attempts: one entry per attempt (see the module docstring)

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=HTTP_TIMEOUT)
        return conn

    def _count(self, what: str) -> None:
        with self.lock:
            self.tally[what] += 1

    def _attempt(self, **entry) -> None:
        if self.record_attempts:
            with self.lock:
                self.attempts.append(entry)

    def attempts_of(self, request_id: str) -> list[dict]:
        with self.lock:
            return [a for a in self.attempts if a["request_id"] == request_id]

    def send(self, path: str, body: dict, *, request_id: str | None = None) -> tuple[int, dict]:
        request_id = request_id or str(uuid.uuid4())
        headers = {"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json", "x-request-id": request_id}
        payload = json.dumps(body)
        deadline = time.monotonic() + REQUEST_DEADLINE
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            began, started_at = time.monotonic(), time.time()
            try:
                conn = self._conn()
                conn.request("POST", path, payload, headers)
                response = conn.getresponse()
                status, raw = response.status, response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn, self.local.conn = getattr(self.local, "conn", None), None
                if conn is not None:
                    conn.close()
                self._count("conn_error")
                self._attempt(path=path, request_id=request_id, attempt=attempt, started_at=round(started_at, 3), elapsed_s=round(time.monotonic() - began, 3),
                              status=None, code=None, conn_error=type(exc).__name__, timed_out=isinstance(exc, TimeoutError))
                time.sleep(0.3)
                continue
            retry_after = response.getheader("Retry-After")
            code = error_code(raw)
            self._attempt(path=path, request_id=request_id, attempt=attempt, started_at=round(started_at, 3), elapsed_s=round(time.monotonic() - began, 3),
                          status=status, code=code, retry_after=retry_after, replay=response.getheader("x-idempotent-replay") == "true",
                          conn_error=None, timed_out=False)
            if status == 429 or status >= 500:
                self._count(f"429:{code}" if status == 429 else f"503_retry_after:{code}" if status == 503 and retry_after else f"5xx:{status}:{code}")
                time.sleep(min(float(retry_after or 0.5), RETRY_AFTER_MAX))
                continue
            try:
                return status, json.loads(raw or b"{}")
            except ValueError:
                return status, {"raw": raw[:200].decode(errors="replace")}
        self._count("gave_up")
        return 0, {}

    def ok(self, path: str, body: dict) -> dict:
        request_id = str(uuid.uuid4())
        status, data = self.send(path, body, request_id=request_id)
        if status not in (200, 201):
            tried = [{k: a.get(k) for k in ("attempt", "status", "code", "elapsed_s", "conn_error", "timed_out", "replay")} for a in self.attempts_of(request_id)]
            raise RuntimeError(f"{path}: {status} {data} x-request-id {request_id} attempts {tried}")
        return data


def error_code(raw: bytes | None) -> str | None:
    """The first error's code of an answer: the spec's shape is {"errors": [{"code", ...}]}."""
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    errors = data.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return errors[0].get("code")
    return None


def build_world(api: Api) -> dict:
    """HOLDERS token positions of one SPL instrument, WALLETS funded wallets, the tenant's
    NONCE_ACCOUNTS durable nonce accounts; all confirmed."""
    wait = "?wait=confirmed"
    authority = api.ok("/api/v1/accounts", {"itemData": {"managed": True}})["newAccount"]
    instrument = api.ok("/api/v1/financial-instruments" + wait, {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Campaign Dollar", "symbol": "CMP", "decimals": 2}}})["newFinancialInstrument"]
    lookup = {"offchainId": instrument["offchainId"]}

    def holder(_):
        owner = api.ok("/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}}})["newAccount"]
        position = api.ok("/api/v1/positions" + wait, {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": lookup}})["newPosition"]
        api.ok("/api/v1/positions/mint" + wait, {"itemData": {"position": {"position": {"offchainId": position["offchainId"]}}, "value": {"lamports": MINTED}}})
        return {"offchainId": position["offchainId"]}

    def wallet(_):
        return {"offchainId": api.ok("/api/v1/accounts" + wait, {"itemData": {"managed": True, "seed": {"lamports": WALLET_SEED}}})["newAccount"]["offchainId"]}

    with ThreadPoolExecutor(4) as pool:
        holders = list(pool.map(holder, range(HOLDERS)))
        wallets = list(pool.map(wallet, range(WALLETS)))
    api.ok("/api/v1/durable-nonce-accounts" + wait, {"itemData": {"count": NONCE_ACCOUNTS}})
    return {"holders": holders, "wallets": wallets}


def operation(world: dict, i: int, kind: str, rng: random.Random) -> tuple[str, dict]:
    """(path, body) of the i-th operation of ``kind``; amounts distinct enough to tell apart."""
    if kind == "seeded_account":
        return "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000 + i}}}
    if kind == "token_transfer":
        a, b = rng.sample(world["holders"], 2)
        return "/api/v1/positions/transfer", {"itemData": {"source": {"position": a}, "destination": {"position": b}, "value": {"lamports": 1 + i % 97}}}
    if kind == "batch_payout":
        n = len(world["holders"])
        items = [{"source": {"position": world["holders"][j % n]}, "destination": {"position": world["holders"][(j % n + 1 + (j // n) % (n - 1)) % n]},
                  "value": {"lamports": 1 + j % 7}} for j in range(BATCH_ITEMS)]
        return "/api/v1/positions/transfer/batch", {"itemData": {"items": items}}
    a, b = rng.sample(world["wallets"], 2)
    body = {"itemData": {"source": a, "destination": b, "value": {"lamports": 1000 + i}}}
    if kind == "durable_nonce_transfer":
        body["svmTransactionConfig"] = {"messageLifetimeStrategy": "DURABLE_NONCE"}
    return "/api/v1/positions/transfer-network-currency", body


def transaction_ids(kind: str, data: dict) -> list[tuple[str, str | None]]:
    """(offchainId, onchainId) of the transactions an accepted answer names."""
    if kind == "batch_payout":
        seen = {}
        for item in data.get("batch", {}).get("items", []):
            tx = item.get("svmTransaction")
            if tx:
                seen[tx["offchainId"]] = tx.get("onchainId")
        return list(seen.items())
    tx = data.get("svmTransaction")
    return [(tx["offchainId"], tx.get("onchainId"))] if tx else []


def run_operations(api: Api, world: dict, ops: int, concurrency: int, seed: int, on_progress) -> dict:
    """``ops`` operations (the one in the middle the BATCH_ITEMS payout) from ``concurrency``
    clients; ``on_progress(answered)`` after each answer (the kills hang on it)."""
    rng = random.Random(seed)
    kinds = ["batch_payout" if i == ops // 2 else rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0] for i in range(ops)]
    plan = iter(range(ops))
    lock = threading.Lock()
    out = {"accepted": Counter(), "refused": Counter(), "refused_examples": {}, "gave_up": 0, "transactions": {}, "batch": None}
    answered = [0]

    def client(n: int) -> None:
        mine = random.Random(seed * 1000 + n)
        while True:
            with lock:
                i = next(plan, None)
            if i is None:
                return
            kind = kinds[i]
            path, body = operation(world, i, kind, mine)
            started = time.time()
            status, data = api.send(path, body)
            with lock:
                answered[0] += 1
                if status in (200, 201):
                    out["accepted"][kind] += 1
                    for offchain_id, onchain_id in transaction_ids(kind, data):
                        out["transactions"][offchain_id] = kind
                    if kind == "batch_payout":
                        out["batch"] = {"accepted_at": started, "answered_at": time.time(), "counts": data["batch"].get("counts"),
                                        "transactions": [o for o, _ in transaction_ids(kind, data)]}
                elif status == 0:
                    out["gave_up"] += 1
                else:
                    key = f"{kind}:{status}:{error_code(json.dumps(data).encode())}"
                    out["refused"][key] += 1
                    # One answer of each kind of refusal, to read what it said.
                    out["refused_examples"].setdefault(key, json.dumps(data)[:400])
                done = answered[0]
            on_progress(done)

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(REQUEST_DEADLINE * (ops // concurrency + 2))
    out["kinds"] = Counter(kinds)
    return out


def count(api: Api, statuses: list[str]) -> int:
    """Fetch Transactions, ``limit`` 1: the total of the tenant's transactions in ``statuses``."""
    body = {"itemQuery": {"limit": 1, "filter": [{"fieldName": "status", "filterValues": [{"dataType": "TEXT", "filterType": "IN", "valuesString": statuses}]}]}}
    return api.ok("/api/v1/transactions/bulk/identifiers", body)["count"]


def wait_until_terminal(api: Api, timeout: float) -> tuple[float, int, int]:
    """Poll the count of pending transactions once a second until none; (seconds, polls, left)."""
    started = time.monotonic()
    polls, left = 0, -1
    while time.monotonic() - started < timeout:
        polls += 1
        left = count(api, PENDING_STATUSES)
        if left == 0:
            break
        time.sleep(1.0)
    return time.monotonic() - started, polls, left


def queued_payroll(api: Api, world: dict, batches: int, items: int) -> dict:
    """``batches`` batch payouts of ``items`` token transfers each, sent at once (one client
    each), for a payroll queued while the worker is down: the accepted batches' transactions
    and when the first was sent and the last answered."""
    n = len(world["holders"])

    def one(b: int) -> tuple[float, float, list[str]]:
        body = {"itemData": {"items": [{"source": {"position": world["holders"][(b + j) % n]}, "destination": {"position": world["holders"][(b + j + 1 + j // n % (n - 1)) % n]},
                                        "value": {"lamports": 1 + (b * items + j) % 11}} for j in range(items)]}}
        started = time.time()
        data = api.ok("/api/v1/positions/transfer/batch", body)
        return started, time.time(), [o for o, _ in transaction_ids("batch_payout", data)]

    with ThreadPoolExecutor(batches) as pool:
        answers = list(pool.map(one, range(batches)))
    return {"accepted_at": min(a[0] for a in answers), "answered_at": max(a[1] for a in answers), "transactions": [o for a in answers for o in a[2]]}
