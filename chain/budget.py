"""How many JSON-RPC calls a cluster may be sent: a token bucket per (cluster, method) and
per cluster in total, and the provider's "retry after" (docs/chain.md, "What the service
does for each provider behaviour"; docs/capacity.md, "RPC budget").

``LEDGER_RPC_BUDGETS`` names the limits, comma separated; ``CLUSTER.*`` is the cluster's
total over every method. Two kinds:

- ``CLUSTER.method=N/s`` (or ``N/min``): a rate, a token bucket holding one second's worth
  (at least 1). It can send its burst plus rate x W in any window of W seconds.
- ``CLUSTER.method=N/Ws`` (a number of seconds before the ``s``: ``50/1s``, ``100/10s``): a
  rolling window, as providers count one: at most N calls in any W seconds, whole batches
  at once. The service's window is LEDGER_RPC_WINDOW_MARGIN_SECONDS longer than W, for the
  time between taking a unit and the call reaching the provider, so it uses
  W / (W + margin) of the provider's budget and never goes over it.

    LEDGER_RPC_BUDGETS="CHAIN_DEVNET.sendTransaction=50/1s,CHAIN_DEVNET.*=1000/10s"

A call of method m costs one unit of m's limit and one of the total (a JSON-RPC batch of
k calls costs k of each). A cluster without limits has no budget (the local node's
default): nothing is counted, only a provider's 429 is remembered, in this process.

With ``REDIS_URL`` the buckets and the back-off live in Redis, so every web and worker
process of the deployment shares them: one Lua script checks the back-off and takes from
every bucket atomically (all or nothing). Without Redis (the embedded default, one host)
they live in a file under LEDGER_VAR_DIR that every process of the host takes from under
a file lock (HostBudget). A Redis that does not answer does not stop the chain: the process
falls back to its own buckets and logs it.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger("ledger.chain")

TOTAL = "*"
_ENTRY = re.compile(r"^\s*([A-Z0-9_]+)\.([A-Za-z]{1,40}|\*)\s*=\s*(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)?\s*(s|min)\s*$")


@dataclass(frozen=True)
class Limit:
    rate: float  # units per second
    burst: float  # the bucket's size: one second's worth (at least 1); a window's N
    window: float = 0.0  # a rolling window's seconds, margin included (0: a token bucket)


def _window_limit(item: str, number: str, seconds: str, unit: str) -> Limit:
    count, window = float(number), float(seconds) * (60.0 if unit == "min" else 1.0)
    if count != int(count) or count < 1 or window <= 0:
        raise ImproperlyConfigured(f"LEDGER_RPC_BUDGETS entry {item!r}: a window is a whole number of calls (at least 1) per a number of seconds above 0.")
    window += max(0.0, float(getattr(settings, "LEDGER_RPC_WINDOW_MARGIN_SECONDS", 0.05)))
    return Limit(count / window, count, window)


def parse_budgets(raw: str) -> dict[str, dict[str, Limit]]:
    """``LEDGER_RPC_BUDGETS`` → cluster → method (or ``*``) → Limit."""
    out: dict[str, dict[str, Limit]] = {}
    for item in (part for part in raw.split(",") if part.strip()):
        found = _ENTRY.match(item)
        if found is None:
            raise ImproperlyConfigured(f"LEDGER_RPC_BUDGETS entry {item!r}: expected CLUSTER.method=N/s, N/min or N/10s (a rolling window), or CLUSTER.*=….")
        cluster, method, number, seconds, unit = found.groups()
        if seconds is not None:
            out.setdefault(cluster, {})[method] = _window_limit(item, number, seconds, unit)
            continue
        rate = float(number) / (60.0 if unit == "min" else 1.0)
        if rate <= 0:
            raise ImproperlyConfigured(f"LEDGER_RPC_BUDGETS entry {item!r}: the rate must be above 0.")
        out.setdefault(cluster, {})[method] = Limit(rate, max(1.0, rate))
    return out


@dataclass(frozen=True)
class Grant:
    """What a take got: ``units`` (0 when refused) and, when refused, how long until the
    smallest acceptable take would fit (``wait`` seconds) and whether the provider's
    back-off is the reason (``backed_off``)."""

    units: int
    wait: float = 0.0
    backed_off: bool = False


class LocalBudget:
    """The buckets of this process (the fallback when Redis is down, and the counting
    HostBudget keeps in a file). ``clock`` is injectable so tests count, never sleep."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self.clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key → (tokens, at)
        self._logs: dict[str, deque] = {}  # a window's key → the times of its calls
        self._until: dict[str, float] = {}  # back-off key → until

    def take(self, keys: list[tuple[str, Limit]], backoff_keys: list[str], most: int, least: int) -> Grant:
        with self._lock:
            now = self.clock()
            until = max((self._until.get(k, 0.0) for k in backoff_keys), default=0.0)
            if until > now:
                return Grant(0, until - now, backed_off=True)
            levels = [self._level(key, limit, now) for key, limit in keys]
            granted = min([most, *(math.floor(level) for level in levels)]) if keys else most
            if granted < least:
                wait = max(self._wait(key, limit, level, least, now) for level, (key, limit) in zip(levels, keys))
                return Grant(0, max(wait, 0.001))
            for (key, limit), level in zip(keys, levels):
                if limit.window:
                    self._logs[key].extend([now] * granted)
                else:
                    self._buckets[key] = (level - granted, now)
            return Grant(granted)

    def _level(self, key: str, limit: Limit, now: float) -> float:
        """The units ``key`` has now: a bucket's tokens, or a window's room."""
        if not limit.window:
            tokens, at = self._buckets.get(key, (limit.burst, now))
            return min(limit.burst, tokens + (now - at) * limit.rate)
        log = self._logs.setdefault(key, deque())
        while log and log[0] <= now - limit.window:
            log.popleft()
        return limit.burst - len(log)

    def _wait(self, key: str, limit: Limit, level: float, least: int, now: float) -> float:
        """Seconds until ``key`` has ``least`` units."""
        if level >= least:
            return 0.0
        if not limit.window:
            return (least - level) / limit.rate
        if least > limit.burst:
            return limit.window
        # The oldest calls that must age out first.
        return self._logs[key][int(least - level) - 1] + limit.window - now

    def back_off(self, key: str, seconds: float) -> None:
        with self._lock:
            self._until[key] = max(self._until.get(key, 0.0), self.clock() + seconds)


class HostBudget:
    """The budget of every process of this host (the embedded default, no Redis: its web
    processes and its worker): LocalBudget's counting, its state in one JSON file under
    ``LEDGER_VAR_DIR`` read and written under an exclusive file lock (a take costs a lock,
    a read and a write of a few kB; only clusters with limits pay it)."""

    def __init__(self, path, clock: Callable[[], float] = time.time):
        from pathlib import Path

        self.path, self.clock = Path(path), clock
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _with_state(self, act):
        from . import hostfile

        def step(state: dict):
            counted = LocalBudget(self.clock)
            counted._buckets = {k: tuple(v) for k, v in state.get("buckets", {}).items()}
            counted._logs = {k: deque(v) for k, v in state.get("logs", {}).items()}
            counted._until = dict(state.get("until", {}))
            answer = act(counted)
            now = self.clock()
            return {"buckets": counted._buckets, "logs": {k: list(v) for k, v in counted._logs.items() if v},
                    "until": {k: u for k, u in counted._until.items() if u > now}}, answer

        return hostfile.update(self.path, step)

    def take(self, keys: list[tuple[str, Limit]], backoff_keys: list[str], most: int, least: int) -> Grant:
        return self._with_state(lambda counted: counted.take(keys, backoff_keys, most, least))

    def back_off(self, key: str, seconds: float) -> None:
        self._with_state(lambda counted: counted.back_off(key, seconds))


# KEYS: back-off keys (n_backoff of them), then one key per limit.
# ARGV: now (seconds, "" → Redis TIME), most, least, n_backoff, then rate, burst, window per
# limit (window 0: a bucket, a hash {t: tokens, at: seconds}; else a rolling window, a
# sorted set of its calls scored by time, each member unique: its time and its rank).
# Returns {granted, wait_ms, backed_off}.
_TAKE = """
local now = tonumber(ARGV[1])
if not now then local t = redis.call('TIME'); now = tonumber(t[1]) + tonumber(t[2]) / 1e6 end
local most, least, nb = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, nb do
  local untl = tonumber(redis.call('GET', KEYS[i]) or '0')
  if untl > now then return {0, math.ceil((untl - now) * 1000), 1} end
end
local levels, granted = {}, most
for i = nb + 1, #KEYS do
  local j = 5 + (i - nb - 1) * 3
  local rate, burst, window = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  if window > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
    levels[i] = burst - redis.call('ZCARD', KEYS[i])
  else
    local b = redis.call('HMGET', KEYS[i], 't', 'at')
    local tokens, at = tonumber(b[1]) or burst, tonumber(b[2]) or now
    levels[i] = math.min(burst, tokens + math.max(0, now - at) * rate)
  end
  granted = math.min(granted, math.floor(levels[i]))
end
if granted < least then
  local wait = 0
  for i = nb + 1, #KEYS do
    local j = 5 + (i - nb - 1) * 3
    local rate, burst, window = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    if levels[i] < least then
      if window <= 0 then
        wait = math.max(wait, (least - levels[i]) / rate)
      elseif least > burst then
        wait = math.max(wait, window)
      else
        local oldest = redis.call('ZRANGE', KEYS[i], least - levels[i] - 1, least - levels[i] - 1, 'WITHSCORES')
        wait = math.max(wait, tonumber(oldest[2]) + window - now)
      end
    end
  end
  return {0, math.max(1, math.ceil(wait * 1000)), 0}
end
for i = nb + 1, #KEYS do
  local j = 5 + (i - nb - 1) * 3
  local rate, burst, window = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  if window > 0 then
    local used = burst - levels[i]
    for first = 1, granted, 200 do
      local args = {}
      for n = first, math.min(granted, first + 199) do
        args[#args + 1] = now
        args[#args + 1] = string.format('%.6f#%d', now, used + n)
      end
      redis.call('ZADD', KEYS[i], unpack(args))
    end
    redis.call('EXPIRE', KEYS[i], math.ceil(window) + 60)
  else
    redis.call('HSET', KEYS[i], 't', tostring(levels[i] - granted), 'at', tostring(now))
    redis.call('EXPIRE', KEYS[i], math.ceil(burst / rate) + 60)
  end
end
return {granted, 0, 0}
"""


class RedisBudget:
    """The buckets and back-offs of the whole deployment, in Redis (one script, atomic)."""

    def __init__(self, url: str, prefix: str, clock: Callable[[], float] | None = None):
        import redis

        self.client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.prefix = prefix
        self.clock = clock  # None: Redis's own clock (one clock for every host)
        self._script = self.client.register_script(_TAKE)
        self.fallback = LocalBudget(clock or time.time)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:rpcbudget:{key}"

    def take(self, keys: list[tuple[str, Limit]], backoff_keys: list[str], most: int, least: int) -> Grant:
        import redis

        args: list = ["" if self.clock is None else repr(self.clock()), most, least, len(backoff_keys)]
        for _, limit in keys:
            args += [repr(limit.rate), repr(limit.burst), repr(limit.window)]
        try:
            granted, wait_ms, backed_off = self._script(keys=[self._key(k) for k in backoff_keys] + [self._key(k) for k, _ in keys], args=args)
        except redis.RedisError as exc:
            logger.warning("the shared RPC budget did not answer (%s); counting in this process", type(exc).__name__)
            return self.fallback.take(keys, backoff_keys, most, least)
        return Grant(int(granted), int(wait_ms) / 1000.0, bool(backed_off))

    def back_off(self, key: str, seconds: float) -> None:
        import redis

        self.fallback.back_off(key, seconds)
        try:
            now = self.clock() if self.clock is not None else _redis_now(self.client)
            until = now + seconds
            # Only ever later: a shorter Retry-After seen by another process does not cut it.
            current = float(self.client.get(self._key(key)) or 0)
            if until > current:
                self.client.set(self._key(key), repr(until), px=max(1, int(seconds * 1000)))
        except redis.RedisError as exc:
            logger.warning("the shared RPC back-off was not stored (%s); this process backs off alone", type(exc).__name__)


def _redis_now(client) -> float:
    seconds, micros = client.time()
    return seconds + micros / 1e6


class Budget:
    """The budget of every cluster of this process: limits from settings, a store."""

    def __init__(self, limits: dict[str, dict[str, Limit]], store):
        self.limits = limits
        self.store = store
        self.local = LocalBudget(getattr(store, "clock", None) or time.time)

    def _store(self, cluster: str):
        # The local node without a budget never rate-limits: no shared store on its hot path.
        return self.local if cluster == "CHAIN_LOCALNET" and not self.limits.get(cluster) else self.store

    def take(self, cluster: str, method: str, *, most: int, least: int | None = None) -> Grant:
        """Take ``least`` (default: ``most``) to ``most`` units of ``method`` on
        ``cluster``, or nothing and how long to wait."""
        least = most if least is None else least
        limits = self.limits.get(cluster, {})
        # A window's key differs from a bucket's: a limit changed from one kind to the other
        # starts afresh rather than meeting a Redis value of the other type.
        keys = [(f"{cluster}:{name}" + (":w" if limits[name].window else ""), limits[name]) for name in (method, TOTAL) if name in limits]
        return self._store(cluster).take(keys, [f"backoff:{cluster}:{method}"], most, least)

    def largest(self, cluster: str, method: str) -> int | None:
        """The most units of ``method`` one take can ever get (the smallest bucket it
        draws from), None when unlimited: a JSON-RPC batch is never larger."""
        limits = self.limits.get(cluster, {})
        sizes = [int(limits[name].burst) for name in (method, TOTAL) if name in limits]
        return min(sizes) if sizes else None

    def back_off(self, cluster: str, method: str, seconds: float) -> None:
        """The provider said Retry-After: no call of ``method`` for ``seconds``, anywhere."""
        self._store(cluster).back_off(f"backoff:{cluster}:{method}", seconds)


_budget: Budget | None = None
_budget_lock = threading.Lock()


def budget() -> Budget:
    """The process's Budget (built from settings once; ``reset()`` after changing them)."""
    global _budget
    if _budget is None:
        with _budget_lock:
            if _budget is None:
                limits = parse_budgets(settings.LEDGER_RPC_BUDGETS)
                redis_url = getattr(settings, "REDIS_URL", "")
                store = RedisBudget(redis_url, settings.LEDGER_CACHE_PREFIX) if redis_url else HostBudget(settings.VAR_DIR / "rpc-budget.json")
                _budget = Budget(limits, store)
    return _budget


def reset(value: Budget | None = None) -> None:
    global _budget
    _budget = value
