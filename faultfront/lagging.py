"""The lagging view: reads answered as a node some slots behind would answer them.

The cheapest faithful model with one upstream: remember what the node answered, and answer
from memory. Every read of a lagged method is forwarded (the front learns the node's slot
S from the answer's context), remembered under its method and parameters (minContextSlot
left out), one answer per slot, as the state of slot S - 1: the node answers from its open
slot S, which may still execute writes after the answer (a real node's slot-S answer has
all of slot S), so only S - 1 is surely whole in it; the client gets the newest remembered answer whose slot is
at most S - lag, with that slot as its context. So a blockhash comes from N slots ago, a
balance read again after a transfer still shows the old amount, and a minContextSlot above
S - lag is refused with -32016, all as a pool member behind the others answers. When the
front has no answer that old for these parameters (the first reads), it answers the oldest
value it remembers (the fresh one, on a first read) with the context slot of the lagging
view, S - lag: a lagging node might have answered differently, the front cannot know,
and it never claims a slot newer than its view.
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict

MAX_KEYS = 4096  # reads remembered (least recently used forgotten first)
SLACK_SLOTS = 64  # slots remembered beyond the lag, per read


def read_key(method: str, params) -> str:
    return method + json.dumps(strip_min_context_slot(params), sort_keys=True, separators=(",", ":"))


def strip_min_context_slot(params):
    """The params without minContextSlot (the front checks it against its own view)."""
    if isinstance(params, list):
        return [({k: v for k, v in p.items() if k != "minContextSlot"} if isinstance(p, dict) else p) for p in params]
    return params


def min_context_slot(params) -> int | None:
    if isinstance(params, list):
        for p in params:
            if isinstance(p, dict) and isinstance(p.get("minContextSlot"), int):
                return p["minContextSlot"]
    return None


class LaggingView:
    def __init__(self, slots: int):
        self.slots = slots
        self._memory: OrderedDict[str, OrderedDict[int, dict]] = OrderedDict()
        self._lock = threading.Lock()

    def answer(self, key: str, result: dict) -> tuple[dict, int]:
        """(the answer of the lagging view, its slot) for the node's fresh ``result``."""
        slot = result["context"]["slot"]
        view = max(0, slot - self.slots)
        # The node answers from its open slot: what slot `slot` executed so far, not yet all
        # of it. A real node's slot-S answer has all of slot S (the bank is frozen), so this
        # one is remembered as the state of S - 1, the newest slot it surely covers whole;
        # remembered as S it would answer a minContextSlot of S (a write of S) from before
        # that write, which no node does.
        covered = max(0, slot - 1)
        with self._lock:
            seen = self._memory.setdefault(key, OrderedDict())
            self._memory.move_to_end(key)
            if covered not in seen:
                seen[covered] = copy.deepcopy(result)
            while len(seen) > self.slots + SLACK_SLOTS:
                seen.popitem(last=False)
            while len(self._memory) > MAX_KEYS:
                self._memory.popitem(last=False)
            old = [s for s in seen if s <= view]
            at = max(old) if old else view
            answer = copy.deepcopy(seen[max(old)] if old else seen[min(seen)])
        answer["context"]["slot"] = at
        return answer, at
