"""A JSON-RPC batch answered in part (chain.rpc.ChainRpc._batch): the calls that got a
transient error are sent again on their own, never the whole batch.

Measured under the fault front's flaky profile (5 % of calls -32005): a follow pass reads
its confirmations' records in one getTransaction batch of up to 100, and the transport
resent the whole batch while any call in it failed — it almost never passed, nothing
settled, and getTransaction ran 242,492 times for 2,020 transactions (docs/chain.md)."""

from __future__ import annotations

import json

import httpx
import pytest
from solders.rpc.requests import GetBlock

from chain import budget as budget_module
from chain.errors import ChainBehind, ChainUnavailable
from chain.rpc import ChainRpc
from chain.slot_order import _AsSent
from chain.transport import transient_answer


class Node:
    """An inner transport: ``fails(id, attempt)`` says which calls answer an error code."""

    def __init__(self, fails):
        self.fails = fails
        self.requests: list[list[int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        calls = json.loads(request.content)
        calls = calls if isinstance(calls, list) else [calls]
        attempt = len(self.requests)
        self.requests.append([c["id"] for c in calls])
        answers = []
        for call in calls:
            code = self.fails(call["id"], attempt)
            if code is None:
                answers.append({"jsonrpc": "2.0", "id": call["id"], "result": {"slot": call["params"][0]}})
            else:
                answers.append({"jsonrpc": "2.0", "id": call["id"], "error": {"code": code, "message": "Node is unhealthy"}})
        return httpx.Response(200, json=answers)


@pytest.fixture(autouse=True)
def quick(settings):
    settings.LEDGER_RPC_DEADLINE_SECONDS = 5.0
    settings.LEDGER_RPC_MAX_ATTEMPTS = 4
    settings.LEDGER_RPC_RETRY_BASE_SECONDS = 0.01
    settings.LEDGER_RPC_BUDGETS = ""
    budget_module.reset()
    yield
    budget_module.reset()


def _read(node, count: int = 10):
    rpc = ChainRpc("CHAIN_DEVNET", "http://a.example/", 5.0, transport=node)
    return rpc._batch([GetBlock(100 + i, id=i) for i in range(count)], _AsSent)


def test_only_the_failed_calls_are_sent_again_and_every_answer_comes_back_in_order():
    node = Node(lambda i, attempt: -32005 if attempt == 0 and i in (3, 7) else None)
    answers = _read(node)
    assert [a["result"]["slot"] for a in answers] == list(range(100, 110))
    assert node.requests == [list(range(10)), [3, 7]]


def test_calls_that_keep_failing_end_as_chain_unavailable_after_the_attempts():
    node = Node(lambda i, attempt: -32005 if i == 2 else None)
    with pytest.raises(ChainUnavailable) as raised:
        _read(node)
    assert raised.value.retry_after >= 1
    assert node.requests[0] == list(range(10)) and all(ids == [2] for ids in node.requests[1:])
    # The whole batch once, then the failed call alone LEDGER_RPC_MAX_ATTEMPTS times (a batch
    # whose every call failed is the transport's to retry): bounded, never a tight loop.
    assert len(node.requests) == 1 + 4


def test_a_node_behind_the_read_for_some_calls_is_chain_behind():
    node = Node(lambda i, attempt: -32016 if i == 5 else None)
    with pytest.raises(ChainBehind):
        _read(node)


def test_a_final_error_of_one_call_is_that_call_s_answer_and_not_retried():
    node = Node(lambda i, attempt: -32602 if i == 1 else None)
    answers = _read(node)
    assert answers[1]["error"]["code"] == -32602 and answers[0]["result"]["slot"] == 100
    assert node.requests == [list(range(10))]


def test_the_transport_retries_a_batch_whole_only_when_every_call_failed():
    def answer(*codes):
        return httpx.Response(200, json=[{"jsonrpc": "2.0", "id": i, **({"error": {"code": c, "message": "x"}} if c else {"result": 1})} for i, c in enumerate(codes)])

    assert transient_answer(answer(-32005, None, None)) is None  # in part: the client resends the failed ones
    assert transient_answer(answer(-32005, -32005)) is not None
    assert transient_answer(answer(-32005)) is not None  # a batch of one is one call
