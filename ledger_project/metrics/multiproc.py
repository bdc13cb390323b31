"""The folder of prometheus_client's multiprocess mode.

Every process of one instance (gunicorn's workers, Celery's pool processes, a test run and
the worker it starts) writes its counters and histograms to memory-mapped files named by
pid in one folder; ``/metrics`` adds them up. So web and worker must share a host and this
folder (docs/operations.md, "Metrics": with several hosts, each host's API serves its own
processes' counters and Prometheus sums over instances).

Nothing here imports prometheus_client at module level: it reads PROMETHEUS_MULTIPROC_DIR
once, when it is first imported, so settings set the variable before anything imports it
(and ``_fold``, run in gunicorn's master, sets it before its import: a master that loaded
the client without it would fork workers that keep their counts in memory).
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
_PID = re.compile(r"_(\d+)\.db$")
_BASE = Path(__file__).resolve().parents[2]


def _path() -> str:
    """The folder, in a process that may not have loaded settings (gunicorn's master
    without preload_app): the same rule as settings."""
    return os.environ.get(ENV) or str(directory_default(Path(os.environ.get("LEDGER_VAR_DIR") or _BASE / "var")))


def directory_default(var_dir: Path) -> Path:
    """PROMETHEUS_MULTIPROC_DIR, else ``<var>/metrics`` — per pytest-xdist worker, so one
    test's counters are not moved by another test process's traffic."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return var_dir / (f"metrics-{worker}" if worker else "metrics")


def directory_setup(var_dir: Path) -> Path:
    """Create the folder and export it to this process and its children (settings)."""
    path = directory_default(var_dir)
    path.mkdir(parents=True, exist_ok=True)
    os.environ[ENV] = str(path)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: where the counters and histograms of processes that ended while the instance ran are
#: folded (``counter_archive.db``, ``histogram_archive.db``: read like any process's file)
ARCHIVE = "archive"


@contextmanager
def scrape_lock(*, exclusive: bool = False, path: str | None = None):
    """A scrape reads the folder under a shared lock; folding a dead process's files into
    the archive takes it exclusively, so no scrape sees a count twice or not at all."""
    import fcntl

    folder = path or _path()
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _fold(path: str, pid: int) -> int:
    """Add a dead process's counters and histograms to the archive files, then remove all
    its files (its gauges with them). Caller holds the exclusive lock."""
    os.environ.setdefault(ENV, path)  # prometheus_client must never be imported without it (module docstring)
    from prometheus_client.mmap_dict import MmapedDict

    gone = 0
    for name in sorted(os.listdir(path)):
        match = _PID.search(name)
        if not match or int(match.group(1)) != pid:
            continue
        kind = name.split("_", 1)[0]
        full = os.path.join(path, name)
        if kind in ("counter", "histogram"):
            archive = MmapedDict(os.path.join(path, f"{kind}_{ARCHIVE}.db"))
            try:
                for key, value, _, _ in MmapedDict.read_all_values_from_file(full):
                    if value:
                        archive.write_value(key, archive.read_value(key)[0] + value, 0.0)
            finally:
                archive.close()
        try:
            os.unlink(full)
            gone += 1
        except FileNotFoundError:
            pass
    return gone


def process_dead(pid: int) -> int:
    """gunicorn's child_exit: a worker that ended (recycled after ``max_requests``, or
    killed) has its counts folded into the archive and its files removed, so the folder
    holds one file per live process and kind, however long the instance runs, and counters
    never go back while it runs. Returns how many files went."""
    path = _path()
    if not os.path.isdir(path):
        return 0
    with scrape_lock(exclusive=True, path=path):
        return _fold(path, pid)


def directory_clean(path: str | os.PathLike | None = None) -> int:
    """At a start (gunicorn's master, a Celery worker): remove the files of processes no
    longer running — what a previous run left; and the archive too when no other process
    of the instance runs (a fresh start: counters start from 0, which Prometheus reads as a
    reset). Files of live processes stay, so starting the API does not wipe the counters of
    a worker already running beside it. Returns how many files went."""
    path = str(path or _path())
    if not os.path.isdir(path):
        return 0
    removed = 0
    with scrape_lock(exclusive=True, path=path):
        others_alive = False
        for name in os.listdir(path):
            match = _PID.search(name)
            if match is None:
                continue
            pid = int(match.group(1))
            if not _alive(pid):
                try:
                    os.unlink(os.path.join(path, name))
                    removed += 1
                except FileNotFoundError:
                    pass
            elif pid != os.getpid():
                others_alive = True
        if not others_alive:
            for kind in ("counter", "histogram"):
                try:
                    os.unlink(os.path.join(path, f"{kind}_{ARCHIVE}.db"))
                    removed += 1
                except FileNotFoundError:
                    pass
    return removed
