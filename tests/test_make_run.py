"""`make run` keeps the stack up and stops it on request (issue: "One crash stops
everything", "README's second command fails right after `make run`"; docs/operations.md,
"make run").

The supervisor (scripts/run_embedded.py, what `make run` runs after migrate) serves the
test database on ports of its own, with a var dir, a task queue and a node of its own.
With it up:

- the README's commands from a second terminal, outside embedded mode, make an
  organization and an API key, and the key authenticates against the running API;
- each of its children killed with SIGKILL (the API's gunicorn master, the worker's main
  process, the node) is restarted, logged, and /healthz answers ``ok`` again;
- SIGTERM to the supervisor: it and every process of every child's group are gone within
  STOP_WITHIN seconds.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.workers import ROOT, children_of, database_url, group_alive, new_queue_name, paused_workers, wait_for
from localnet.testing import free_port, free_port_pair

pytestmark = [pytest.mark.chain, pytest.mark.worker]

STOP_WITHIN = 10.0
# The test process's own settings name the shared node and say embedded: the stack and the
# second terminal get neither.
DROPPED = ("LEDGER_EMBEDDED", "LEDGER_MASTER_KEY", "LEDGER_LOCALNET_RPC_URL", "LEDGER_TEST_LOCALNET_URL", "LEDGER_LOCALNET_DATA_DIR")


def _get(port: int, path: str, headers: dict | None = None, method: str = "GET", body: bytes | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    except (OSError, http.client.HTTPException, ValueError):
        return 0, {}
    finally:
        conn.close()


def _healthy(port: int) -> bool:
    status, body = _get(port, "/healthz")
    return status == 200 and body.get("status") == "ok"


def _manage(env: dict, *args: str) -> dict:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(supervisor: int, word: str) -> int | None:
    """The supervisor's child whose command line has ``word``, if it has one now."""
    for pid in children_of(supervisor):
        try:
            if word in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                return pid
        except OSError:
            continue
    return None


@pytest.mark.django_db(transaction=True)
def test_make_run_restarts_what_dies_serves_the_readme_commands_and_stops_within_10_s(tmp_path):
    from django.conf import settings as django_settings

    var = tmp_path / "var"
    port, node_port = free_port(), free_port_pair()
    base = {k: v for k, v in os.environ.items() if k not in DROPPED}
    common = {"DJANGO_SETTINGS_MODULE": "ledger_project.settings", "DATABASE_URL": database_url(), "LEDGER_VAR_DIR": str(var)}
    if django_settings.REDIS_URL:
        common["REDIS_URL"] = django_settings.REDIS_URL
    queue = new_queue_name()
    env = {**base, **common, "PORT": str(port), "LEDGER_LOCALNET_PORT": str(node_port), "LEDGER_TASK_QUEUE": queue, "LEDGER_CACHE_PREFIX": queue}
    errors = tmp_path / "make-run.err"
    with paused_workers(), open(tmp_path / "make-run.out", "wb") as out, open(errors, "wb") as err:
        supervisor = subprocess.Popen([sys.executable, "scripts/run_embedded.py"], cwd=ROOT, env=env, stdout=out, stderr=err, start_new_session=True)
        groups: set[int] = set()
        try:
            wait_for(lambda: _healthy(port), timeout=180, interval=0.5, what=f"make run to serve; see {errors}")

            # README, "Getting an API key": a second terminal, not in embedded mode.
            second_terminal = {**base, **common}
            assert _manage(second_terminal, "create_tenant", "--external-id", "ACME", "--name", "Acme Bank")["externalId"] == "ACME"
            issued = _manage(second_terminal, "create_api_key", "--org", "ACME")
            status, who = _get(port, "/api/v1/auth/whoami", {"Authorization": f"Bearer {issued['secret']}", "Content-Type": "application/json"}, "POST", b"{}")
            assert status == 200, who

            for name, word in (("api", "gunicorn"), ("worker", "celery"), ("node", "localnet")):
                victim = _child(supervisor.pid, word)
                assert victim is not None, f"no {name} under make run"
                groups.add(victim)
                os.kill(victim, signal.SIGKILL)
                wait_for(lambda: f"{name} (pid {victim}) exited with -9" in errors.read_text(), timeout=10, what=f"the {name}'s death logged")
                wait_for(lambda: _child(supervisor.pid, word) not in (None, victim), timeout=30, what=f"the {name} restarted")
                # The supervisor logs the restart right after it started the new process.
                wait_for(lambda: f"{name} restarted" in errors.read_text(), timeout=10, what=f"the {name}'s restart logged")
                wait_for(lambda: _healthy(port), timeout=120, interval=0.5, what=f"/healthz ok after the {name}'s restart")
                assert supervisor.poll() is None

            groups |= set(children_of(supervisor.pid))
            signalled = time.monotonic()
            os.kill(supervisor.pid, signal.SIGTERM)
            while (supervisor.poll() is None or any(group_alive(g) for g in groups)) and time.monotonic() - signalled < STOP_WITHIN + 20:
                time.sleep(0.05)
            took = time.monotonic() - signalled
            left = [pid for g in groups for pid in group_alive(g)]
            assert supervisor.poll() is not None and not left and took <= STOP_WITHIN, f"{took:.1f} s after SIGTERM, left: {left}; see {errors}"
            print(f"make run stopped in {took:.1f} s")
        finally:
            if supervisor.poll() is None:
                supervisor.kill()
            for group in groups | set(children_of(supervisor.pid)):
                try:
                    os.killpg(group, signal.SIGKILL)
                except ProcessLookupError:
                    pass
