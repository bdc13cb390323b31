"""The embedded default's SQLite backend: Django's, with writers that queue in turn.

SQLite has one write lock. With ``BEGIN IMMEDIATE`` a writer that finds it taken does not
wait in line: SQLite's busy handler sleeps 1, 2, 5, 10 … up to 100 ms between tries, so
under a few concurrent writers some lose the race again and again (measured alone: the
wait for BEGIN IMMEDIATE at p50 1 ms, p99 730–830 ms, max 1.5 s; docs/performance.md,
"SQLite's one writer"). The web server's requests and the worker's confirmations are
such writers, and they held each other up.

Here every transaction that ``BEGIN IMMEDIATE`` opens first takes an exclusive ``flock`` on
a file next to the database, blocking, and gives it up when the transaction ends (commit,
rollback or the connection closing). The kernel queues the waiters: no sleeping between
tries, so the wait is the work ahead and nothing more (measured the same way: p99 44–98 ms,
40 % more transactions/s). A process that dies holding it loses it with its files.

What this gives up: SQLite's ``timeout`` (30 s) ends a stuck wait with "database is locked";
a wait for the flock has no end while the holder's transaction lasts. Every holder is a
transaction of this service that ends (statements, no network inside write phases:
docs/transactions.md), so the wait is bounded by the longest write transaction. Statements
run outside a transaction (autocommit) still take SQLite's lock the old way; they are
single statements. In-memory databases take no file lock.
"""

from __future__ import annotations

import fcntl
import os

from django.db.backends.sqlite3 import base


class DatabaseWrapper(base.DatabaseWrapper):
    _writer_lock_fd: int | None = None
    _writer_lock_held = False

    def _writer_lock_path(self) -> str | None:
        name = str(self.settings_dict["NAME"])
        if self.is_in_memory_db() or not name:
            return None
        return f"{name}.writers"

    def _writer_lock_acquire(self) -> None:
        path = self._writer_lock_path()
        if path is None or self._writer_lock_held:
            return
        if self._writer_lock_fd is None:
            self._writer_lock_fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._writer_lock_fd, fcntl.LOCK_EX)
        self._writer_lock_held = True

    def _writer_lock_release(self) -> None:
        if self._writer_lock_held:
            self._writer_lock_held = False
            fcntl.flock(self._writer_lock_fd, fcntl.LOCK_UN)

    def _start_transaction_under_autocommit(self):
        if self.transaction_mode != "IMMEDIATE":
            return super()._start_transaction_under_autocommit()
        self._writer_lock_acquire()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._writer_lock_release()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._writer_lock_release()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._writer_lock_release()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._writer_lock_release()
            if self._writer_lock_fd is not None:
                os.close(self._writer_lock_fd)
                self._writer_lock_fd = None
