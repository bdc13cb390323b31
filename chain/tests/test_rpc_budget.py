"""The chain client within its budget (chain/budget.py, chain/transport.py; docs/chain.md
"What the service does for each provider behaviour"): token buckets in process and in
Redis, retries of transient answers (Retry-After honoured, jitter bounded, the deadline),
failover over a cluster's URLs. No chain, no sleeping: clocks and sleeps are counted."""

from __future__ import annotations

import json
import os
import uuid

import httpx
import pytest

from chain import budget as budget_module
from chain.budget import Budget, LocalBudget, RedisBudget, parse_budgets
from chain.errors import ChainBusy, ChainUnavailable
from chain.transport import Endpoints, RetryingTransport, transient_answer


class Clock:
    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def rpc_body(*methods: str) -> bytes:
    calls = [{"jsonrpc": "2.0", "id": i, "method": m, "params": []} for i, m in enumerate(methods)]
    return json.dumps(calls if len(calls) > 1 else calls[0]).encode()


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": 0, "result": 1})


def unhealthy(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": 0, "error": {"code": -32005, "message": "Node is unhealthy", "data": {"numSlotsBehind": 42}}})


class Script:
    """An inner transport answering from a list of handlers (the last one repeats), noting
    the URL of every attempt."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.urls: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request)


def transport(script, clock, *, limits="", urls=("http://a.example/", ), send_urls=(), jitter=lambda: 1.0, store=None):
    budget = Budget(parse_budgets(limits), store or LocalBudget(clock))
    return RetryingTransport("CHAIN_DEVNET", Endpoints(urls, send_urls, clock=clock), script, budget=budget, clock=clock, sleep=clock.sleep, jitter=jitter)


def send(t, *methods: str) -> httpx.Response:
    return t.handle_request(httpx.Request("POST", "http://a.example/", content=rpc_body(*methods)))


@pytest.fixture(autouse=True)
def quick(settings):
    settings.LEDGER_RPC_DEADLINE_SECONDS = 5.0
    settings.LEDGER_RPC_MAX_ATTEMPTS = 5
    settings.LEDGER_RPC_RETRY_BASE_SECONDS = 0.1
    settings.LEDGER_RPC_BUDGET_WAIT_SECONDS = 1.0
    settings.LEDGER_RPC_URL_COOLOFF_SECONDS = 10.0


# --- configuration ---------------------------------------------------------------------------

def test_budgets_parse_per_method_and_total_per_second_or_minute():
    limits = parse_budgets("CHAIN_DEVNET.sendTransaction=50/s, CHAIN_DEVNET.*=100/s,CHAIN_MAINNET.getTransaction=600/min")
    assert limits["CHAIN_DEVNET"]["sendTransaction"].rate == 50 and limits["CHAIN_DEVNET"]["*"].rate == 100
    assert limits["CHAIN_MAINNET"]["getTransaction"].rate == 10
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        parse_budgets("CHAIN_DEVNET=sendTransaction:50")


# --- the local budget ------------------------------------------------------------------------

def test_a_method_and_the_total_both_pay_and_refill_at_their_rate():
    clock = Clock()
    budget = Budget(parse_budgets("C.sendTransaction=2/s,C.*=3/s"), LocalBudget(clock))
    assert budget.take("C", "sendTransaction", most=2).units == 2
    refused = budget.take("C", "sendTransaction", most=1)
    assert refused.units == 0 and refused.wait == pytest.approx(0.5)
    assert budget.take("C", "getSlot", most=1).units == 1  # the total had one left
    assert budget.take("C", "getSlot", most=1).units == 0
    clock.now += 1.0
    assert budget.take("C", "getSlot", most=3).units == 3
    assert budget.take("D", "anything", most=500).units == 500  # no limits: unlimited


def test_a_partial_take_gets_what_is_left_and_a_refused_take_costs_nothing():
    clock = Clock()
    budget = Budget(parse_budgets("C.sendTransaction=10/s"), LocalBudget(clock))
    assert budget.take("C", "sendTransaction", most=7).units == 7
    assert budget.take("C", "sendTransaction", most=100, least=1).units == 3
    assert budget.take("C", "sendTransaction", most=5).units == 0
    clock.now += 0.5
    assert budget.take("C", "sendTransaction", most=5).units == 5


def test_a_back_off_stops_the_method_until_it_ends():
    clock = Clock()
    budget = Budget({}, LocalBudget(clock))
    budget.back_off("C", "getBlock", 3)
    grant = budget.take("C", "getBlock", most=1)
    assert grant.units == 0 and grant.backed_off and grant.wait == pytest.approx(3)
    assert budget.take("C", "getSlot", most=1).units == 1
    clock.now += 3
    assert budget.take("C", "getBlock", most=1).units == 1


# --- the shared budget (Redis) ---------------------------------------------------------------

@pytest.fixture
def redis_url():
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/13"
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=0.3).ping()
    except redis.RedisError:
        pytest.skip("no Redis to share the budget through")
    return url


def test_two_processes_share_one_bucket_and_one_back_off_through_redis(redis_url):
    clock = Clock()
    prefix = f"test-{uuid.uuid4().hex}"
    limits = parse_budgets("C.sendTransaction=5/s,C.*=8/s")
    web, worker = Budget(limits, RedisBudget(redis_url, prefix, clock)), Budget(limits, RedisBudget(redis_url, prefix, clock))
    assert web.take("C", "sendTransaction", most=3).units == 3
    assert worker.take("C", "sendTransaction", most=5, least=1).units == 2  # what the web left
    assert worker.take("C", "sendTransaction", most=1).units == 0
    assert web.take("C", "getSlot", most=5, least=1).units == 3  # 8 in total, 5 taken
    clock.now += 1
    assert worker.take("C", "sendTransaction", most=5).units == 5
    web.back_off("C", "getTransaction", 2)
    refused = worker.take("C", "getTransaction", most=1)
    assert refused.units == 0 and refused.backed_off and refused.wait == pytest.approx(2, abs=0.01)
    clock.now += 2.01
    assert worker.take("C", "getTransaction", most=1).units == 1


def test_a_redis_that_does_not_answer_falls_back_to_the_process_budget():
    clock = Clock()
    budget = Budget(parse_budgets("C.*=2/s"), RedisBudget("redis://127.0.0.1:1/0", "x", clock))
    assert budget.take("C", "getSlot", most=2).units == 2
    assert budget.take("C", "getSlot", most=1).units == 0


# --- rolling windows, as providers count them ------------------------------------------------

def test_a_window_budget_parses_with_its_margin_and_refuses_malformed_windows(settings):
    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0.05
    limits = parse_budgets("C.sendTransaction=50/1s,C.*=400/10s,C.getBlock=30/2min")
    send = limits["C"]["sendTransaction"]
    assert (send.burst, send.window) == (50, pytest.approx(1.05))
    assert limits["C"]["*"].window == pytest.approx(10.05) and limits["C"]["getBlock"].window == pytest.approx(120.05)
    assert parse_budgets("C.sendTransaction=50/s")["C"]["sendTransaction"].window == 0  # a rate stays a bucket
    from django.core.exceptions import ImproperlyConfigured

    for bad in ("C.sendTransaction=2.5/1s", "C.sendTransaction=5/0s", "C.sendTransaction=0/10s"):
        with pytest.raises(ImproperlyConfigured):
            parse_budgets(bad)


def _window_budget(limits, clock, store=None):
    return Budget(parse_budgets(limits), store or LocalBudget(clock))


@pytest.mark.parametrize("shared", [False, True], ids=["process", "redis"])
def test_a_window_grants_whole_batches_up_to_n_and_refills_as_calls_age_out(shared, settings, request):
    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0.5
    clock = Clock()
    store = RedisBudget(request.getfixturevalue("redis_url"), f"test-{uuid.uuid4().hex}", clock) if shared else None
    budget = _window_budget("C.sendTransaction=20/10s", clock, store)  # counted over 10.5 s
    assert budget.largest("C", "sendTransaction") == 20
    assert budget.take("C", "sendTransaction", most=12).units == 12
    clock.now += 4
    assert budget.take("C", "sendTransaction", most=100, least=1).units == 8
    refused = budget.take("C", "sendTransaction", most=5)
    assert refused.units == 0 and refused.wait == pytest.approx(6.5, abs=0.01)  # the first 12 age out at 10.5
    clock.now += 6.5
    assert budget.take("C", "sendTransaction", most=13, least=1).units == 12
    refused = budget.take("C", "sendTransaction", most=1)
    assert refused.wait == pytest.approx(4.0, abs=0.01)  # then the 8 taken at 4


def test_a_window_budget_never_puts_more_than_n_calls_in_any_provider_window_and_uses_most_of_it():
    """Taken greedily (a pump with an endless backlog) under the service's window, the calls
    reach a provider counting N per W (faultfront.limits.RollingLimits, the front's counter)
    up to the margin late, in any order: it never refuses one, and the service sends at
    least W / (W + margin) of N per W."""
    import random

    from faultfront.limits import RollingLimits

    rng = random.Random(36)
    for limit, window in ((50, 1.0), (20, 10.0), (5, 1.0)):
        clock = Clock()
        budget = _window_budget(f"C.sendTransaction={limit}/{window:g}s", clock)
        margin = budget.limits["C"]["sendTransaction"].window - window
        arrivals = []
        start = clock.now
        while clock.now - start < 30 * window:
            grant = budget.take("C", "sendTransaction", most=rng.randint(1, limit), least=1)
            if grant.units:
                arrivals += [clock.now + rng.uniform(0, margin)] * grant.units  # one batch, one arrival
                clock.now += rng.uniform(0, 0.01)
            else:
                clock.now += grant.wait
        arrivals.sort()
        provider_clock = Clock()
        provider = RollingLimits({"send": (limit, window)}, clock=provider_clock)
        for at in arrivals:
            provider_clock.now = at
            assert provider.admit({"send": 1}) is None, f"{limit}/{window}s refused a call at {at - start:.3f}"
        used = len(arrivals) / (30 * window) / (limit / window)
        assert used >= window / (window + margin) - 0.05, (limit, window, used)


# --- retries ---------------------------------------------------------------------------------

def test_node_unhealthy_is_retried_with_backoff_then_answers():
    clock = Clock()
    script = Script(unhealthy, unhealthy, ok)
    response = send(transport(script, clock), "getLatestBlockhash")
    assert response.json()["result"] == 1 and len(script.urls) == 3
    assert clock.slept == [pytest.approx(0.1), pytest.approx(0.2)]  # base · 2^attempt, jitter 1


def test_jitter_is_a_share_of_the_step_never_below_the_floor():
    clock = Clock()
    send(transport(Script(unhealthy, unhealthy, unhealthy, ok), clock, jitter=lambda: 0.0), "getSlot")
    assert clock.slept == [0.05, 0.05, 0.05]  # never a tight loop
    clock = Clock()
    send(transport(Script(unhealthy, unhealthy, unhealthy, ok), clock, jitter=lambda: 0.5), "getSlot")
    assert clock.slept == [pytest.approx(0.05), pytest.approx(0.1), pytest.approx(0.2)]


def test_retry_after_is_honoured_and_the_whole_deployment_backs_off_the_method():
    clock = Clock()
    limited = lambda r: httpx.Response(429, headers={"Retry-After": "0.7"}, text="Too many requests")  # noqa: E731
    t = transport(Script(limited, ok), clock)
    send(t, "getTransaction")
    assert clock.slept == [pytest.approx(0.7)]
    t.budget.back_off("CHAIN_DEVNET", "getTransaction", 0.5)  # another process saw a 429
    send(t, "getTransaction")
    assert clock.slept[-1] == pytest.approx(0.5)  # waited for the back-off before sending


def test_a_transient_error_past_the_deadline_is_503_with_retry_after():
    clock = Clock()
    with pytest.raises(ChainUnavailable) as caught:
        send(transport(Script(unhealthy), clock), "simulateTransaction")
    assert caught.value.transient and caught.value.code == "CHAIN_UNAVAILABLE" and caught.value.retry_after >= 1
    assert "-32005" in caught.value.message and "example" not in caught.value.message  # the cluster, never the URL
    assert sum(clock.slept) <= 5.0


def test_a_rate_limit_past_the_deadline_is_503_chain_busy():
    clock = Clock()
    limited = lambda r: httpx.Response(429, headers={"Retry-After": "30"})  # noqa: E731
    with pytest.raises(ChainBusy) as caught:
        send(transport(Script(limited), clock), "getSlot")
    assert caught.value.code == "CHAIN_BUSY" and caught.value.retry_after == 30 and clock.slept == []


def test_final_errors_are_not_retried():
    clock = Clock()
    refused = lambda r: httpx.Response(200, json={"jsonrpc": "2.0", "id": 0, "error": {"code": -32002, "message": "preflight"}})  # noqa: E731
    script = Script(refused)
    assert send(transport(script, clock), "sendTransaction").json()["error"]["code"] == -32002
    assert len(script.urls) == 1 and clock.slept == []
    assert transient_answer(httpx.Response(400, text="bad")) is None


def test_a_spent_budget_waits_briefly_then_is_chain_busy():
    clock = Clock()
    t = transport(Script(ok), clock, limits="CHAIN_DEVNET.*=2/s")
    send(t, "getSlot", "getSlot")  # a batch of two costs two
    send(t, "getSlot")  # waits 0.5 s for one unit
    assert clock.slept == [pytest.approx(0.5)]
    with pytest.raises(ChainBusy):
        send(t, "getSlot", "getSlot", "getSlot")  # more than the bucket holds: no wait admits it


def test_a_resent_transaction_is_the_same_bytes():
    clock = Clock()
    seen: list[bytes] = []

    def noting(answer):
        def handle(request):
            seen.append(request.content)
            return answer(request)
        return handle

    send(transport(Script(noting(lambda r: httpx.Response(502)), noting(ok)), clock), "sendTransaction")
    assert len(seen) == 2 and seen[0] == seen[1]


# --- failover --------------------------------------------------------------------------------

def test_failover_to_the_next_url_and_the_failed_one_rests():
    clock = Clock()
    script = Script(lambda r: httpx.Response(502), ok)
    t = transport(script, clock, urls=("http://a.example/", "http://b.example/"))
    send(t, "getSlot")
    assert script.urls == ["http://a.example/", "http://b.example/"]
    send(t, "getSlot")
    assert script.urls[-1] == "http://b.example/"  # a rests
    clock.now += 10
    send(t, "getSlot")
    assert script.urls[-1] == "http://a.example/"


def test_sends_go_to_the_send_urls_and_reads_do_not():
    clock = Clock()
    script = Script(ok)
    t = transport(script, clock, urls=("http://read.example/",), send_urls=("http://send.example/",))
    send(t, "sendTransaction")
    send(t, "getSignatureStatuses")
    assert script.urls == ["http://send.example/", "http://read.example/"]


def test_every_url_of_a_cluster_from_settings(settings):
    from chain.rpc import rpc_for

    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_DEVNET": "http://k:secret@a.example/v2/secret|http://b.example/?api-key=secret"}
    settings.LEDGER_CLUSTER_SEND_URLS = {"CHAIN_DEVNET": "http://send.example/"}
    rpc = rpc_for("CHAIN_DEVNET")
    assert rpc.endpoints.urls == ["http://k:secret@a.example/v2/secret", "http://b.example/?api-key=secret"]
    assert rpc.endpoints.send_urls == ["http://send.example/"]
    assert "secret" not in repr(rpc)


@pytest.fixture(autouse=True)
def fresh_budget():
    budget_module.reset()
    yield
    budget_module.reset()


def test_a_pump_refused_by_the_send_budget_sleeps_until_the_window_has_room(settings, monkeypatch):
    """The pump's pause after a pass that sent nothing (transactions.pump._pause): until the
    send window has room when that is sooner than the next pass, so a payroll under a send
    budget is not a pass late at every window (docs/chain.md, "Budgets as windows")."""
    import types

    from chain.rpc import rpc_for, send_wait
    from transactions import pump

    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0.0
    budget_module.reset(Budget(parse_budgets("CHAIN_LOCALNET.sendTransaction=2/0.02s"), LocalBudget()))
    slept: list[float] = []
    monkeypatch.setattr(pump, "time", types.SimpleNamespace(sleep=slept.append))
    rpc = rpc_for("CHAIN_LOCALNET")
    try:
        assert rpc.send_budget(5) == 2 and send_wait("CHAIN_LOCALNET") is None
        pump._pause("CHAIN_LOCALNET")
        assert slept[-1] == pump._IDLE_SLEEP  # not refused: the usual pause
        assert rpc.send_budget(1) == 0
        pump._pause("CHAIN_LOCALNET")
        assert 0 <= slept[-1] <= 0.02 < pump._IDLE_SLEEP  # refused: until the window has room
        pump._pause("CHAIN_NOT_CONFIGURED")  # a pump of a cluster with no client: the usual pause
        assert slept[-1] == pump._IDLE_SLEEP
    finally:
        rpc.unused_budget()
        budget_module.reset(None)


def test_without_redis_every_process_of_the_host_takes_from_one_budget(tmp_path, settings):
    """The embedded default (no REDIS_URL): the web processes and the worker of one host
    share one count, a file under LEDGER_VAR_DIR, as they share one through Redis elsewhere
    (before, each process counted alone: the campaign's embedded run sent its provider P
    times the send budget and met 215 of its 429s)."""
    from chain.budget import HostBudget

    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0.0
    clock = Clock()
    limits = parse_budgets("C.sendTransaction=5/1s,C.*=8/s")
    path = tmp_path / "rpc-budget.json"
    web, worker = Budget(limits, HostBudget(path, clock)), Budget(limits, HostBudget(path, clock))
    assert web.take("C", "sendTransaction", most=3).units == 3
    assert worker.take("C", "sendTransaction", most=5, least=1).units == 2  # what the web left
    refused = worker.take("C", "sendTransaction", most=1)
    assert refused.units == 0 and refused.wait == pytest.approx(1.0)
    assert web.take("C", "getSlot", most=5, least=1).units == 3  # 8 in total, 5 taken
    web.back_off("C", "getTransaction", 2)
    assert worker.take("C", "getTransaction", most=1).backed_off
    clock.now += 2.01
    assert worker.take("C", "sendTransaction", most=5).units == 5 and worker.take("C", "getTransaction", most=1).units == 1
    path.write_text("{torn")  # a file cut short (a crash mid-write is avoided by the rename; still): afresh
    assert web.take("C", "sendTransaction", most=1).units == 1


def test_the_embedded_default_budget_is_the_hosts(settings, tmp_path):
    from chain.budget import HostBudget

    settings.REDIS_URL = ""
    settings.VAR_DIR = tmp_path
    settings.LEDGER_RPC_BUDGETS = "CHAIN_DEVNET.sendTransaction=5/1s"
    budget_module.reset(None)
    try:
        store = budget_module.budget().store
        assert isinstance(store, HostBudget) and store.path == tmp_path / "rpc-budget.json"
    finally:
        budget_module.reset(None)
