"""Durable state of the local node: one SQLite file in the data directory.

Every executed transaction and the accounts it wrote are committed before the RPC answer
leaves. WAL with synchronous=NORMAL survives a killed process (the WAL is in the OS page
cache); only an OS crash can lose the last commits — acceptable for an embedded dev
cluster, and documented (docs/localnet.md).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
    pubkey TEXT PRIMARY KEY, lamports INTEGER NOT NULL, owner TEXT NOT NULL,
    executable INTEGER NOT NULL, rent_epoch INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS accounts_owner ON accounts(owner);
CREATE TABLE IF NOT EXISTS transactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, signature TEXT NOT NULL UNIQUE, slot INTEGER NOT NULL,
    block_time INTEGER NOT NULL, raw BLOB NOT NULL, err TEXT, meta TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS address_signatures (
    address TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (address, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blockhashes (blockhash TEXT PRIMARY KEY, slot INTEGER NOT NULL);
"""


@dataclass
class StoredAccount:
    pubkey: str
    lamports: int
    owner: str
    executable: bool
    rent_epoch: int
    data: bytes


@dataclass
class PendingWrite:
    accounts: list
    deleted: list
    tx: "StoredTransaction | None"
    addresses: list


@dataclass
class StoredTransaction:
    seq: int
    signature: str
    slot: int
    block_time: int
    raw: bytes
    err: object
    meta: dict


class GroupCommit:
    """Executed transactions waiting to be persisted, in execution order.

    The server flushes at the end of each event-loop turn, before writing any answer, so
    several transactions share one SQLite commit and none is answered before it is
    durable. A crash can only lose transactions whose answers were never sent: always a
    suffix of execution order.
    """

    def __init__(self, store: "Store"):
        self.store = store
        self.pending: list[PendingWrite] = []
        self.pending_signatures: set[str] = set()

    def enqueue(self, item: PendingWrite) -> None:
        self.pending.append(item)
        if item.tx is not None:
            self.pending_signatures.add(item.tx.signature)

    def is_pending(self, signature: str) -> bool:
        return signature in self.pending_signatures

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        self.store.commit_batch(batch)
        self.pending_signatures.clear()


class Store:
    def __init__(self, data_dir: Path):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "ledger.db"
        self._local = threading.local()
        conn = self._conn()
        conn.executescript(SCHEMA)
        conn.commit()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints (the only fsyncs in WAL/NORMAL) run on the slot clock's thread,
            # not inside a request: see checkpoint().
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._local.conn = conn
        return conn

    # --- meta ---------------------------------------------------------------------------
    def meta_get(self, key: str) -> str | None:
        row = self._conn().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def meta_set(self, key: str, value: str) -> None:
        self._conn().execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))

    # --- writes ---------------------------------------------------------------------------
    def commit_batch(self, batch: list["PendingWrite"]) -> None:
        """Persist executed transactions, in execution order, in one SQLite transaction."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for item in batch:
                self._write(conn, item)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def commit_transaction(self, *, accounts: Iterable[StoredAccount], deleted: Iterable[str], tx: StoredTransaction | None, addresses: Iterable[str]) -> None:
        self.commit_batch([PendingWrite(list(accounts), list(deleted), tx, list(addresses))])

    @staticmethod
    def _write(conn, item: "PendingWrite") -> None:
        for acc in item.accounts:
            conn.execute(
                "INSERT INTO accounts(pubkey, lamports, owner, executable, rent_epoch, data) VALUES(?,?,?,?,?,?) "
                "ON CONFLICT(pubkey) DO UPDATE SET lamports=excluded.lamports, owner=excluded.owner, executable=excluded.executable, "
                "rent_epoch=excluded.rent_epoch, data=excluded.data",
                (acc.pubkey, acc.lamports, acc.owner, int(acc.executable), acc.rent_epoch, acc.data),
            )
        for pubkey in item.deleted:
            conn.execute("DELETE FROM accounts WHERE pubkey=?", (pubkey,))
        tx = item.tx
        if tx is not None:
            cur = conn.execute(
                "INSERT INTO transactions(signature, slot, block_time, raw, err, meta) VALUES(?,?,?,?,?,?)",
                (tx.signature, tx.slot, tx.block_time, tx.raw, json.dumps(tx.err) if tx.err is not None else None, json.dumps(tx.meta, separators=(",", ":"))),
            )
            conn.executemany("INSERT OR IGNORE INTO address_signatures(address, seq) VALUES(?, ?)", [(a, cur.lastrowid) for a in set(item.addresses)])

    def record_blockhash(self, blockhash: str, slot: int, keep_from_slot: int) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR REPLACE INTO blockhashes(blockhash, slot) VALUES(?, ?)", (blockhash, slot))
        conn.execute("DELETE FROM blockhashes WHERE slot < ?", (keep_from_slot,))
        conn.execute("INSERT INTO meta(key, value) VALUES('slot', ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value", (str(slot),))
        conn.execute("COMMIT")

    def checkpoint(self) -> None:
        """Copy the WAL into the database file (PASSIVE: never blocks writers)."""
        self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)")

    # --- reads --------------------------------------------------------------------------
    def accounts(self) -> Iterator[StoredAccount]:
        for row in self._conn().execute("SELECT pubkey, lamports, owner, executable, rent_epoch, data FROM accounts"):
            yield StoredAccount(row[0], row[1], row[2], bool(row[3]), row[4], bytes(row[5]))

    def accounts_by_owner(self, owner: str) -> list[str]:
        return [row[0] for row in self._conn().execute("SELECT pubkey FROM accounts WHERE owner=? ORDER BY pubkey", (owner,))]

    def blockhashes(self) -> list[tuple[str, int]]:
        return list(self._conn().execute("SELECT blockhash, slot FROM blockhashes ORDER BY slot"))

    def has_signature(self, signature: str) -> bool:
        return self._conn().execute("SELECT 1 FROM transactions WHERE signature=?", (signature,)).fetchone() is not None

    def transaction(self, signature: str) -> StoredTransaction | None:
        row = self._conn().execute("SELECT seq, signature, slot, block_time, raw, err, meta FROM transactions WHERE signature=?", (signature,)).fetchone()
        return self._tx(row) if row else None

    def statuses(self, signatures: list[str]) -> dict[str, tuple[int, object]]:
        out: dict[str, tuple[int, object]] = {}
        conn = self._conn()
        for start in range(0, len(signatures), 500):
            chunk = signatures[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for sig, slot, err in conn.execute(f"SELECT signature, slot, err FROM transactions WHERE signature IN ({marks})", chunk):
                out[sig] = (slot, json.loads(err) if err else None)
        return out

    def signatures_for_address(self, address: str, *, limit: int, before_seq: int | None, until_seq: int | None, max_slot: int | None = None) -> list[StoredTransaction]:
        """Newest first (execution order), at most ``limit``, strictly between ``until_seq``
        and ``before_seq``, in slots up to ``max_slot``."""
        sql = "SELECT t.seq, t.signature, t.slot, t.block_time, t.raw, t.err, t.meta FROM address_signatures a JOIN transactions t ON t.seq=a.seq WHERE a.address=?"
        params: list = [address]
        if max_slot is not None:
            sql += " AND t.slot <= ?"
            params.append(max_slot)
        if before_seq is not None:
            sql += " AND a.seq < ?"
            params.append(before_seq)
        if until_seq is not None:
            sql += " AND a.seq > ?"
            params.append(until_seq)
        sql += " ORDER BY a.seq DESC LIMIT ?"
        params.append(limit)
        return [self._tx(row) for row in self._conn().execute(sql, params)]

    def transaction_count(self) -> int:
        return self._conn().execute("SELECT COALESCE(MAX(seq), 0) FROM transactions").fetchone()[0]

    @staticmethod
    def _tx(row) -> StoredTransaction:
        return StoredTransaction(row[0], row[1], row[2], row[3], bytes(row[4]), json.loads(row[5]) if row[5] else None, json.loads(row[6]))
