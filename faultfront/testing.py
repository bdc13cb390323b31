"""Start a fault front as a subprocess (tests, benches): ``FaultFrontProcess(upstream, profile, seed)``.

``profile`` is a name of ``profiles.PROFILES``, a path, or a dict (written to a JSON file
beside the log), so a test can stretch a named profile's windows without a new name.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FaultFrontProcess:
    def __init__(self, upstream: str, profile: str | dict = "passthrough", seed: int = 0, *, port: int | None = None,
                 work_dir: Path | None = None, extra_args: tuple[str, ...] = ()):
        self.upstream = upstream
        self.seed = seed
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="faultfront-"))
        self.log_path = self.work_dir / f"faultfront-{self.port}.log"
        if isinstance(profile, dict):
            path = self.work_dir / f"profile-{self.port}.json"
            path.write_text(json.dumps(profile))
            profile = str(path)
        self.profile = profile
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 15.0) -> "FaultFrontProcess":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "faultfront", "--upstream", self.upstream, "--profile", self.profile,
                 "--seed", str(self.seed), "--port", str(self.port), *self.extra_args],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"faultfront exited with {self.proc.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"faultfront did not answer within {timeout}s; see {self.log_path}")

    def faults(self) -> list[dict]:
        """The decisions the front took so far (GET /faults)."""
        with urllib.request.urlopen(self.url + "/faults", timeout=5) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict:
        """Calls per method, refusals per budget, sends per signature (GET /stats, faultfront/stats.py)."""
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as resp:
            return json.loads(resp.read())

    def stop(self, timeout: float = 10.0) -> float:
        """SIGTERM; the seconds it took to exit (SIGKILL after ``timeout``)."""
        if not self.proc or self.proc.poll() is not None:
            return 0.0
        started = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        return time.monotonic() - started

    def __enter__(self) -> "FaultFrontProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
