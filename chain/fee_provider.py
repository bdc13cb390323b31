"""What a compute unit costs now: ``priceEstimate`` of svmTransactionConfig.computeUnitConfig
(docs/transactions.md, "Compute-unit price estimates").

The spec's one provider, ``PARTNER_FEE_PROVIDER``, is the priority-fee API RPC providers
serve as the JSON-RPC method ``getPriorityFeeEstimate`` (Helius documents it; Alchemy and
others answer the same request), called when the cluster has a provider URL
(``LEDGER_PRIORITY_FEE_PROVIDER_URLS``). Without one, or when the provider fails, the
estimate is read from the cluster's own ``getRecentPrioritizationFees``.

The mapping of the spec's values to the provider's request:

- ``priorityLevel: RECOMMENDED`` (the spec's only level, and what an absent one means) →
  ``options.recommended: true``, the provider's recommended fee (documented as the median
  of recent fees), never a ``priorityLevel`` of the provider's;
- ``calculationStrategy: DEFAULT`` → the provider's own defaults: no ``lookbackSlots``,
  ``includeVote`` or ``evaluateEmptySlotAsZero`` is sent;
- the accounts: ``accountKeys``, the accounts the message writes (the provider: account
  keys give reliable estimates for writable accounts). Not ``transaction``: the price is
  an instruction of the message, so the estimate is needed before there is a transaction
  to serialize, and the same accounts are what the fallback asks about.

The answer, ``result.priorityFeeEstimate``, is a JSON number with a fraction (micro-lamports
per compute unit). It is parsed as a Decimal, never a float, and rounded **up** to whole
micro-lamports (the price instruction takes an integer; up, so the price is never below the
provider's figure). A negative, non-numeric or missing figure is a failure.

A failure — no answer within ``LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS``, an HTTP
status other than 200, a JSON-RPC error, an answer not of that shape — never fails the
request: the estimate falls back to ``getRecentPrioritizationFees``; the failure is logged
once (a warning when the provider starts failing, an info line when it answers again), and
for ``LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS`` the provider is not asked again, so a
hanging provider does not hold every request for its timeout.

The URL is the operator's (a setting, like LEDGER_CLUSTERS) and may carry an API key in its
path or query: it never appears in a log line or an error (logged redacted, errors name the
cluster). The call follows the outbound rules of ledger_project/outbound.py that fit an
operator's URL: redirects are not followed, no proxy or credentials from the environment,
the answer is read up to LEDGER_OUTBOUND_MAX_RESPONSE_BYTES. The tenant-URL address check
does not apply (the operator may point it at a node on its own network, as its cluster URLs).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Sequence

import httpx
from django.conf import settings
from solders.pubkey import Pubkey

from .rpc import ChainRpc

logger = logging.getLogger("ledger.chain")

METHOD = "getPriorityFeeEstimate"
#: getRecentPrioritizationFees takes at most this many accounts (the validator's limit).
MAX_ACCOUNTS = 128
#: A figure above this is taken as this (the most computeUnitConfig.price accepts; the
#: builder caps an estimate far lower).
_MAX_FIGURE = Decimal(10**12)


class ProviderFailed(Exception):
    """The provider gave no usable estimate; the message never holds the URL."""

    def __init__(self, message: str, outcome: str = "error"):
        super().__init__(message)
        self.outcome = outcome  # the metric's: "error" (answered, unusably) or "unavailable"


class _Provider:
    """One cluster's provider in this process: its HTTP client and whether it is failing."""

    def __init__(self, cluster: str, url: str, timeout: float):
        self.cluster, self.url = cluster, url
        # follow_redirects / trust_env as ledger_project.outbound.OUTBOUND_CLIENT_SETTINGS.
        # Not chain.rpc's metered transport: it reads every answer whole, before the cap here.
        self.client = httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)
        self.lock = threading.Lock()
        self.failing_until = 0.0
        self.failing = False

    def __repr__(self) -> str:
        return f"<fee provider of {self.cluster}>"  # never the URL


_providers: dict[tuple[str, str], _Provider] = {}
_providers_lock = threading.Lock()


def provider_url(cluster: str) -> str | None:
    return (getattr(settings, "LEDGER_PRIORITY_FEE_PROVIDER_URLS", None) or {}).get(cluster) or None


def _provider(cluster: str, url: str) -> _Provider:
    key = (cluster, url)
    with _providers_lock:
        found = _providers.get(key)
        if found is None:
            found = _providers[key] = _Provider(cluster, url, settings.LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS)
        return found


def providers_clear() -> None:
    """Forget every provider's client and failing state (tests)."""
    with _providers_lock:
        for provider in _providers.values():
            provider.client.close()
        _providers.clear()


def request_body(accounts: Sequence[Pubkey]) -> dict:
    """The provider's documented request for the spec's DEFAULT strategy, RECOMMENDED level."""
    return {"jsonrpc": "2.0", "id": 1, "method": METHOD, "params": [{"accountKeys": [str(a) for a in accounts], "options": {"recommended": True}}]}


def micro_lamports(value) -> int:
    """A provider's figure (a Decimal or int from the JSON) as whole micro-lamports, rounded up."""
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise ProviderFailed("its priorityFeeEstimate is not a number")
    try:
        figure = Decimal(value)
        if not figure.is_finite() or figure < 0:
            raise ProviderFailed("its priorityFeeEstimate is negative or not finite")
        # Bounded before it becomes an int: "1e999999999" is a valid JSON number.
        return int(min(figure, _MAX_FIGURE).to_integral_value(rounding=ROUND_CEILING))
    except InvalidOperation:
        raise ProviderFailed("its priorityFeeEstimate is not a number") from None


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number")


def ask_provider(provider: _Provider, accounts: Sequence[Pubkey]) -> int:
    """The provider's recommended price for ``accounts`` (micro-lamports), or ProviderFailed.
    Counted and timed with the cluster's RPC calls (docs/operations.md, "Metrics"): method
    getPriorityFeeEstimate, outcome ok, error (it answered, unusably) or unavailable."""
    from ledger_project.metrics.meters import rpc_calls, rpc_duration

    outcome, started = "unavailable", time.perf_counter()
    try:
        price = _ask(provider, accounts)
        outcome = "ok"
        return price
    except ProviderFailed as exc:
        outcome = exc.outcome
        raise
    finally:
        rpc_calls.labels(provider.cluster, METHOD, outcome).inc()
        rpc_duration.labels(provider.cluster, METHOD).observe(time.perf_counter() - started)


def _ask(provider: _Provider, accounts: Sequence[Pubkey]) -> int:
    cap = settings.LEDGER_OUTBOUND_MAX_RESPONSE_BYTES
    deadline = time.monotonic() + settings.LEDGER_PRIORITY_FEE_PROVIDER_TIMEOUT_SECONDS
    try:
        with provider.client.stream("POST", provider.url, json=request_body(accounts)) as response:
            body = bytearray()
            for chunk in response.iter_raw():
                body += chunk
                if len(body) > cap:
                    raise ProviderFailed(f"its answer is over {cap} bytes")
                if time.monotonic() > deadline:
                    raise ProviderFailed("its answer was still arriving at the timeout", "unavailable")
            status = response.status_code
    except httpx.HTTPError as exc:
        # type(exc) only: httpx's messages can hold the URL.
        raise ProviderFailed(f"no answer ({type(exc).__name__})", "unavailable") from None
    if status != 200:
        raise ProviderFailed(f"HTTP status {status}", "unavailable")
    try:
        answer = json.loads(bytes(body), parse_float=Decimal, parse_constant=_refuse_constant)
    except ValueError:
        raise ProviderFailed("its answer is not JSON") from None
    if not isinstance(answer, dict):
        raise ProviderFailed("its answer is not a JSON-RPC response")
    if answer.get("error") is not None:
        error = answer["error"]
        code = error.get("code") if isinstance(error, dict) else None
        raise ProviderFailed(f"JSON-RPC error {code}")
    result = answer.get("result")
    if not isinstance(result, dict) or "priorityFeeEstimate" not in result:
        raise ProviderFailed("its result has no priorityFeeEstimate")
    return micro_lamports(result["priorityFeeEstimate"])


def recent_fees_price(rpc: ChainRpc, accounts: Sequence[Pubkey]) -> int:
    """The fallback: the median (50th percentile) of the non-zero fees getRecentPrioritizationFees
    answers for ``accounts`` (one per recent slot: the lowest price that slot's transactions
    writing them paid), rounded up as the provider's figure is (the mean of the two middle
    fees of an even count, in integers); 0 when nobody paid one. The median, not a higher
    percentile: it is the provider's recommended level too, so a fallback does not change
    what a transaction pays by much."""
    paid = sorted(fee for fee in rpc.recent_prioritization_fees(list(accounts)[:MAX_ACCOUNTS]) if fee > 0)
    if not paid:
        return 0
    middle = len(paid) // 2
    return paid[middle] if len(paid) % 2 else -(-(paid[middle - 1] + paid[middle]) // 2)


def estimate(rpc: ChainRpc, accounts: Sequence[Pubkey]) -> int:
    """The price for a message writing ``accounts`` on ``rpc``'s cluster (micro-lamports):
    the provider's, when the cluster has one that answers, else the fallback's."""
    url = provider_url(rpc.cluster)
    if url and accounts:
        provider = _provider(rpc.cluster, url)
        if time.monotonic() >= provider.failing_until:
            try:
                price = ask_provider(provider, accounts)
            except ProviderFailed as exc:
                with provider.lock:
                    first = not provider.failing
                    provider.failing = True
                    provider.failing_until = time.monotonic() + settings.LEDGER_PRIORITY_FEE_PROVIDER_RETRY_SECONDS
                if first:
                    logger.warning("priority fee provider of %s failed: %s; estimating from getRecentPrioritizationFees", rpc.cluster, exc,
                                   extra={"event": "FEE_PROVIDER_FAILED", "cluster": rpc.cluster})
            else:
                with provider.lock:
                    recovered, provider.failing = provider.failing, False
                if recovered:
                    logger.info("priority fee provider of %s answers again", rpc.cluster, extra={"event": "FEE_PROVIDER_RECOVERED", "cluster": rpc.cluster})
                return price
    return recent_fees_price(rpc, accounts)
