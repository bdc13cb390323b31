"""What the front saw, for a campaign to check (GET /stats): calls per method, refusals per
budget, and every sendTransaction's bytes per signature.

``calls``: calls per method that passed the rate limits (judged, then forwarded or faulted);
``refused``: calls per budget answered 429; ``peak``: the most calls any budget held in one
window (never above its limit: the front refuses first). ``sends``: signatures seen,
``signatures_with_two_bytes``: signatures sent with different wire bytes (the service must
resend the very same bytes: docs/style.md, "Intent before effect"), ``first_sent``: signature → the epoch
wall time of its first send that passed the limits (for a send-rate figure).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter

MAX_SIGNATURES = 200_000  # a campaign's worth; past it new signatures are counted, not kept


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter = Counter()
        self.refused: Counter = Counter()
        self.digests: dict[str, set] = {}
        self.first_sent: dict[str, float] = {}
        self.untracked = 0

    def refusal(self, budget: str, methods: list) -> None:
        with self._lock:
            self.refused[budget] += len(methods) if budget == "total" else sum(1 for m in methods if budget == f"method:{m}")

    def admitted(self, calls: list, methods: list, signature_of) -> None:
        now = time.time()
        with self._lock:
            self.calls.update(m for m in methods if m)
            for call, method in zip(calls, methods):
                if method != "sendTransaction":
                    continue
                params = call.get("params")
                signature = signature_of(params)
                if signature is None:
                    continue
                digest = hashlib.blake2b(str(params[0]).encode(), digest_size=16).hexdigest()
                if signature in self.digests:
                    self.digests[signature].add(digest)
                elif len(self.digests) < MAX_SIGNATURES:
                    self.digests[signature] = {digest}
                    self.first_sent[signature] = now
                else:
                    self.untracked += 1

    def as_dict(self, peak: dict) -> dict:
        with self._lock:
            return {"calls": dict(self.calls), "refused": dict(self.refused), "peak": dict(peak), "sends": len(self.digests),
                    "untracked_sends": self.untracked,
                    "signatures_with_two_bytes": sorted(s for s, d in self.digests.items() if len(d) > 1),
                    "first_sent": dict(self.first_sent)}
