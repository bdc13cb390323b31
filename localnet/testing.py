"""Start a local node as a subprocess (tests, benchmarks): start, kill -9, restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_port_pair() -> int:
    """A port P with P + 1 free too: the node serves PubSub on RPC port + 1."""
    for _ in range(100):
        port = free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


def rpc_call(url: str, method: str, params=None, timeout: float = 2.0):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


class ChildProcess:
    """A subprocess in its own session, stoppable gently or killed as in a crash."""

    proc: subprocess.Popen | None = None

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


class LocalnetProcess(ChildProcess):
    def __init__(self, data_dir: Path, port: int | None = None, log_path: Path | None = None, extra_args: tuple[str, ...] = ()):
        self.data_dir = Path(data_dir)
        self.port = port or free_port_pair()
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port + 1}"
        self.extra_args = tuple(extra_args)
        self.log_path = log_path or self.data_dir.parent / f"localnet-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "LocalnetProcess":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "localnet", "--port", str(self.port), "--data-dir", str(self.data_dir), *self.extra_args],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"localnet exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if rpc_call(self.url, "getHealth", timeout=0.5).get("result") == "ok":
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"localnet did not answer within {timeout}s; see {self.log_path}")

    def restart(self) -> "LocalnetProcess":
        self.stop()
        return self.start()


def start_localnet(data_dir: Path, port: int | None = None) -> LocalnetProcess:
    return LocalnetProcess(data_dir, port).start()
