"""A batch payout weighs its items in the API key's rate limit (tenancy/throttling.py;
docs/api.md, "Rate limits"; issue 35, part 5): a review found one batch of up to 1,000 items
cost one unit, with a key that has no roles."""

from __future__ import annotations

import pytest

from conftest import make_client
from tenancy.tests.factories import issue_key

from .test_api_batch import send_batch


@pytest.mark.django_db(transaction=True)
def test_a_batch_of_n_items_costs_n_units_of_the_rate_limit(tenant, localnet_url, monkeypatch):
    """Items naming no position are answered one by one (404 each) without a transaction,
    which is the cheapest batch there is: it still costs one unit per item."""
    import types
    import uuid

    from tenancy import throttling

    now = 60 * 29_000_000 + 1.0  # one window for the whole test, however slow the machine
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: now))

    client = make_client(issue_key(tenant, rate_limit_per_minute=10).secret)
    missing = {"position": {"offchainId": str(uuid.uuid4())}}

    def batch(n: int):
        return send_batch(client, [{"source": missing, "destination": missing, "value": {"lamports": 1}} for _ in range(n)])

    assert batch(6).status_code == 200  # 6 of 10
    refused = batch(5)  # 11 would be over
    assert refused.status_code == 429 and refused.json()["errors"][0]["code"] == "RATE_LIMITED"
    assert 1 <= int(refused["Retry-After"]) <= 61
    assert batch(4).status_code == 200  # the refused batch cost nothing: 10 of 10
    assert client.get("/api/v1/auth/whoami").status_code == 429
    # A batch of more items than the whole limit fits no window: said so, not "retry later" only.
    small = make_client(issue_key(tenant, rate_limit_per_minute=3).secret)
    too_big = send_batch(small, [{"source": missing, "destination": missing, "value": {"lamports": 1}} for _ in range(4)])
    assert too_big.status_code == 429 and "split it" in too_big.json()["errors"][0]["message"]
    assert small.get("/api/v1/auth/whoami").status_code == 200  # and it cost nothing
