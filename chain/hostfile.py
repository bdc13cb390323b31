"""State the processes of one host share without Redis: a small JSON file under
LEDGER_VAR_DIR, changed under an exclusive file lock and replaced atomically (a torn or
missing file reads as empty). Used by the RPC budget (``chain.budget.HostBudget``) and the
read floor (``chain.floor``)."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def read(path: Path) -> dict:
    try:
        return json.loads(path.read_text() or "{}")
    except (FileNotFoundError, ValueError):
        return {}


def update(path: Path, act: Callable[[dict], tuple[dict, T]]) -> T:
    """``act(state)`` → (the new state, an answer), under the host's lock; the answer."""
    with open(path.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state, answer = act(read(path))
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(state))
        os.replace(temporary, path)
        return answer
