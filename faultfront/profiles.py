"""The named profiles: plain data, one dict each, documented in docs/chain.md "The fault front".

A profile given as a path is a JSON file of the same shape. Every key is optional:

- ``rate_limits``: ``total`` [limit, seconds] over every call; ``methods`` {method: [limit,
  seconds]}; ``each_method`` [limit, seconds] for every method not listed. Rolling windows;
  a request over any budget is answered 429 with Retry-After, whole (a batch included).
- ``lag``: ``slots`` behind the node the reads are answered from; ``methods`` the reads
  that lag (default LAGGED_METHODS).
- ``sends``: shares of sendTransaction ``drop`` (answered with the signature, never
  forwarded) and ``delay`` (answered at once, forwarded ``delay_seconds`` later).
- ``transient``: shares of HTTP requests answered ``http_502`` / ``http_503``, ``hang``
  (``hang_seconds``, then closed unanswered), ``reset`` (TCP RST); share of calls answered
  ``unhealthy`` (-32005, ``slots_behind``).
- ``history``: ``keep_slots``: getTransaction null, getSignaturesForAddress and getBlock
  without what is older.
- ``disabled``: {method: null (-32601 "Method not found") | {"code", "message", "http"}}.
- ``slot_order``: "signature": entries of one slot in getSignaturesForAddress sorted by
  signature, newest-first order of slots kept, ``transactionIndex`` removed.
- ``seed``: the default seed (the command line's --seed wins).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

#: Reads answered from the lagging view (each answers {"context": {"slot"}, "value"}).
LAGGED_METHODS = (
    "getLatestBlockhash", "isBlockhashValid", "getAccountInfo", "getBalance", "getMultipleAccounts", "getProgramAccounts",
    "getTokenAccountBalance", "getTokenAccountsByOwner", "getTokenAccountsByDelegate", "getTokenSupply",
    "getTokenLargestAccounts", "getSignatureStatuses", "getFeeForMessage", "getSupply", "getLargestAccounts",
)
#: Reads that answer a bare slot or height: the lagging view answers it ``slots`` lower.
LAGGED_COUNTERS = ("getSlot", "getBlockHeight")

PROFILES: dict[str, dict] = {
    "passthrough": {
        "description": "No faults: the front forwards everything (a baseline for benches).",
    },
    "rate-limited": {
        "description": "A provider's shared plan: sendTransaction capped at 5 per second, 50 calls per second in all, "
                       "getProgramAccounts at 2 per second.",
        "rate_limits": {"total": [50, 1], "methods": {"sendTransaction": [5, 1], "getProgramAccounts": [2, 1]}},
    },
    "method-budgets": {
        "description": "A provider that budgets each method over rolling 10-second windows (100 calls per method, "
                       "sendTransaction 20), 400 calls in all.",
        "rate_limits": {"total": [400, 10], "each_method": [100, 10], "methods": {"sendTransaction": [20, 10]}},
    },
    "lagging": {
        "description": "A load-balanced pool whose node answering reads is 8 slots behind: stale blockhashes, stale "
                       "reads, -32016 for a minContextSlot it has not reached.",
        "lag": {"slots": 8},
    },
    "lossy-sends": {
        "description": "A send path that loses transactions: a fifth of sends answered and never forwarded, a fifth "
                       "forwarded 3 seconds late.",
        "sends": {"drop": 0.2, "delay": 0.2, "delay_seconds": 3},
    },
    "flaky": {
        "description": "An overloaded endpoint: 5% HTTP 502, 5% HTTP 503, 5% -32005 (12 slots behind), 2% hangs of "
                       "5 seconds, 2% connection resets.",
        "transient": {"http_502": 0.05, "http_503": 0.05, "unhealthy": 0.05, "slots_behind": 12, "hang": 0.02,
                      "hang_seconds": 5, "reset": 0.02},
    },
    "pruned": {
        "description": "A node keeping 150 slots of history: older transactions are null, older signatures missing, "
                       "older blocks cleaned up.",
        "history": {"keep_slots": 150},
    },
    "restricted": {
        "description": "A plan without the heavy methods: getProgramAccounts, getLargestAccounts and getSupply answer "
                       "-32601 Method not found; getTokenLargestAccounts answers a provider-style refusal (HTTP 403).",
        "disabled": {"getProgramAccounts": None, "getLargestAccounts": None, "getSupply": None,
                     "getTokenLargestAccounts": {"code": -32000, "message": "Method getTokenLargestAccounts is not available on your plan", "http": 403}},
    },
    "old-blockstore": {
        "description": "A node before block-order signatures: entries of one slot in getSignaturesForAddress ordered "
                       "by signature, without transactionIndex.",
        "slot_order": "signature",
    },
    "staging-mix": {
        "description": "Everything at once, mildly: for rehearsals in staging.",
        "rate_limits": {"total": [200, 1], "methods": {"sendTransaction": [10, 1]}},
        "lag": {"slots": 4},
        "sends": {"drop": 0.05, "delay": 0.05, "delay_seconds": 2},
        "transient": {"http_502": 0.01, "http_503": 0.01, "unhealthy": 0.01, "slots_behind": 6, "hang": 0.005,
                      "hang_seconds": 5, "reset": 0.005},
        "history": {"keep_slots": 5000},
        "slot_order": "signature",
    },
}

MAX_HANG_SECONDS = 30.0
MAX_DELAY_SECONDS = 60.0
_KEYS = {"description", "seed", "rate_limits", "lag", "sends", "transient", "history", "disabled", "slot_order"}


def load_profile(name_or_path: str) -> dict:
    """A named profile, or a JSON file of the same shape; checked, with bounds applied."""
    if name_or_path in PROFILES:
        profile = copy.deepcopy(PROFILES[name_or_path])
        profile["name"] = name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise ValueError(f"no profile {name_or_path!r}: one of {', '.join(PROFILES)} or a JSON file")
        profile = json.loads(path.read_text())
        profile.setdefault("name", path.stem)
    return check_profile(profile)


def check_profile(profile: dict) -> dict:
    unknown = set(profile) - _KEYS - {"name"}
    if unknown:
        raise ValueError(f"unknown profile keys: {sorted(unknown)}")
    sends = profile.get("sends", {})
    if sends.get("drop", 0) + sends.get("delay", 0) > 1:
        raise ValueError("sends: drop + delay over 1")
    sends["delay_seconds"] = min(float(sends.get("delay_seconds", 2)), MAX_DELAY_SECONDS)
    transient = profile.get("transient", {})
    if sum(transient.get(k, 0) for k in ("http_502", "http_503", "hang", "reset")) > 1:
        raise ValueError("transient: shares over 1")
    # A hang is bounded, so the front (and a test) always ends.
    transient["hang_seconds"] = min(float(transient.get("hang_seconds", 5)), MAX_HANG_SECONDS)
    if profile.get("slot_order") not in (None, "signature"):
        raise ValueError("slot_order: only 'signature'")
    return profile
