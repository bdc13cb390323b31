"""Helpers of the crash-safety test (tests/test_crash_safety.py): an HTTP client that retries
like a careful API client, and what the local node and the service recorded, read back for
its checks and its failure messages."""

from __future__ import annotations

import http.client
import io
import itertools
import json
import re
import sqlite3
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from solders.signature import Signature

from localnet.testing import LocalnetProcess
from tests.workers import ROOT, WebProcess, WorkerProcess
from transactions.models import Transaction, TransactionEvent

HOLDERS = 4
MINTED = 10**12  # base units minted to each holder
LANDED = {"CONFIRMED", "FINALIZED"}
ENDED = LANDED | {"FAILED", "EXPIRED", "CANCELLED"}


# --- HTTP ----------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: dict
    attempts: int
    replayed: bool
    retried_on: list = field(default_factory=list)  # (monotonic time, status or exception name)
    raw: bytes = b""


class Api:
    """A keep-alive connection per thread. ``answer`` sends until it gets a final answer:
    a connection error, 5xx or 429 is retried with the same body and x-request-id."""

    def __init__(self, port: int, secret: str, *, deadline: float = 180.0):
        self.port, self.secret, self.deadline = port, secret, deadline
        self.local = threading.local()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return conn

    def _drop(self) -> None:
        conn, self.local.conn = getattr(self.local, "conn", None), None
        if conn is not None:
            conn.close()

    def answer(self, method: str, path: str, body: dict, request_id: str | None = None) -> Answer:
        request_id = request_id or str(uuid.uuid4())
        deadline = time.monotonic() + self.deadline
        headers = {"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json", "x-request-id": request_id}
        payload = json.dumps(body)
        retried_on = []
        for attempt in itertools.count(1):
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path} ({request_id}) got no final answer in {self.deadline}s: {retried_on[-5:]}")
            try:
                conn = self._conn()
                conn.request(method, path, payload, headers)
                response = conn.getresponse()
                status, data = response.status, response.read()
                replayed = response.getheader("x-idempotent-replay") == "true"
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                retried_on.append((time.monotonic(), type(exc).__name__))
                time.sleep(0.2)
                continue
            if status >= 500 or status == 429:
                retried_on.append((time.monotonic(), status))
                time.sleep(min(float(response.getheader("Retry-After") or 0.3), 1.0))
                continue
            return Answer(status, json.loads(data or b"{}"), attempt, replayed, retried_on, data)
        raise AssertionError("unreachable")

    def ok(self, method: str, path: str, body: dict) -> dict:
        answer = self.answer(method, path, body)
        assert answer.status in (200, 201), (path, answer.status, answer.body)
        tx = answer.body.get("svmTransaction")
        if "wait=" in path and tx is not None:
            assert tx["status"] in LANDED, (path, tx)
        return answer.body


# --- What the node and the service recorded ------------------------------------------------


def node_transactions(data_dir: Path, addresses: list[str]) -> dict[str, tuple[bytes, object]]:
    """signature → (raw wire bytes, err) of every transaction the node stored that touches
    one of ``addresses``: read from its SQLite store (docs/localnet.md, Durability)."""
    db = sqlite3.connect(f"file:{data_dir / 'ledger.db'}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(addresses))
        rows = db.execute(f"SELECT DISTINCT t.signature, t.raw, t.err FROM transactions t JOIN address_signatures a ON a.seq = t.seq WHERE a.address IN ({marks})", addresses).fetchall()
    finally:
        db.close()
    return {signature: (bytes(raw), json.loads(err) if err else None) for signature, raw, err in rows}


def wire_bytes(tx: Transaction) -> bytes:
    """What the service must have sent for ``tx``: the signature count (a compact-u16, one
    byte below 128), the signatures in the message's signer order, the stored message."""
    signers = tx.required_signers
    assert len(signers) < 128
    return bytes([len(signers)]) + b"".join(bytes(Signature.from_string(tx.signatures[s])) for s in signers) + bytes(tx.message)


def explain_drift(drift: list[dict], data_dir: Path) -> str:
    """For each drifted address: the node's last transactions touching it, in execution
    order (slot, pre → post), against the order the service applied their effects in."""
    from solders.transaction import VersionedTransaction

    db = sqlite3.connect(f"file:{data_dir / 'ledger.db'}?mode=ro", uri=True)
    lines = []
    try:
        for item in drift:
            address = item["address"]
            lines.append(f"{item['kind']} {address}: offchain {item['offchain']}, onchain {item['onchain']}")
            rows = db.execute("SELECT t.seq, t.slot, t.signature, t.raw, t.meta FROM transactions t JOIN address_signatures a ON a.seq = t.seq "
                              "WHERE a.address = ? ORDER BY t.seq DESC LIMIT 12", (address,)).fetchall()
            for seq, slot, signature, raw, meta in reversed(rows):
                meta = json.loads(meta)
                keys = [str(k) for k in VersionedTransaction.from_bytes(bytes(raw)).message.account_keys]
                index = keys.index(address) if address in keys else None
                if item["kind"] == "LAMPORTS":
                    pre, post = meta["preBalances"][index], meta["postBalances"][index]
                else:
                    def amount(entries):
                        return next((e["uiTokenAmount"]["amount"] for e in entries if e["accountIndex"] == index), None)
                    pre, post = amount(meta.get("preTokenBalances") or []), amount(meta.get("postTokenBalances") or [])
                tx = Transaction.unscoped.filter(onchain_id=signature).first()
                applied = f"{tx.effects_applied_at:%H:%M:%S.%f}" if tx and tx.effects_applied_at else None
                lines.append(f"  seq {seq} slot {slot} {signature[:12]} {pre} -> {post}; effects applied {applied}")
    finally:
        db.close()
    return "\n".join(lines)


def server_errors(log: Path) -> Counter:
    """The web tier's unhandled errors by (innermost frame of this project, exception)."""
    found = Counter()
    for line in log.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        text = record.get("exception") if isinstance(record, dict) else None
        if not text:
            continue
        frames = [f.strip() for f in text.splitlines() if f.strip().startswith(f'File "{ROOT}/') and "/.venv/" not in f]
        raised = [r for r in text.splitlines() if re.match(r"[A-Za-z_][\w.]*: ", r) and r.split(":")[0] not in ("DETAIL", "HINT", "CONTEXT")]
        found[(frames[-1] if frames else "?", raised[-1] if raised else text.strip().splitlines()[-1])] += 1
    return found


def latency(tenant) -> dict:
    """p50/p99 seconds from built to submitted and from submitted to confirmed."""
    def pct(values, q):
        values = sorted(values)
        return round(values[min(len(values) - 1, int(q * len(values)))], 1) if values else None

    rows = list(Transaction.unscoped.filter(tenant=tenant).values_list("txn_timestamp", "submitted_at", "confirmed_at"))
    to_submit = [(s - b).total_seconds() for b, s, _ in rows if s]
    to_confirm = [(c - s).total_seconds() for _, s, c in rows if s and c]
    return {"toSubmitted": [pct(to_submit, 0.5), pct(to_submit, 0.99)], "toConfirmed": [pct(to_confirm, 0.5), pct(to_confirm, 0.99)]}


def describe(rows: list[tuple], data_dir: Path) -> str:
    """What the engine did with these transactions (for a failure message)."""
    lines = []
    for offchain_id, *_ in rows:
        tx = Transaction.unscoped.get(offchain_id=offchain_id)
        on_node = node_transactions(data_dir, [tx.fee_payer]).get(tx.onchain_id)
        events = list(TransactionEvent.objects.filter(transaction=tx).values_list("kind", "at"))
        lines.append(f"{tx.operation} {tx.offchain_id} {tx.status} signature {tx.onchain_id} on node: {on_node is not None}; built {tx.txn_timestamp:%H:%M:%S.%f}, "
                     f"submitted {tx.submitted_at and f'{tx.submitted_at:%H:%M:%S.%f}'}, updated {tx.updated_at:%H:%M:%S.%f}, last valid height {tx.last_valid_block_height}; "
                     f"events {[(k, f'{at:%H:%M:%S.%f}') for k, at in events]}")
    return "\n".join(lines)


# --- Shared by the crash tests ------------------------------------------------------------


@dataclass
class Stack:
    node: LocalnetProcess
    worker: WorkerProcess
    web: WebProcess
    logs: Path

    def kill(self, what: str) -> None:
        getattr(self, what).kill()

    def start(self, what: str) -> None:
        getattr(self, what).start()


@dataclass
class World:
    funder: dict  # {offchainId, onchainId}
    mint: str
    holders: list[dict]  # position identifiers


def build_world(api: Api, holders: int = HOLDERS) -> World:
    """A funding account (seeded by the localnet airdrop funder), an SPL instrument and
    ``holders`` positions holding MINTED base units each; every transaction confirmed."""
    authority = api.ok("POST", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "TOKEN_MANAGEMENT_AUTHORITY"}}})["newAccount"]
    funder = api.ok("POST", "/api/v1/accounts?wait=confirmed", {"itemData": {
        "managed": True, "seed": {"lamports": 2 * 10**9}, "offchainReferences": {"type": "TOKEN_MANAGEMENT_AUTHORITY", "code": "FUNDER"}}})["newAccount"]
    instrument = api.ok("POST", "/api/v1/financial-instruments?wait=confirmed", {"itemData": {
        "version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": {"offchainId": authority["offchainId"]},
        "onchainData": {"name": "Crash Dollar", "symbol": "CRSH", "decimals": 2}}})["newFinancialInstrument"]

    def holder(_):
        owner = api.ok("POST", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "TOKEN_MANAGEMENT_AUTHORITY"}}})["newAccount"]
        lookup = {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": {"offchainId": instrument["offchainId"]}}
        return api.ok("POST", "/api/v1/positions/mint?wait=confirmed", {"itemData": {"position": lookup, "value": {"lamports": MINTED}, "createIfMissing": True}})["mintedPosition"]

    with ThreadPoolExecutor(min(holders, 8)) as pool:
        made = list(pool.map(holder, range(holders)))
    return World(funder=funder, mint=instrument["onchainId"], holders=made)


class Findings:
    """Broken invariants, collected so one (long) run reports all of them."""

    def __init__(self):
        self.items: list[str] = []

    def expect(self, condition, message) -> bool:
        if not condition:
            self.items.append(message() if callable(message) else str(message))
        return bool(condition)


def wait_until_settled(tenant, timeout: float) -> list[tuple]:
    """Every transaction of the tenant ended (effects applied, or failure effects run);
    returns the ones that did not, if the time ran out."""
    deadline = time.monotonic() + timeout
    while True:
        open_rows = list(Transaction.unscoped.filter(tenant=tenant).exclude(status__in=ENDED, effects_applied_at__isnull=False)
                         .values_list("offchain_id", "status", "effects_applied_at"))
        if not open_rows or time.monotonic() > deadline:
            return open_rows
        time.sleep(0.5)


def reconcile_localnet() -> tuple[dict, int]:
    """``manage.py reconcile`` of the local cluster: its JSON summary and its exit code."""
    from django.core.management import call_command

    out = io.StringIO()
    try:
        call_command("reconcile", "--cluster", "CHAIN_LOCALNET", stdout=out)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return json.loads(out.getvalue().strip().splitlines()[-1]), code
