"""A real Celery worker process for tests, on a queue of its own.

The worker is started against the *test* database (whatever pytest-django created: a
PostgreSQL database or a SQLite file) and the configured broker (Redis when REDIS_URL is
set, else the filesystem broker), so tests exercise the production path. Tests that use
it must commit their data: ``@pytest.mark.django_db(transaction=True)``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
import weakref
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

from localnet.testing import ChildProcess

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    cfg = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{cfg['NAME']}"
    user = cfg.get("USER") or ""
    password = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"


def service_env(queue: str, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a service process (worker, web) of the test: the test database, the
    test's var dir (master key, broker folder), its broker and its task queue."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "ledger_project.settings", "DATABASE_URL": database_url(),
           "LEDGER_VAR_DIR": str(settings.VAR_DIR), "LEDGER_TASK_QUEUE": queue, **(extra_env or {})}
    if settings.REDIS_URL:
        env["REDIS_URL"] = settings.REDIS_URL
    return env


class WorkerProcess(ChildProcess):
    """``celery worker`` on ``queue``; with ``beat_schedule`` it also runs beat (as `make
    run` does), keeping its schedule in that file. ``pool``/``concurrency``: the threads
    pool by default; `make run`'s worker is ``pool="prefork", concurrency=3``."""

    #: Every worker this test process made (to pause the others: ``paused_workers``).
    made: "weakref.WeakSet[WorkerProcess]" = weakref.WeakSet()

    def __init__(self, queue: str, extra_env: dict[str, str] | None = None, *, beat_schedule: Path | None = None, log_path: Path | None = None,
                 pool: str = "threads", concurrency: int = 4):
        WorkerProcess.made.add(self)
        self.pool = pool
        self.concurrency = concurrency
        self.queue = queue
        self.extra_env = extra_env or {}
        self.beat_schedule = beat_schedule
        self.proc: subprocess.Popen | None = None
        self.log_path = log_path or Path(settings.VAR_DIR) / f"worker-{queue}.log"

    def start(self) -> None:
        beat = ["--beat", "--schedule", str(self.beat_schedule)] if self.beat_schedule else []
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "-Q", self.queue, "--pool", self.pool, "--concurrency", str(self.concurrency),
                 "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{self.queue}@%h", "--loglevel", "INFO", *beat],
                cwd=ROOT, env=service_env(self.queue, self.extra_env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )

    def restart(self) -> None:
        self.stop()
        self.start()


class WebProcess(ChildProcess):
    """The API under gunicorn with gunicorn.conf.py on 127.0.0.1:``port``, as `make run`
    serves it; ``start`` returns once it answers /healthz. A restart binds the same port."""

    def __init__(self, queue: str, port: int, extra_env: dict[str, str] | None = None, *, log_path: Path | None = None):
        self.queue = queue
        self.port = port
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = log_path or Path(settings.VAR_DIR) / f"web-{port}.log"

    def start(self, timeout: float = 60.0) -> None:
        import http.client

        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning"],
                cwd=ROOT, env=service_env(self.queue, self.extra_env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.proc.returncode}; see {self.log_path}")
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                conn.request("GET", "/healthz")
                if conn.getresponse().status < 500:
                    return
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer within {timeout}s; see {self.log_path}")
            time.sleep(0.1)


def group_alive(pgid: int) -> list[int]:
    """Processes of process group ``pgid`` that are still running (zombies waiting for their
    parent to collect them are not)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def route_tasks_to(queue: str) -> None:
    from ledger_project.celery import app

    app.conf.task_routes = {"ledger.*": {"queue": queue}}
    app.conf.task_default_queue = queue
    app.conf.task_always_eager = False
    # Celery caches the routing table and router on first use: drop them so the new
    # routes apply to the next message.
    app.amqp._rtable = None
    app.amqp.__dict__.pop("router", None)


def new_queue_name() -> str:
    return f"test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{uuid.uuid4().hex[:8]}"


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@contextmanager
def paused_workers():
    """Stop this test process's running workers (the session's, on the shared node) for a
    test that runs a stack of its own on another node, and start them again after. Their
    pumps follow every transaction of the test database for the cluster, by the shared
    node's URL: on it, this test's transactions would be unknown, then expired (in a
    deployment every worker has one URL per cluster)."""
    running = [w for w in list(WorkerProcess.made) if w.proc is not None and w.proc.poll() is None]
    for worker in running:
        worker.stop()
    try:
        yield
    finally:
        for worker in running:
            worker.start()


@contextmanager
def worker_with_beat(localnet_url: str, log_dir: Path, extra_env: dict[str, str] | None = None):
    """A worker running beat (as `make run` starts it) on a queue of its own, with this
    process's tasks routed to it and the session's other workers paused meanwhile: beat
    reads the periodic tasks of the test database (backoffice/scheduling.py)."""
    from ledger_project.celery import app

    queue = new_queue_name()
    worker = WorkerProcess(queue, {"LEDGER_LOCALNET_RPC_URL": localnet_url, **(extra_env or {})}, beat_schedule=log_dir / "beat-schedule", log_path=log_dir / "worker.log")
    routes = (app.conf.task_routes, app.conf.task_default_queue)
    with paused_workers():
        route_tasks_to(queue)
        worker.start()
        try:
            yield worker
        finally:
            worker.stop()
            app.conf.task_routes, app.conf.task_default_queue = routes
            app.amqp._rtable = None
            app.amqp.__dict__.pop("router", None)
