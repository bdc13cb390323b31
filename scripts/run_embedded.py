"""`make run`: the whole stack with the embedded defaults, kept up (docs/operations.md,
"make run").

Starts the local SVM node (and waits for it to answer), a Celery worker with beat, the
demo organization (``bootstrap_demo``, once) and the API under gunicorn, then watches
them:

- a process that exits, whatever the reason, is restarted after a backoff (1 s, doubling
  to 30 s; back to 1 s once it has run a minute), and both are logged here. What it
  left behind in its process group (a pool child, a gunicorn worker) is killed first, so
  the new one finds its port and its queue free;
- SIGTERM, SIGINT (Ctrl-C) or SIGHUP to this process stops everything: SIGTERM to every
  child's process group, and SIGKILL to whatever is still there STOP_SECONDS after the
  signal. Every child runs in a session of its own, so
  the terminal's Ctrl-C reaches the stack only through here (one order of shutdown, no
  restart racing the signal), and each child gets SIGTERM should this process die first
  (PR_SET_PDEATHSIG).

Environment: PORT (API, 8000), LEDGER_LOCALNET_PORT (node, 8899), LEDGER_VAR_DIR (var/).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
STOP_SECONDS = 9.0  # everything gone within this of the signal (the promise is 10 s)
FIRST_BACKOFF, MAX_BACKOFF, STEADY_SECONDS = 1.0, 30.0, 60.0

_PR_SET_PDEATHSIG = 1


def log(message: str) -> None:
    print(f"make run: {message}", file=sys.stderr, flush=True)


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the supervisor dies (even by SIGKILL)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    name: str
    argv: list[str]
    log_path: Path | None  # None: this process's stdout/stderr
    proc: subprocess.Popen | None = None
    started: float = 0.0
    backoff: float = FIRST_BACKOFF
    restart_at: float | None = None
    restarts: int = 0

    def start(self, env: dict[str, str]) -> None:
        out = open(self.log_path, "ab") if self.log_path else None
        try:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT if out else None,
                                         start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            if out:
                out.close()
        self.started = time.monotonic()
        self.restart_at = None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal_group(self, signum: int) -> None:
        """``signum`` to the child's process group (it and what it started)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                pass

    def group_alive(self) -> bool:
        if self.proc is None:
            return False
        self.proc.poll()
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return False
        # Only zombies left? They are gone for our purpose (their parent collects them).
        return any(_alive_in_group(self.proc.pid))


def _alive_in_group(pgid: int):
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                yield int(entry.name)


def _node_answers(port: int) -> bool:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getHealth"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=1) as answer:
            return json.loads(answer.read()).get("result") == "ok"
    except (OSError, ValueError):
        return False


class Supervisor:
    def __init__(self) -> None:
        self.port = int(os.environ.get("PORT", "8000"))
        self.node_port = int(os.environ.get("LEDGER_LOCALNET_PORT", "8899"))
        self.var = Path(os.environ.get("LEDGER_VAR_DIR") or ROOT / "var")
        (self.var / "log").mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            # Embedded mode: without LEDGER_MASTER_KEY, the master key file is made under var/
            # (docs/custody.md). Production never sets this (settings refuse to start without a key).
            "LEDGER_EMBEDDED": "1",
            # Convenience of `make run` only (docs/accounts.md, "Who pays"): on the local node,
            # seeds and rent without a funding account are paid from an airdrop.
            "LEDGER_LOCALNET_AIRDROP_FUNDING": os.environ.get("LEDGER_LOCALNET_AIRDROP_FUNDING", "true"),
            # Webhook receivers on this machine (docs/webhooks.md, Safety): http and loopback for
            # `make run` only; production calls https endpoints on public addresses.
            "LEDGER_OUTBOUND_ALLOW_HTTP": os.environ.get("LEDGER_OUTBOUND_ALLOW_HTTP", "true"),
            "LEDGER_OUTBOUND_ALLOWED_NETWORKS": os.environ.get("LEDGER_OUTBOUND_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128"),
        }
        python = str(BIN / "python")
        self.node = Child("node", [python, "manage.py", "localnet"], self.var / "log" / "localnet.log")
        # Concurrency 3: while traffic flows, the transaction pump and the webhook delivery loop
        # each hold a slot; the third runs the periodic tasks (network-event polls, reconciliation).
        self.worker = Child("worker", [str(BIN / "celery"), "-A", "ledger_project", "worker", "--beat", "--schedule", str(self.var / "celerybeat-schedule"),
                                       "--concurrency", "3", "--loglevel", "INFO"], self.var / "log" / "worker.log")
        self.web = Child("api", [str(BIN / "gunicorn"), "ledger_project.wsgi", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{self.port}",
                                 "--access-logfile", "-"], None)
        self.children = [self.node, self.worker, self.web]
        self.stop_signal: int | None = None

    def _on_signal(self, signum, frame) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.stop_signal is None and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def _wait_for_node(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.stop_signal is None and time.monotonic() < deadline and self.node.running():
            if _node_answers(self.node_port):
                return
            self._sleep(0.2)

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        self.node.start(self.env)
        self._wait_for_node()
        if self.stop_signal is None:
            self.worker.start(self.env)
            demo = subprocess.run([str(BIN / "python"), "manage.py", "bootstrap_demo"], cwd=ROOT, env=self.env, start_new_session=True)
            if demo.returncode != 0 and self.stop_signal is None:
                log(f"bootstrap_demo failed ({demo.returncode}); stopping")
                self.stop_signal = signal.SIGTERM
        if self.stop_signal is None:
            print(f"""
  Tokenized asset ledger service
  API:       http://127.0.0.1:{self.port}/api/v1/
  API docs:  http://127.0.0.1:{self.port}/api/docs/
  Health:    http://127.0.0.1:{self.port}/healthz
  Metrics:   http://127.0.0.1:{self.port}/metrics (Prometheus; loopback needs no key)
  Localnet:  http://127.0.0.1:{self.node_port} (Solana JSON-RPC)
  Logs:      {self.var / 'log'}/
  New API key:  .venv/bin/python manage.py create_api_key --org DEMO
  Ctrl-C stops everything; a part that dies is restarted.
""", flush=True)
            self.web.start(self.env)
            self.supervise()
        return self.stop()

    def supervise(self) -> None:
        while self.stop_signal is None:
            now = time.monotonic()
            for child in self.children:
                if child.restart_at is None and not child.running():
                    ran = now - child.started
                    child.backoff = FIRST_BACKOFF if ran >= STEADY_SECONDS else child.backoff
                    child.signal_group(signal.SIGKILL)  # what it left behind (pool children, workers)
                    log(f"{child.name} (pid {child.proc.pid}) exited with {child.proc.returncode} after {ran:.1f} s; restarting in {child.backoff:.0f} s")
                    child.restart_at = now + child.backoff
                    child.backoff = min(MAX_BACKOFF, child.backoff * 2)
                elif child.restart_at is not None and now >= child.restart_at:
                    child.restarts += 1
                    child.start(self.env)
                    log(f"{child.name} restarted (pid {child.proc.pid}, restart {child.restarts})")
            self._sleep(0.2)

    def stop(self) -> int:
        began = time.monotonic()
        name = signal.Signals(self.stop_signal).name if self.stop_signal else "stop"
        log(f"{name}: stopping")
        # All at once: the worker bounds its own stop (LEDGER_WORKER_STOP_SECONDS), gunicorn
        # its workers' (graceful_timeout); a pump pass cut short by the node leaving ends
        # like any unanswered call, and the next start carries on from the rows.
        for child in self.children:
            child.signal_group(signal.SIGTERM)
        while any(c.group_alive() for c in self.children) and time.monotonic() - began < STOP_SECONDS:
            time.sleep(0.05)
        for child in self.children:
            if child.group_alive():
                log(f"{child.name} did not stop within {STOP_SECONDS:.0f} s; killing it")
                child.signal_group(signal.SIGKILL)
        for child in self.children:
            if child.proc is not None:
                try:
                    child.proc.wait(2)
                except subprocess.TimeoutExpired:
                    pass
        log(f"stopped in {time.monotonic() - began:.1f} s")
        return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(Supervisor().run())
