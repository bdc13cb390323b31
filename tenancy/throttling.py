"""Per-API-key rate limit: a fixed one-minute window counted in the Django cache.

A request without an API key is counted by its client's address (ledger_project.client_address,
not DRF's NUM_PROXIES reading of X-Forwarded-For), so behind a proxy clients do not share one count.

With REDIS_URL set the cache is Redis, so the count is shared by every web process
(INCR is atomic); the embedded default counts per process. 429 carries Retry-After.

A request costs one unit, or what its view says it weighs (``throttle_weight(request)``):
a batch payout weighs one unit per item (positions/endpoints.py), since each item costs about
what a request of its own does (a read, a build, its share of a simulation). A request
over the budget left in the window is refused whole and costs nothing, so a batch too big
for what is left does not starve the smaller requests that still fit (docs/api.md, "Rate
limits").
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from ledger_project.api.errors import RateLimitedError
from ledger_project.client_address import client_address

WINDOW_SECONDS = 60
_clock = time.time  # the windows' clock (a test holds it within one window)


def request_weight(request, view) -> int:
    """Units the request costs: its view's ``throttle_weight(request)``, at least 1."""
    weigh = getattr(view, "throttle_weight", None)
    return max(1, int(weigh(request))) if weigh is not None else 1


class ApiKeyRateThrottle(BaseThrottle):
    def get_ident(self, request) -> str:
        return client_address(request) or "unknown"

    def allow_request(self, request, view) -> bool:
        from tenancy.models import ApiKey

        user = request.user
        if isinstance(user, ApiKey):
            identity = f"key:{user.key_id}"
            limit = user.rate_limit_per_minute if user.rate_limit_per_minute is not None else settings.LEDGER_RATE_LIMIT_PER_MINUTE
        else:
            identity = f"ip:{self.get_ident(request)}"
            limit = settings.LEDGER_RATE_LIMIT_PER_MINUTE
        if limit <= 0:
            return True  # 0 means unlimited
        try:
            weight = request_weight(request, view)
        except Exception:
            # The body does not parse: the view answers that (400); the attempt still costs its unit.
            self._take(identity, limit, 1)
            raise
        self._take(identity, limit, weight)
        return True

    def _take(self, identity: str, limit: int, weight: int) -> None:
        now = _clock()
        window = int(now // WINDOW_SECONDS)
        cache_key = f"ratelimit:{identity}:{window}"
        cache.add(cache_key, 0, timeout=WINDOW_SECONDS * 2)
        try:
            count = cache.incr(cache_key, weight)
        except ValueError:  # evicted between add and incr
            cache.set(cache_key, weight, timeout=WINDOW_SECONDS * 2)
            count = weight
        if count > limit:
            try:
                cache.decr(cache_key, weight)  # refused whole: it costs nothing
            except ValueError:
                pass
            retry_after = max(1, int(WINDOW_SECONDS - (now % WINDOW_SECONDS)) + 1)
            if weight > limit:
                message = (f"This request weighs {weight} units (one per batch item), more than the limit of {limit} a minute: "
                           "no window admits it; split it.")
            elif weight > 1:
                message = f"Rate limit of {limit} units per minute exceeded (this request weighs {weight}, one per batch item); retry after {retry_after} s."
            else:
                message = f"Rate limit of {limit} requests per minute exceeded; retry after {retry_after} s."
            raise RateLimitedError(retry_after, message)
