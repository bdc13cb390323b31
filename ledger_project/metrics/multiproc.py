"""The folder of prometheus_client's multiprocess mode.

Every process of one instance (gunicorn's workers, Celery's pool processes, a test run and
the worker it starts) writes its counters and histograms to memory-mapped files named by
pid in one folder; ``/metrics`` adds them up. So web and worker must share a host and this
folder (docs/operations.md, "Metrics": with several hosts, each host's API serves its own
processes' counters and Prometheus sums over instances).

Nothing here imports prometheus_client: it reads PROMETHEUS_MULTIPROC_DIR when it is first
imported, so settings set the variable before anything imports it.
"""

from __future__ import annotations

import os
import re
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


def directory_clean(path: str | os.PathLike | None = None) -> int:
    """At a start (gunicorn's master, a Celery worker): remove the files of processes no
    longer running — what a previous run left. Files of live processes stay, so starting
    the API does not wipe the counters of a worker already running beside it. Counters
    then restart from what the live processes hold; Prometheus reads the drop as a reset.
    Returns how many files went."""
    path = path or _path()
    if not path or not os.path.isdir(path):
        return 0
    removed = 0
    for name in os.listdir(path):
        match = _PID.search(name)
        if match and not _alive(int(match.group(1))):
            try:
                os.unlink(os.path.join(path, name))
                removed += 1
            except FileNotFoundError:
                pass
    return removed


def process_dead(pid: int) -> None:
    """gunicorn's child_exit: a dead worker's live gauges leave the sum (its counters stay:
    they were counted)."""
    # What prometheus_client.multiprocess.mark_process_dead does, without importing the
    # client into gunicorn's master: imported there before the variable is set, every
    # worker forked later would inherit single-process values.
    import glob

    for name in glob.glob(os.path.join(_path(), f"gauge_live*_{pid}.db")):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
