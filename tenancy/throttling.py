"""Per-API-key rate limit: a fixed one-minute window counted in the Django cache.

A request without an API key is counted by its client's address (ledger_project.client_address,
not DRF's NUM_PROXIES reading of X-Forwarded-For), so behind a proxy clients do not share one count.

With REDIS_URL set the cache is Redis, so the count is shared by every web process
(INCR is atomic); the embedded default counts per process. 429 carries Retry-After.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from ledger_project.api.errors import RateLimitedError
from ledger_project.client_address import client_address

WINDOW_SECONDS = 60


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
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        cache_key = f"ratelimit:{identity}:{window}"
        cache.add(cache_key, 0, timeout=WINDOW_SECONDS * 2)
        try:
            count = cache.incr(cache_key)
        except ValueError:  # evicted between add and incr
            cache.set(cache_key, 1, timeout=WINDOW_SECONDS * 2)
            count = 1
        if count > limit:
            retry_after = max(1, int(WINDOW_SECONDS - (now % WINDOW_SECONDS)) + 1)
            raise RateLimitedError(retry_after, f"Rate limit of {limit} requests per minute exceeded; retry after {retry_after} s.")
        return True
