"""The HTTP under the chain client: every call of ``ChainRpc`` goes through here, so the
budget, the retries and the failover hold for every method at once (docs/chain.md, "What
the service does for each provider behaviour").

- **Budget**: before each HTTP request its calls are taken from the cluster's budget
  (``chain.budget``: k units for a batch of k). Nothing within ``LEDGER_RPC_BUDGET_WAIT_SECONDS``
  → ``ChainBusy`` (503 CHAIN_BUSY with Retry-After).
- **Retries** of transient answers: transport errors, HTTP 429/502/503/504 and the node's
  transient JSON-RPC errors (``TRANSIENT_CODES``), with exponential backoff and full
  jitter, at least the answer's Retry-After, within ``LEDGER_RPC_DEADLINE_SECONDS`` per
  call; then ``ChainBusy`` (rate limited) or ``ChainUnavailable`` (anything else), both
  with Retry-After. Never a tight loop: every retry waits at least ``_MIN_WAIT``.
  A retry sends the very same bytes: a sendTransaction carries a signed transaction,
  whose signature makes a second copy harmless; nothing is signed again here.
- **Failover**: several URLs per cluster, a separate list for sendTransaction; a URL that
  answered transiently sits out ``LEDGER_RPC_URL_COOLOFF_SECONDS`` while another is tried.
- **Reads after a write** carry its slot as ``minContextSlot``; a node that has not reached
  it answers -32016: the next untried URL is asked at once, else the retry waits about as
  long as the node needs to catch up (the answer's ``contextSlot``, 0.4 s a slot, at most
  one backoff step); through the deadline, ``ChainBehind`` (503 CHAIN_BEHIND).

URLs (they may hold a provider's key) never reach a message: errors name the cluster.
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import httpx
from django.conf import settings

from .errors import ChainBehind, ChainBusy, ChainUnavailable

#: Agave's JSON-RPC server errors that say "not now" rather than "no" (agave
#: rpc-client-api/src/custom_error.rs): -32004 block not available, -32005 node unhealthy,
#: -32014 block status not available yet, -32016 minimum context slot not reached, -32019
#: long-term storage unreachable. The others (-32002 preflight failure, -32003 signature
#: verification, -32007 slot skipped, ...) are answers: retrying would get the same.
TRANSIENT_CODES = frozenset({-32004, -32005, -32014, -32016, -32019})
_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_MIN_WAIT = 0.05  # seconds: the least any retry waits
_MAX_WAIT = 2.0  # the most one backoff step waits (a Retry-After may ask for more)

_METHOD = re.compile(rb'"method"\s*:\s*"([A-Za-z]{1,40})"')
_MIN_CONTEXT_SLOT = re.compile(rb'"minContextSlot"\s*:\s*(\d{1,20})')
#: -32016: the node answering has not reached the request's minContextSlot.
BEHIND = -32016
_SLOT_SECONDS = 0.4  # a slot's length on Solana clusters: how long a node behind by n slots needs, about
_ANSWERED_ERROR = re.compile(rb'"error"\s*:\s*\{')


def methods_of(body: bytes) -> list[str]:
    """The JSON-RPC methods of a request body, one per call (a batch has several)."""
    return [m.decode() for m in _METHOD.findall(body)] or ["unknown"]


class _MeteredTransport(httpx.HTTPTransport):
    """Every HTTP attempt to a cluster counted and timed, by JSON-RPC method and outcome
    (docs/operations.md, "Metrics"). The method is read from the body's start (a batch is
    counted once, by its first method); never the URL, which may carry a provider's key."""

    def __init__(self, cluster: str):
        super().__init__()
        self.cluster = cluster

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        from ledger_project.metrics.meters import rpc_calls, rpc_duration

        found = _METHOD.search(request.content[:256])
        method = found.group(1).decode() if found else "unknown"
        outcome = "unavailable"
        started = time.perf_counter()
        try:
            response = super().handle_request(request)
            if response.status_code == 200:
                response.read()
                outcome = "error" if _ANSWERED_ERROR.search(response.content) else "ok"
            elif response.status_code == 429:
                outcome = "limited"
            return response
        finally:
            rpc_calls.labels(self.cluster, method, outcome).inc()
            rpc_duration.labels(self.cluster, method).observe(time.perf_counter() - started)


@dataclass(frozen=True)
class Transient:
    """Why an attempt is worth repeating: ``busy`` (rate limited), else unavailable."""

    detail: str
    busy: bool = False
    retry_after: float | None = None
    behind: bool = False  # -32016: the node has not reached the request's minContextSlot


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header in seconds (delta-seconds only: providers send those)."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        return None


def transient_answer(response: httpx.Response, request_body: bytes = b"") -> Transient | None:
    """None when the answer is final (a result, or an error that retrying would repeat)."""
    if response.status_code in _RETRY_STATUSES:
        response.read()
        return Transient(f"HTTP {response.status_code}", busy=response.status_code == 429,
                         retry_after=retry_after_seconds(response.headers.get("retry-after")))
    if response.status_code != 200:
        return None
    response.read()
    if not _ANSWERED_ERROR.search(response.content):
        return None
    try:
        answer = json.loads(response.content)
    except ValueError:
        return None
    items = answer if isinstance(answer, list) else [answer]
    if len(items) > 1 and not all(_item_code(item) in TRANSIENT_CODES for item in items):
        # A batch answered in part: resending it whole would draw the same share of errors
        # again (under 5 % of calls failing, a batch of 100 almost never passes whole). The
        # client resends the failed calls alone (chain.rpc.RpcClient._batch).
        return None
    for item in items:
        error = item.get("error") if isinstance(item, dict) else None
        code = _item_code(item)
        if code == BEHIND:
            return Transient(f"JSON-RPC {code} {str(error.get('message', ''))[:80]}".strip(), behind=True,
                             retry_after=_catch_up_seconds(request_body, error.get("data")))
        if code in TRANSIENT_CODES:
            # -32005 carries numSlotsBehind; no Retry-After: the backoff decides.
            return Transient(f"JSON-RPC {code} {str(error.get('message', ''))[:80]}".strip())
    return None


def _item_code(item) -> int | None:
    """The JSON-RPC error code of one answer (None: a result)."""
    error = item.get("error") if isinstance(item, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def _catch_up_seconds(request_body: bytes, data) -> float | None:
    """About how long the node needs to reach the request's minContextSlot: Agave's -32016
    data states the slot it answered at (``contextSlot``); at most one backoff step."""
    found = _MIN_CONTEXT_SLOT.search(request_body)
    context = data.get("contextSlot") if isinstance(data, dict) else None
    if found is None or not isinstance(context, int):
        return None
    return min(_MAX_WAIT, max(0, int(found.group(1)) - context) * _SLOT_SECONDS)


class Endpoints:
    """A cluster's URLs (reads; sends when no send URL is configured) and send URLs, in
    order of preference; one that answered transiently sits out a cool-off."""

    def __init__(self, urls: Sequence[str], send_urls: Sequence[str] = (), *, clock: Callable[[], float] = time.monotonic):
        self.urls = list(urls)
        self.send_urls = list(send_urls) or self.urls
        self.clock = clock
        self._resting: dict[str, float] = {}
        self._lock = threading.Lock()

    def pick(self, method: str, tried: Sequence[str] = ()) -> str:
        """The first URL for ``method`` not resting and not ``tried`` in this call; when
        every one is, the one whose rest ends first (a call always has somewhere to go)."""
        urls = self.send_urls if method == "sendTransaction" else self.urls
        now = self.clock()
        with self._lock:
            fresh = [u for u in urls if self._resting.get(u, 0.0) <= now]
            for url in fresh:
                if url not in tried:
                    return url
            if fresh:
                return fresh[0]
            return min(urls, key=lambda u: self._resting.get(u, 0.0))

    def untried(self, method: str, tried: Sequence[str]) -> bool:
        """Whether ``method`` has a URL this call has not tried yet."""
        return any(u not in tried for u in (self.send_urls if method == "sendTransaction" else self.urls))

    def rest(self, url: str, seconds: float) -> None:
        with self._lock:
            self._resting[url] = self.clock() + seconds


class RetryingTransport(httpx.BaseTransport):
    """Budget, retries and failover around the metered transport (module docstring).
    ``clock``, ``sleep`` and ``jitter`` are injectable: tests count, never race."""

    def __init__(self, cluster: str, endpoints: Endpoints, inner: httpx.BaseTransport, *, budget=None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random):
        self.cluster = cluster
        self.endpoints = endpoints
        self.inner = inner
        self._budget = budget
        self.clock, self.sleep, self.jitter = clock, sleep, jitter

    @property
    def budget(self):
        if self._budget is None:
            from .budget import budget

            return budget()
        return self._budget

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Full jitter (a uniform share of base·2^attempt, capped), never below _MIN_WAIT,
        never below the provider's Retry-After."""
        step = min(_MAX_WAIT, settings.LEDGER_RPC_RETRY_BASE_SECONDS * (2 ** (attempt - 1)))
        return max(_MIN_WAIT, step * self.jitter(), retry_after or 0.0)

    def _take(self, method: str, cost: int, deadline: float) -> None:
        """Units for this attempt, waiting at most the budget wait (and the deadline)."""
        give_up = min(deadline, self.clock() + settings.LEDGER_RPC_BUDGET_WAIT_SECONDS)
        prepaid = take_prepaid(cost)
        if prepaid:
            return
        while True:
            grant = self.budget.take(self.cluster, method, most=cost)
            if grant.units:
                return
            wait = max(_MIN_WAIT, grant.wait)
            if self.clock() + wait > give_up:
                why = "the provider asked the service to wait" if grant.backed_off else "the service's call budget for it is spent"
                raise ChainBusy(f"The RPC endpoint of {self.cluster} is busy ({method}: {why}); retry later.", retry_after=_whole(grant.wait))
            self.sleep(wait)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        methods = methods_of(request.content[:1 << 20])
        method, cost = methods[0], len(methods)
        deadline = self.clock() + settings.LEDGER_RPC_DEADLINE_SECONDS
        tried: list[str] = []
        attempt = 0
        while True:
            self._take(method, cost, deadline)
            url = self.endpoints.pick(method, tried)
            tried.append(url)
            try:
                response = self.inner.handle_request(_to(request, url))
            except httpx.TransportError as exc:
                verdict = Transient(type(exc).__name__)
                response = None
            else:
                verdict = transient_answer(response, request.content)
                if verdict is None:
                    return response
                response.close()
            attempt += 1
            self.endpoints.rest(url, settings.LEDGER_RPC_URL_COOLOFF_SECONDS)
            if verdict.busy and verdict.retry_after:
                self.budget.back_off(self.cluster, method, verdict.retry_after)
            wait = self.backoff(attempt, verdict.retry_after)
            if verdict.behind and self.endpoints.untried(method, tried):
                wait = _MIN_WAIT  # a node behind the write: another of the pool may have reached it
            if self.clock() + wait > deadline or attempt >= settings.LEDGER_RPC_MAX_ATTEMPTS:
                raise _final(self.cluster, method, verdict, wait)
            self.sleep(wait)


def _whole(seconds: float) -> int:
    return max(1, math.ceil(seconds))


def _final(cluster: str, method: str, verdict: Transient, wait: float) -> ChainUnavailable:
    if verdict.busy:
        return ChainBusy(f"The RPC endpoint of {cluster} is rate limiting {method} ({verdict.detail}); retry later.", retry_after=_whole(wait))
    if verdict.behind:
        return ChainBehind(f"The RPC endpoints of {cluster} have not reached the slot of the service's latest write ({method}: {verdict.detail}); retry later.",
                           retry_after=_whole(wait))
    return ChainUnavailable(f"The RPC endpoint of {cluster} did not answer {method} ({verdict.detail}); retry later.", retry_after=_whole(wait))


def _to(request: httpx.Request, url: str) -> httpx.Request:
    """The same request (same bytes) to ``url``."""
    if str(request.url) == url:
        return request
    headers = [(k, v) for k, v in request.headers.raw if k.lower() not in (b"host", b"content-length")]
    return httpx.Request(request.method, url, headers=headers, content=request.content, extensions=request.extensions)


# --- prepaid units: the pump takes what the budget allows before claiming rows ---------------
_prepaid = threading.local()


def prepay(units: int) -> None:
    """The next HTTP request of this thread costing at most ``units`` is already paid for
    (``ChainRpc.send_budget`` took them)."""
    _prepaid.units = units


def take_prepaid(cost: int) -> bool:
    units = getattr(_prepaid, "units", 0)
    if units and cost <= units:
        _prepaid.units = units - cost
        return True
    return False


def clear_prepaid() -> None:
    _prepaid.units = 0
