"""Helpers for the threshold tests: the external player's CLI run as a client would run it
(its own process, without Django), and in-process players speaking the same JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from threshold import dkg
from threshold import messages as M
from threshold import signing as S

ROOT = Path(__file__).resolve().parents[2]
PASSPHRASE = "correct horse battery staple"


def client_env(tmp_path: Path) -> dict:
    """The environment of a client machine: no service settings, and a ``django`` that
    cannot be imported, so a CLI that reached for Django would fail."""
    blocker = tmp_path / "no-django" / "django"
    blocker.mkdir(parents=True, exist_ok=True)
    (blocker / "__init__.py").write_text("raise ImportError('the FROST player must not import Django')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LEDGER_"))}
    inherited = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(blocker.parent), str(ROOT), *inherited])
    env["FROST_PLAYER_PASSPHRASE"] = PASSPHRASE
    return env


class CliError(Exception):
    def __init__(self, returncode: int, error: dict):
        self.returncode, self.error = returncode, error
        super().__init__(f"exit {returncode}: {error}")


class Player:
    """``python -m threshold.player --store STORE ...`` in a subprocess."""

    def __init__(self, store: Path, env: dict):
        self.store, self.env = Path(store), env

    def popen(self, *args, env_extra: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "threshold.player", "--store", str(self.store), *map(str, args)],
                                cwd=self.store.parent, env={**self.env, **(env_extra or {})}, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def __call__(self, *args, stdin: str | None = None, env_extra: dict | None = None):
        proc = self.popen(*args, env_extra=env_extra)
        out, err = proc.communicate(stdin, timeout=60)
        return parse_result(proc.returncode, out, err)


def parse_result(returncode: int, out: str, err: str):
    if returncode != 0:
        try:
            raise CliError(returncode, json.loads(err.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            raise CliError(returncode, {"error": "UNPARSED", "message": err})
    return json.loads(out) if out.strip() else None


def write(path: Path, value) -> Path:
    path.write_text(json.dumps(value))
    return path


class InProcessPlayer:
    """A player held in this process (as a backend player will be), on the same JSON."""

    def __init__(self, identifier: int):
        self.identifier = identifier
        self.state = None
        self.key = None
        self.nonces: dict[str, S.SessionNonces] = {}

    def dkg_round1(self, session_id: str, threshold: int, participants: list[int]) -> dict:
        self.state = dkg.round1(session_id=session_id, identifier=self.identifier, threshold=threshold, participants=participants)
        return M.to_json(self.state.package)

    def dkg_round2(self, round1: list[dict]) -> list[dict]:
        self.state, out = dkg.round2(self.state, [M.from_json(m) for m in round1])
        return [M.to_json(p) for p in out]

    def dkg_finish(self, round2: list[dict]) -> dict:
        self.key = dkg.finish(self.state, [M.from_json(m) for m in round2])
        self.state = None
        return M.to_json(self.key.public)

    def commit(self, session_id: str) -> dict:
        self.nonces[session_id] = S.commit(self.key, session_id)
        return M.to_json(S.SigningCommitment(session_id, self.nonces[session_id].nonces.commitment))

    def sign(self, package: dict) -> dict:
        parsed = M.from_json(package)
        return M.to_json(S.sign(self.key, self.nonces.pop(parsed.session_id), parsed))
