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
from pathlib import Path

from django.conf import settings
from django.db import connection

from transactions.localnet.testing import ChildProcess

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    cfg = connection.settings_dict
    if cfg["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{cfg['NAME']}"
    user = cfg.get("USER") or ""
    password = f":{cfg['PASSWORD']}" if cfg.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{cfg.get('HOST') or '127.0.0.1'}:{cfg.get('PORT') or 5432}/{cfg['NAME']}"


class WorkerProcess(ChildProcess):
    def __init__(self, queue: str, extra_env: dict[str, str] | None = None):
        self.queue = queue
        self.extra_env = extra_env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(settings.VAR_DIR) / f"worker-{queue}.log"

    def start(self) -> None:
        env = {**os.environ, "DATABASE_URL": database_url(), "LEDGER_VAR_DIR": str(settings.VAR_DIR), "LEDGER_TASK_QUEUE": self.queue, **self.extra_env}
        if settings.REDIS_URL:
            env["REDIS_URL"] = settings.REDIS_URL
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "ledger_project", "worker", "-Q", self.queue, "--pool", "threads", "--concurrency", "4",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"{self.queue}@%h", "--loglevel", "INFO"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def restart(self) -> None:
        self.stop()
        self.start()


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
