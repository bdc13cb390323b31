"""The read floor: the newest slot at which the service knows it changed a cluster's state.

A provider behind a load balancer answers reads from nodes some slots apart, so a request
that reads a balance or an account its tenant's last operation changed could be answered
from before that change. The pump notes the slot of every confirmation whose effects it
applied (``note``); every account, balance and blockhash read of ``ChainRpc`` that names no
``minContextSlot`` of its own then carries the floor (``floor``), so no read answers from
before a write the service has applied (docs/chain.md, "What the service does for each
provider behaviour"). A node that has not reached it answers -32016; the transport tries the
next URL and waits for it, then 503 CHAIN_BEHIND.

The floor is kept per cluster *and* its URLs (a local node on a new data directory at another
port starts at slot 0 and must not inherit another node's floor) and lives
LEDGER_RPC_READ_FLOOR_SECONDS (30 s): the lag it guards against is a few slots, and a node
reset under the same URL recovers within that time rather than answering 503 for ever. With
Redis it is shared by every process (one key per cluster, raised only); without Redis it is a
file under LEDGER_VAR_DIR that the processes of the host share. A process reads it at most
every LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS (0.5 s) and always knows its own latest note.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time

from django.conf import settings

from . import hostfile

logger = logging.getLogger("ledger.chain")

_lock = threading.Lock()
_read: dict[str, tuple[float, int | None]] = {}  # key -> (when read, floor)
_own: dict[str, tuple[float, int]] = {}  # key -> (when noted, slot): this process's notes

# KEYS[1]: the floor; ARGV: slot, ttl. Raised only; only a note that reaches it renews its life.
_RAISE = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = tonumber(ARGV[1])
if slot >= current then
  redis.call('SET', KEYS[1], slot, 'EX', tonumber(ARGV[2]))
  return slot
end
return current
"""


def _key(cluster: str, urls: tuple[str, ...]) -> str:
    return f"{cluster}:{hashlib.sha256('|'.join(urls).encode()).hexdigest()[:16]}"


def _enabled() -> bool:
    return settings.LEDGER_RPC_READ_FLOOR_SECONDS > 0


def _redis():
    from chain.budget import budget, RedisBudget

    store = budget().store
    return store if isinstance(store, RedisBudget) else None


_scripts: dict[int, object] = {}


def _raise_script(store):
    """The raise script registered once per Redis client (EVALSHA after the first call)."""
    script = _scripts.get(id(store.client))
    if script is None:
        script = _scripts[id(store.client)] = store.client.register_script(_RAISE)
    return script


def note(cluster: str, urls: tuple[str, ...], slot: int | None) -> None:
    """The service applied a write of ``cluster`` at ``slot``: reads from now on carry it."""
    if slot is None or not _enabled():
        return
    key, ttl = _key(cluster, urls), settings.LEDGER_RPC_READ_FLOOR_SECONDS
    with _lock:
        seen, now = _own.get(key), time.monotonic()
        if seen is None or now - seen[0] >= ttl:
            _own[key] = (now, slot)  # an expired floor never comes back (a node reset under its URL)
        elif slot >= seen[1]:
            _own[key] = (now, slot)
    try:
        store = _redis()
        if store is not None:
            _raise_script(store)(keys=[store._key(f"floor:{key}")], args=[int(slot), int(ttl)])
        else:
            _file_raise(key, int(slot), ttl)
    except Exception as exc:  # noqa: BLE001 - a floor not shared costs staleness, never a write
        logger.warning("the read floor of %s was not shared (%s); this process keeps its own", cluster, type(exc).__name__)


def floor(cluster: str, urls: tuple[str, ...]) -> int | None:
    """The slot a read of ``cluster`` must reach (None: no recent write known)."""
    if not _enabled():
        return None
    key, now = _key(cluster, urls), time.monotonic()
    ttl = settings.LEDGER_RPC_READ_FLOOR_SECONDS
    seen = _read.get(key)
    if seen is None or now - seen[0] >= settings.LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS:
        try:
            store = _redis()
            if store is not None:
                value = store.client.get(store._key(f"floor:{key}"))
                shared = int(value) if value is not None else None
            else:
                shared = _file_read(key, ttl)
        except Exception:  # noqa: BLE001 - no shared floor: this process's own notes only
            shared = None
        with _lock:
            # A refresh begun later by another thread wins: a slower one never puts back
            # the older answer it fetched.
            current = _read.get(key)
            if current is None or current[0] <= now:
                _read[key] = (now, shared)
            seen = _read[key]
    own = _own.get(key)
    mine = own[1] if own is not None and now - own[0] < ttl else None
    values = [v for v in (seen[1], mine) if v is not None]
    return max(values) if values else None


def forget() -> None:
    """Drop what this process knows (tests; a node reset under the same URL)."""
    with _lock:
        _read.clear()
        _own.clear()


def _path():
    return settings.VAR_DIR / "read-floor.json"


def _file_raise(key: str, slot: int, ttl: float) -> None:
    now = time.time()

    def step(state: dict):
        state = {k: v for k, v in state.items() if v[1] > now}
        if slot >= state.get(key, (0, 0))[0]:  # a lower note neither lowers the floor nor keeps an old one alive
            state[key] = (slot, now + ttl)
        return state, None

    hostfile.update(_path(), step)


def _file_read(key: str, ttl: float) -> int | None:
    entry = hostfile.read(_path()).get(key)
    return int(entry[0]) if entry is not None and entry[1] > time.time() else None
