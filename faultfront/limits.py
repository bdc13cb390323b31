"""Rolling-window rate limits, as providers count them: each call of a batch counts.

A budget is (limit, window_seconds): at most ``limit`` calls in any window ending now. A
request that would go over any of its budgets is refused whole (HTTP 429) and counts for
nothing; ``Retry-After`` is the whole seconds until enough of the window's calls age out.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Callable


class RollingLimits:
    def __init__(self, budgets: dict[str, tuple[int, float]], default: tuple[int, float] | None = None, clock: Callable[[], float] = time.monotonic):
        """``budgets``: name → (limit, window); ``default``: the budget of any name not
        listed (a provider that budgets every method alike), or None (unlimited)."""
        self.budgets = dict(budgets)
        self.default = default
        self.clock = clock
        self._calls: dict[str, deque] = {}
        self._lock = threading.Lock()
        self.peak: dict[str, int] = {}  # the most calls a budget held in one window (GET /stats)

    def _budget(self, name: str) -> tuple[int, float] | None:
        return self.budgets.get(name, None if name == "total" else self.default)

    def admit(self, counts: dict[str, int]) -> tuple[str, int] | None:
        """Record ``counts`` (budget name → calls) if every budget has room; else
        (the budget that refused, Retry-After seconds) and nothing recorded."""
        now = self.clock()
        with self._lock:
            for name, count in counts.items():
                budget = self._budget(name)
                if budget is None or not count:
                    continue
                limit, window = budget
                calls = self._calls.setdefault(name, deque())
                while calls and calls[0] <= now - window:
                    calls.popleft()
                if len(calls) + count > limit:
                    # The oldest calls that must age out before ``count`` more fit.
                    need = len(calls) + count - limit
                    if count > limit:
                        return name, math.ceil(window)
                    wait = calls[need - 1] + window - now
                    return name, max(1, math.ceil(wait))
            for name, count in counts.items():
                if self._budget(name) is not None:
                    self._calls[name].extend([now] * count)
                    self.peak[name] = max(self.peak.get(name, 0), len(self._calls[name]))
        return None
