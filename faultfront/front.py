"""The front's judgement of one HTTP request: what to answer, what to forward, what to break.

Order of judgement (docs/chain.md "The fault front"):
1. rate limits, over the whole request (every call of a batch counts): 429 + Retry-After;
2. transport faults, one draw per HTTP request: reset, hang, 502, 503;
3. each call on its own: disabled → its error; -32005; sendTransaction dropped (the
   signature answered, the bytes forgotten) or delayed (answered, forwarded later);
4. the rest forwarded in one request (a batch stays a batch), and the answers shaped:
   the lagging view and minContextSlot, pruned history, the within-slot order.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter, deque
from dataclasses import dataclass, field

from .b58 import b58decode, b58encode
from .lagging import LaggingView, min_context_slot, read_key, strip_min_context_slot
from .limits import RollingLimits
from .profiles import LAGGED_COUNTERS, LAGGED_METHODS
from .seeded import Counters, draw
from .stats import Stats
from .upstream import Upstream

LOG_SIZE = 10_000  # decisions kept for GET /faults


@dataclass
class Reply:
    """``kind``: "answer" (status, headers, body), "hang" (seconds, then closed) or "reset"."""

    kind: str
    status: int = 200
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    seconds: float = 0.0


def _error(rid, code: int, message: str, data=None) -> dict:
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "error": err, "id": rid}


def _json(payload, status: int = 200, headers: dict | None = None) -> Reply:
    return Reply("answer", status, json.dumps(payload, separators=(",", ":")).encode(), headers or {})


def first_signature(params) -> str | None:
    """The base-58 first signature of a sendTransaction's wire bytes (what a node answers)."""
    if not isinstance(params, list) or not params or not isinstance(params[0], str):
        return None
    config = params[1] if len(params) > 1 and isinstance(params[1], dict) else {}
    try:
        raw = base64.b64decode(params[0], validate=True) if config.get("encoding") == "base64" else b58decode(params[0])
    except (ValueError, KeyError):
        return None
    count, shift, offset = 0, 0, 0
    while offset < len(raw):  # compact-u16 signature count
        byte = raw[offset]
        count |= (byte & 0x7F) << shift
        offset += 1
        if not byte & 0x80:
            break
        shift += 7
    if count < 1 or len(raw) < offset + 64:
        return None
    return b58encode(raw[offset:offset + 64])


class Front:
    def __init__(self, upstream: Upstream, profile: dict, seed: int, clock=None):
        self.upstream = upstream
        self.profile = profile
        self.seed = seed
        self.counters = Counters()
        limits = profile.get("rate_limits", {})
        budgets = {f"method:{m}": tuple(b) for m, b in limits.get("methods", {}).items()}
        if "total" in limits:
            budgets["total"] = tuple(limits["total"])
        each = tuple(limits["each_method"]) if "each_method" in limits else None
        self.limits = RollingLimits(budgets, each, **({"clock": clock} if clock else {})) if budgets or each else None
        lag = profile.get("lag", {})
        self.lag = LaggingView(int(lag["slots"])) if lag.get("slots") else None
        self.lagged = set(lag.get("methods", LAGGED_METHODS))
        self.sends = profile.get("sends", {})
        self.transient = profile.get("transient", {})
        self.keep_slots = profile.get("history", {}).get("keep_slots")
        self.disabled = profile.get("disabled", {})
        self.slot_order = profile.get("slot_order")
        self.log: deque = deque(maxlen=LOG_SIZE)
        self._log_lock = threading.Lock()
        self.delayed: list[threading.Timer] = []
        self.stats = Stats()

    def note(self, k: int, method: str, fault: str) -> None:
        with self._log_lock:
            self.log.append({"request": k, "method": method, "fault": fault})

    # -- the request --------------------------------------------------------------------
    def handle(self, body: bytes) -> Reply:
        k = self.counters.take("http")
        try:
            parsed = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            parsed = None
        if not isinstance(parsed, (dict, list)) or parsed == []:
            return self._forward_raw(body)  # the node answers parse errors and empty batches its way
        batch = isinstance(parsed, list)
        calls = parsed if batch else [parsed]
        methods = [c.get("method") if isinstance(c, dict) and isinstance(c.get("method"), str) else None for c in calls]

        refused = self._rate_limited(methods)
        if refused:
            name, retry_after = refused
            self.note(k, name, "429")
            self.stats.refusal(name, methods)
            message = "Too many requests" if name == "total" else f"Too many requests for a specific RPC call: {name[7:]}"
            return _json(_error(None, 429, message), 429, {"Retry-After": str(retry_after)})

        self.stats.admitted(calls, methods, first_signature)
        transport = self._transport_fault(k)
        if transport:
            self.note(k, "*", transport.kind if transport.kind != "answer" else str(transport.status))
            return transport

        answers: list = [None] * len(calls)
        forward: list[int] = []
        status = 200
        for i, (call, method) in enumerate(zip(calls, methods)):
            if method is None:
                forward.append(i)
                continue
            decided = self._judge_call(k, call, method)
            if decided is None:
                forward.append(i)
            else:
                answers[i], http_status = decided
                if not batch:
                    status = http_status
        if forward:
            got = self._forward_calls(k, [calls[i] for i in forward], batch)
            if isinstance(got, Reply):
                return got
            for i, answer in zip(forward, got):
                answers[i] = answer
        return _json(answers if batch else answers[0], status)

    def _rate_limited(self, methods: list) -> tuple[str, int] | None:
        if self.limits is None:
            return None
        counts = Counter(f"method:{m}" for m in methods if m)
        counts["total"] = len(methods)
        return self.limits.admit(counts)

    def _transport_fault(self, k: int) -> Reply | None:
        t = self.transient
        u = draw(self.seed, "http", "http", k)
        edge = 0.0
        for name in ("reset", "hang", "http_502", "http_503"):
            edge += t.get(name, 0)
            if u < edge:
                if name == "reset":
                    return Reply("reset")
                if name == "hang":
                    return Reply("hang", seconds=t["hang_seconds"])
                code = int(name[5:])
                text = b"502 Bad Gateway\n" if code == 502 else b"503 Service Temporarily Unavailable\n"
                return Reply("answer", code, text, {"Content-Type": "text/plain"})
        return None

    def _judge_call(self, k: int, call: dict, method: str) -> tuple[dict, int] | None:
        """(answer, HTTP status) decided here, or None to forward the call."""
        rid = call.get("id")
        km = self.counters.take(method)
        if method in self.disabled:
            refusal = self.disabled[method] or {}
            self.note(k, method, "disabled")
            return _error(rid, refusal.get("code", -32601), refusal.get("message", "Method not found")), refusal.get("http", 200)
        if self.transient.get("unhealthy") and draw(self.seed, "unhealthy", method, km) < self.transient["unhealthy"]:
            behind = self.transient.get("slots_behind")
            self.note(k, method, "-32005")
            # Agave's NodeUnhealthy (rpc-client-api custom_error.rs): the message names the
            # slots behind when known, the data always carries numSlotsBehind.
            message = f"Node is behind by {behind} slots" if behind is not None else "Node is unhealthy"
            return _error(rid, -32005, message, {"numSlotsBehind": behind}), 200
        if method == "sendTransaction" and (self.sends.get("drop") or self.sends.get("delay")):
            signature = first_signature(call.get("params"))
            if signature is None:
                return None  # bytes the node will refuse: let it say how
            u = draw(self.seed, "send", method, km)
            if u < self.sends.get("drop", 0):
                self.note(k, method, f"dropped {signature}")
                return {"jsonrpc": "2.0", "result": signature, "id": rid}, 200
            if u < self.sends.get("drop", 0) + self.sends.get("delay", 0):
                self.note(k, method, f"delayed {signature}")
                self._forward_later(call, self.sends["delay_seconds"])
                return {"jsonrpc": "2.0", "result": signature, "id": rid}, 200
        return None

    def _forward_later(self, call: dict, seconds: float) -> None:
        body = json.dumps(call).encode()

        def land() -> None:
            try:
                self.upstream.post(body)
            except OSError:
                pass  # a late send that does not land is one more lost send

        timer = threading.Timer(seconds, land)
        timer.daemon = True  # a pending late send dies with the front (SIGTERM ends it at once)
        timer.start()
        self.delayed = [t for t in self.delayed if t.is_alive()] + [timer]

    # -- forwarding and shaping -----------------------------------------------------------
    def _forward_raw(self, body: bytes) -> Reply:
        try:
            status, answer = self.upstream.post(body)
        except OSError:
            return Reply("answer", 502, b"502 Bad Gateway\n", {"Content-Type": "text/plain"})
        return Reply("answer", status, answer, {"Content-Type": "application/json"})

    def _forward_calls(self, k: int, calls: list, batch: bool):
        sent = [self._rewrite(c) for c in calls]
        body = json.dumps(sent if batch else sent[0]).encode()
        try:
            status, raw = self.upstream.post(body)
        except OSError:
            return Reply("answer", 502, b"502 Bad Gateway\n", {"Content-Type": "text/plain"})
        try:
            answers = json.loads(raw)
        except ValueError:
            answers = None
        if status != 200 or answers is None:
            return Reply("answer", status, raw, {"Content-Type": "application/json"})
        answers = answers if batch else [answers]
        if len(answers) != len(calls):  # a node may leave out answers: match them by id
            by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
            answers = [by_id.get(c.get("id") if isinstance(c, dict) else None) for c in calls]
        tip = _Tip(self.upstream)
        return [self._shape(k, c, a, tip) for c, a in zip(calls, answers)]

    def _rewrite(self, call):
        if self.lag and isinstance(call, dict) and (call.get("method") in self.lagged or call.get("method") in LAGGED_COUNTERS):
            return {**call, "params": strip_min_context_slot(call.get("params"))}
        return call

    def _shape(self, k: int, call, answer, tip: "_Tip"):
        if not isinstance(call, dict) or not isinstance(answer, dict) or "result" not in answer:
            return answer
        method, params, result = call.get("method"), call.get("params"), answer["result"]
        if self.lag:
            wanted = min_context_slot(params)
            view = None
            if method in self.lagged and isinstance(result, dict) and isinstance(result.get("context"), dict):
                result, view = self.lag.answer(read_key(method, params), result)
            elif method in LAGGED_COUNTERS and isinstance(result, int):
                result = view = max(0, result - self.lag.slots)
            if view is not None:
                if wanted is not None and wanted > view:
                    self.note(k, method, "-32016")
                    return _error(answer.get("id"), -32016, "Minimum context slot has not been reached", {"contextSlot": view})
                answer = {**answer, "result": result}
        if self.keep_slots is not None:
            answer = self._prune(k, method, params, answer, tip)
        if self.slot_order == "signature" and method == "getSignaturesForAddress" and isinstance(answer.get("result"), list):
            answer = {**answer, "result": by_signature_within_slot(answer["result"])}
        return answer

    def _prune(self, k: int, method, params, answer: dict, tip: "_Tip") -> dict:
        result = answer.get("result")
        if method == "getTransaction" and isinstance(result, dict) and isinstance(result.get("slot"), int):
            if result["slot"] < tip.first(self.keep_slots):
                self.note(k, method, "pruned")
                return {**answer, "result": None}
        elif method == "getSignaturesForAddress" and isinstance(result, list):
            first = tip.first(self.keep_slots)
            kept = [e for e in result if not isinstance(e, dict) or e.get("slot", first) >= first]
            if len(kept) != len(result):
                self.note(k, method, "pruned")
                return {**answer, "result": kept}
        elif method == "getBlock" and isinstance(params, list) and params and isinstance(params[0], int):
            first = tip.first(self.keep_slots)
            if params[0] < first:
                self.note(k, method, "pruned")
                return _error(answer.get("id"), -32001, f"Block {params[0]} cleaned up, does not exist on node. First available block: {first}")
        elif method in ("minimumLedgerSlot", "getFirstAvailableBlock") and isinstance(result, int):
            return {**answer, "result": max(result, tip.first(self.keep_slots))}
        return answer


class _Tip:
    """The node's confirmed slot, asked once per HTTP request and only when pruning needs it."""

    def __init__(self, upstream: Upstream):
        self.upstream = upstream
        self.slot: int | None = None

    def first(self, keep_slots: int) -> int:
        if self.slot is None:
            self.slot = int(self.upstream.call("getSlot", [{"commitment": "confirmed"}]) or 0)
        return max(0, self.slot - keep_slots)


def by_signature_within_slot(entries: list) -> list:
    """Slots kept newest first; within one slot, signatures in descending byte order (the key
    order of the old blockstore's address-signatures column, read backwards), without
    ``transactionIndex``."""
    out: list = []
    i = 0
    while i < len(entries):
        j = i
        slot = entries[i].get("slot") if isinstance(entries[i], dict) else None
        while j < len(entries) and isinstance(entries[j], dict) and entries[j].get("slot") == slot:
            j += 1
        group = entries[i:j] if j > i else entries[i:i + 1]
        group = [{k: v for k, v in e.items() if k != "transactionIndex"} if isinstance(e, dict) else e for e in group]
        group.sort(key=lambda e: _signature_bytes(e), reverse=True)
        out.extend(group)
        i = max(j, i + 1)
    return out


def _signature_bytes(entry) -> bytes:
    try:
        return b58decode(entry.get("signature", "")) if isinstance(entry, dict) else b""
    except KeyError:
        return b""
