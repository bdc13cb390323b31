"""The read floor (chain/floor.py): the newest slot the service applied a confirmation at, per
cluster and URLs, raised only, shared by the host's processes (a file under LEDGER_VAR_DIR, or
Redis when the deployment has it), forgotten LEDGER_RPC_READ_FLOOR_SECONDS after the last note;
and every account, balance and blockhash read of ChainRpc carries it as minContextSlot."""

from __future__ import annotations

import json
import os

import httpx
import pytest
from solders.pubkey import Pubkey

from chain import budget, floor
from chain.rpc import ChainRpc

URLS = ("http://node-a.example:8899",)


# The host's file always; Redis in the runs that have one (the PostgreSQL + Redis run).
STORES = ["file"] + (["redis"] if os.environ.get("REDIS_URL") else [])


@pytest.fixture(params=STORES)
def store(request, settings, tmp_path):
    """Each store this run's deployment may have: the host's file, Redis."""
    settings.VAR_DIR = tmp_path
    if request.param == "redis":
        budget.reset(budget.Budget({}, budget.RedisBudget(settings.REDIS_URL, f"floor-test-{tmp_path.name}")))
    else:
        budget.reset(budget.Budget({}, budget.HostBudget(tmp_path / "rpc-budget.json")))
    floor.forget()
    yield request.param
    floor.forget()
    budget.reset()


def test_raised_only_per_cluster_and_urls_and_shared_between_processes(store):
    floor.note("CHAIN_DEVNET", URLS, 120)
    floor.note("CHAIN_DEVNET", URLS, 100)  # an older confirmation settled later
    assert floor.floor("CHAIN_DEVNET", URLS) == 120
    assert floor.floor("CHAIN_DEVNET", ("http://node-b.example:8899",)) is None  # another node (a fresh local node on another port)
    assert floor.floor("CHAIN_MAINNET", URLS) is None
    floor.forget()  # another process: only the shared store
    assert floor.floor("CHAIN_DEVNET", URLS) == 120


def test_forgotten_after_its_life(store, settings, monkeypatch):
    settings.LEDGER_RPC_READ_FLOOR_SECONDS = 30
    floor.note("CHAIN_DEVNET", URLS, 120)
    if store == "redis":
        key = budget.budget().store._key(f"floor:{floor._key('CHAIN_DEVNET', URLS)}")
        assert 0 < budget.budget().store.client.ttl(key) <= 30
        return
    later = floor.time.time() + 31
    monkeypatch.setattr(floor.time, "time", lambda: later)
    monkeypatch.setattr(floor.time, "monotonic", lambda: 10**9)
    floor.forget()
    assert floor.floor("CHAIN_DEVNET", URLS) is None


def test_off_when_its_life_is_zero(store, settings):
    settings.LEDGER_RPC_READ_FLOOR_SECONDS = 0
    floor.note("CHAIN_DEVNET", URLS, 120)
    assert floor.floor("CHAIN_DEVNET", URLS) is None


def _answers(seen: list[dict]):
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        context = {"context": {"slot": 200, "apiVersion": "2.2.0"}}
        results = {
            "getBalance": {**context, "value": 7},
            "getMultipleAccounts": {**context, "value": [None]},
            "getLatestBlockhash": {**context, "value": {"blockhash": "4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM", "lastValidBlockHeight": 300}},
            "simulateTransaction": {**context, "value": {"err": None, "logs": [], "accounts": None, "unitsConsumed": 150}},
        }
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": results[body["method"]]})
    return httpx.MockTransport(handler)


def test_reads_carry_the_floor_or_their_own_later_slot(store):
    seen: list[dict] = []
    rpc = ChainRpc("CHAIN_DEVNET", URLS[0], 5, transport=_answers(seen))
    address = Pubkey.from_string("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin")
    rpc.balance(address)
    assert seen[-1]["params"][-1].get("minContextSlot") is None  # nothing written yet: no floor
    rpc.wrote(150)
    rpc.balance(address)
    rpc.account(address)
    rpc.latest_blockhash()
    assert [body["params"][-1]["minContextSlot"] for body in seen[1:]] == [150, 150, 150]
    rpc.read_accounts([str(address)], min_context_slot=180)  # the read's own, later slot wins
    assert seen[-1]["params"][-1]["minContextSlot"] == 180
    rpc.read_accounts([str(address)], min_context_slot=90)  # an earlier one is raised to the floor
    assert seen[-1]["params"][-1]["minContextSlot"] == 150
    rpc.simulate(_transfer(address))  # a simulation too: never against state before the write
    assert seen[-1]["method"] == "simulateTransaction" and seen[-1]["params"][-1]["minContextSlot"] == 150
    assert seen[-1]["params"][-1]["commitment"] == "confirmed"  # not the finalized bank, ~32 slots behind


def _transfer(payer_address: Pubkey):
    from solders.hash import Hash
    from solders.keypair import Keypair
    from solders.message import Message
    from solders.system_program import TransferParams, transfer
    from solders.transaction import Transaction

    payer = Keypair()
    message = Message([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=payer_address, lamports=1))], payer.pubkey())
    return Transaction([payer], message, Hash.default())


def test_an_expired_floor_never_comes_back_with_a_lower_note(store, settings, monkeypatch):
    """A node reset under its URL: the old floor expires, and the new node's first, lower
    confirmation sets the floor — the old slot does not return with it."""
    settings.LEDGER_RPC_READ_FLOOR_SECONDS = 30
    floor.note("CHAIN_DEVNET", URLS, 5000)
    clock = {"mono": floor.time.monotonic() + 40, "wall": floor.time.time() + 40}
    monkeypatch.setattr(floor.time, "monotonic", lambda: clock["mono"])
    monkeypatch.setattr(floor.time, "time", lambda: clock["wall"])
    if store == "redis":
        budget.budget().store.client.delete(budget.budget().store._key(f"floor:{floor._key('CHAIN_DEVNET', URLS)}"))  # its EX passed
    floor._read.clear()
    assert floor.floor("CHAIN_DEVNET", URLS) is None
    floor.note("CHAIN_DEVNET", URLS, 12)
    floor._read.clear()
    assert floor.floor("CHAIN_DEVNET", URLS) == 12


def test_a_slow_refresh_never_puts_back_the_older_answer(settings, monkeypatch):
    """Two threads refresh at once: the one that began later answered the newer floor; the
    slower, earlier one finishing last must not replace it with what it fetched."""
    import threading

    settings.LEDGER_RPC_READ_FLOOR_REFRESH_SECONDS = 0.5
    floor.forget()
    clock = {"now": 1000.0}
    monkeypatch.setattr(floor.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(floor, "_redis", lambda: None)
    started, release = threading.Event(), threading.Event()
    answers = iter([100, 150])

    def slow_then_fast(key, ttl):
        value = next(answers)
        if value == 100:  # the first refresh: fetched, then held before it stores
            started.set()
            release.wait(5)
        return value

    monkeypatch.setattr(floor, "_file_read", slow_then_fast)
    seen: list = []
    slow = threading.Thread(target=lambda: seen.append(floor.floor("CHAIN_DEVNET", URLS)))
    slow.start()
    assert started.wait(5)
    clock["now"] = 1001.0  # past the refresh interval: the second reader fetches afresh
    assert floor.floor("CHAIN_DEVNET", URLS) == 150
    release.set()
    slow.join(5)
    assert seen == [150]  # the slow reader answers the newer floor too ...
    assert floor.floor("CHAIN_DEVNET", URLS) == 150  # ... which stays
    floor.forget()
