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
from dataclasses import dataclass, field
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
CREATE TABLE IF NOT EXISTS blocks (
    slot INTEGER PRIMARY KEY, blockhash TEXT NOT NULL, previous_blockhash TEXT NOT NULL,
    parent_slot INTEGER NOT NULL, block_time INTEGER NOT NULL, block_height INTEGER NOT NULL,
    first_seq INTEGER NOT NULL, tx_count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS account_versions (
    slot INTEGER NOT NULL, pubkey TEXT NOT NULL, lamports INTEGER, owner TEXT, executable INTEGER,
    rent_epoch INTEGER, data BLOB, PRIMARY KEY (slot, pubkey)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS perf_samples (
    slot INTEGER PRIMARY KEY, num_transactions INTEGER NOT NULL, num_non_vote_transactions INTEGER NOT NULL,
    num_slots INTEGER NOT NULL, sample_period_secs INTEGER NOT NULL);
"""

#: Version 1: accounts, transactions, address index, blockhash queue. Version 2 adds
#: blocks (one row per completed slot), account_versions (the state an account had before
#: its first write in each recent slot, for reads at `finalized`) and perf_samples. A
#: version-1 data directory is upgraded in place on open: the new tables start empty, so
#: its blocks begin at the slot the upgraded node first completes (docs/localnet.md).
SCHEMA_VERSION = 2


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
    #: (pubkey, StoredAccount or None when it did not exist): each account's state before
    #: its first write in the transaction's slot
    versions: list = field(default_factory=list)


@dataclass
class StoredBlock:
    slot: int
    blockhash: str
    previous_blockhash: str
    parent_slot: int
    block_time: int
    block_height: int
    first_seq: int
    tx_count: int


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
        #: called with each committed batch, after the commit (PubSub notifications)
        self.listeners: list = []

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
        for listener in self.listeners:
            listener(batch)


class Store:
    def __init__(self, data_dir: Path):
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "ledger.db"
        self._local = threading.local()
        conn = self._conn()
        conn.executescript(SCHEMA)
        conn.commit()
        version = int(self.meta_get("schema_version") or 1)
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path} has schema version {version}; this node knows up to {SCHEMA_VERSION}")
        if version < SCHEMA_VERSION:
            self.meta_set("schema_version", str(SCHEMA_VERSION))

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
        """Persist executed transactions, in execution order, in one SQLite transaction.

        An account several transactions of the batch wrote is stored once, in its last
        state: nothing reads the intermediate ones, the commit is all or nothing."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            final: dict[str, StoredAccount | None] = {}
            for item in batch:
                for acc in item.accounts:
                    final[acc.pubkey] = acc
                for pubkey in item.deleted:
                    final[pubkey] = None
                self._write(conn, item)
            conn.executemany(
                "INSERT INTO accounts(pubkey, lamports, owner, executable, rent_epoch, data) VALUES(?,?,?,?,?,?) "
                "ON CONFLICT(pubkey) DO UPDATE SET lamports=excluded.lamports, owner=excluded.owner, executable=excluded.executable, "
                "rent_epoch=excluded.rent_epoch, data=excluded.data",
                [(acc.pubkey, acc.lamports, acc.owner, int(acc.executable), _i64(acc.rent_epoch), acc.data) for acc in final.values() if acc is not None],
            )
            conn.executemany("DELETE FROM accounts WHERE pubkey=?", [(pubkey,) for pubkey, acc in final.items() if acc is None])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def commit_transaction(self, *, accounts: Iterable[StoredAccount], deleted: Iterable[str], tx: StoredTransaction | None, addresses: Iterable[str]) -> None:
        self.commit_batch([PendingWrite(list(accounts), list(deleted), tx, list(addresses))])

    @staticmethod
    def _write(conn, item: "PendingWrite") -> None:
        """One transaction's rows (its accounts: commit_batch)."""
        tx = item.tx
        if tx is not None:
            cur = conn.execute(
                "INSERT INTO transactions(signature, slot, block_time, raw, err, meta) VALUES(?,?,?,?,?,?)",
                (tx.signature, tx.slot, tx.block_time, tx.raw, json.dumps(tx.err) if tx.err is not None else None, json.dumps(tx.meta, separators=(",", ":"))),
            )
            conn.executemany("INSERT OR IGNORE INTO address_signatures(address, seq) VALUES(?, ?)", [(a, cur.lastrowid) for a in set(item.addresses)])
        if item.versions:
            slot = tx.slot if tx is not None else 0
            conn.executemany(
                "INSERT OR IGNORE INTO account_versions(slot, pubkey, lamports, owner, executable, rent_epoch, data) VALUES(?,?,?,?,?,?,?)",
                [(slot, key, *((acc.lamports, acc.owner, int(acc.executable), _i64(acc.rent_epoch), acc.data) if acc is not None else (None,) * 5)) for key, acc in item.versions],
            )

    def record_slot(self, *, blockhash: str, slot: int, slot_time: int, generation: int, keep_from_slot: int, block: StoredBlock | None, root: int) -> None:
        """A new slot, in one SQLite transaction: its blockhash, the block of the slot it
        completes, the slot clock, and the pruning of what the new root no longer needs."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("INSERT OR REPLACE INTO blockhashes(blockhash, slot) VALUES(?, ?)", (blockhash, slot))
            conn.execute("DELETE FROM blockhashes WHERE slot < ?", (keep_from_slot,))
            if block is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO blocks(slot, blockhash, previous_blockhash, parent_slot, block_time, block_height, first_seq, tx_count) VALUES(?,?,?,?,?,?,?,?)",
                    (block.slot, block.blockhash, block.previous_blockhash, block.parent_slot, block.block_time, block.block_height, block.first_seq, block.tx_count),
                )
            conn.execute("DELETE FROM account_versions WHERE slot <= ?", (root,))
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                [("slot", str(slot)), ("slot_time", str(slot_time)), ("blockhash_generation", str(generation))],
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def record_sample(self, slot: int, num_transactions: int, num_slots: int, period: int, keep: int) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT OR REPLACE INTO perf_samples VALUES(?,?,?,?,?)", (slot, num_transactions, num_transactions, num_slots, period))
        conn.execute("DELETE FROM perf_samples WHERE slot NOT IN (SELECT slot FROM perf_samples ORDER BY slot DESC LIMIT ?)", (keep,))
        conn.execute("COMMIT")

    def checkpoint(self) -> None:
        """Copy the WAL into the database file (PASSIVE: never blocks writers)."""
        self._conn().execute("PRAGMA wal_checkpoint(PASSIVE)")

    # --- reads --------------------------------------------------------------------------
    def accounts(self) -> Iterator[StoredAccount]:
        for row in self._conn().execute("SELECT pubkey, lamports, owner, executable, rent_epoch, data FROM accounts"):
            yield StoredAccount(row[0], row[1], row[2], bool(row[3]), _u64(row[4]), bytes(row[5]))

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

    # --- blocks, versions, samples ----------------------------------------------------------
    def block(self, slot: int) -> StoredBlock | None:
        row = self._conn().execute("SELECT * FROM blocks WHERE slot=?", (slot,)).fetchone()
        return StoredBlock(*row) if row else None

    def recent_blocks(self, count: int) -> list[StoredBlock]:
        return [StoredBlock(*row) for row in self._conn().execute("SELECT * FROM blocks ORDER BY slot DESC LIMIT ?", (count,))]

    def block_slots(self, start: int, end: int, limit: int) -> list[int]:
        return [row[0] for row in self._conn().execute("SELECT slot FROM blocks WHERE slot BETWEEN ? AND ? ORDER BY slot LIMIT ?", (start, end, limit))]

    def first_block_slot(self) -> int | None:
        return self._conn().execute("SELECT MIN(slot) FROM blocks").fetchone()[0]

    def block_transactions(self, block: StoredBlock) -> list[StoredTransaction]:
        if not block.tx_count:
            return []
        rows = self._conn().execute("SELECT seq, signature, slot, block_time, raw, err, meta FROM transactions WHERE seq BETWEEN ? AND ? ORDER BY seq", (block.first_seq, block.first_seq + block.tx_count - 1))
        return [self._tx(row) for row in rows]

    def failed_in_block(self, block: StoredBlock) -> int:
        """How many of the block's transactions failed (slotsUpdates' frozen stats)."""
        if not block.tx_count:
            return 0
        return self._conn().execute("SELECT COUNT(*) FROM transactions WHERE seq BETWEEN ? AND ? AND err IS NOT NULL", (block.first_seq, block.first_seq + block.tx_count - 1)).fetchone()[0]

    def slot_seq_range(self, slot: int) -> tuple[int, int]:
        """(first seq, count) of the transactions executed in ``slot`` (a scan: only for a
        slot whose start the node did not see, when a version-1 data directory is upgraded)."""
        first, count = self._conn().execute("SELECT MIN(seq), COUNT(*) FROM transactions WHERE slot=?", (slot,)).fetchone()
        return (first or 0), count

    def account_versions(self) -> Iterator[tuple[int, str, StoredAccount | None]]:
        for slot, pubkey, lamports, owner, executable, rent_epoch, data in self._conn().execute("SELECT * FROM account_versions ORDER BY slot"):
            yield slot, pubkey, (StoredAccount(pubkey, lamports, owner, bool(executable), _u64(rent_epoch), bytes(data)) if lamports is not None else None)

    def slot_transactions(self, slot: int) -> list[StoredTransaction]:
        block = self.block(slot)
        return self.block_transactions(block) if block is not None else []

    def samples(self, limit: int) -> list[tuple[int, int, int, int, int]]:
        return list(self._conn().execute("SELECT slot, num_transactions, num_non_vote_transactions, num_slots, sample_period_secs FROM perf_samples ORDER BY slot DESC LIMIT ?", (limit,)))

    def lamports_total(self) -> int:
        return self._conn().execute("SELECT COALESCE(SUM(lamports), 0) FROM accounts").fetchone()[0]

    def largest_accounts(self, limit: int, exclude: tuple = (), only: tuple = ()) -> list[tuple[str, int]]:
        sql, params = "SELECT pubkey, lamports FROM accounts", []
        if only:
            sql += f" WHERE pubkey IN ({','.join('?' * len(only))})"
            params += list(only)
        elif exclude:
            sql += f" WHERE pubkey NOT IN ({','.join('?' * len(exclude))})"
            params += list(exclude)
        return list(self._conn().execute(sql + " ORDER BY lamports DESC, pubkey LIMIT ?", [*params, limit]))

    @staticmethod
    def _tx(row) -> StoredTransaction:
        return StoredTransaction(row[0], row[1], row[2], row[3], bytes(row[4]), json.loads(row[5]) if row[5] else None, json.loads(row[6]))


# SQLite integers are signed 64-bit; rent_epoch is a u64 whose rent-exempt value is u64::MAX
# (Agave's RENT_EXEMPT_RENT_EPOCH): stored as its two's-complement i64, read back unsigned.
def _i64(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def _u64(value: int) -> int:
    return value + 2**64 if value < 0 else value
