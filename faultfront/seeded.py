"""Seeded choices: the k-th judgement of a stream is a function of (seed, stream, key, k) only.

Each fault draws from its own stream (``send``, ``unhealthy``, ``http``...) and each method
counts its own requests, so adding a fault to a profile does not move the others, and two
methods interleaved differently by threads still get the same choices per method: the same
sequence of requests gets the same faults.
"""

from __future__ import annotations

import hashlib
import threading
from collections import defaultdict


def draw(seed: int, stream: str, key: str, k: int) -> float:
    """A uniform number in [0, 1) for the k-th judgement of ``key`` in ``stream``."""
    digest = hashlib.blake2b(f"{seed}|{stream}|{key}|{k}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


class Counters:
    """Per-key request counters (thread-safe): the k of ``draw``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[str, int] = defaultdict(int)

    def take(self, key: str) -> int:
        with self._lock:
            k = self._next[key]
            self._next[key] = k + 1
            return k
