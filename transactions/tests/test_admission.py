"""Admission by backlog (transactions/admission.py; docs/chain.md, "Admission by backlog"):
under a send budget, a new operation is refused 503 CHAIN_BUSY with Retry-After, storing
nothing, while the unsent SIGNED backlog holds what the budget sends within the horizon; the
same request, same x-request-id, goes through once the backlog is sent.

On a node of the test's own with the pump leases held (test_resign.py's fixtures): rows stay
SIGNED until the test drives a pass. The chain effect is read with an unmodified solana-py
client."""

from __future__ import annotations

import uuid

import pytest
from solders.pubkey import Pubkey

from chain import budget as rpc_budget
from conftest import assert_error
from transactions import admission
from transactions.models import Transaction, TransactionStatus
from transactions.tests.test_resign import (  # noqa: F401 - node is a fixture
    CLUSTER, LANDED, TRANSFER, chain_client, drive, node, status_is, wallet,
)

pytestmark = pytest.mark.chain


@pytest.fixture
def send_budget(settings):
    """CHAIN_LOCALNET may send 1 transaction a second (a rolling window); the horizon 2 s: a
    backlog of 2 unsent rows fills it."""
    settings.LEDGER_RPC_BUDGETS = f"{CLUSTER}.sendTransaction=1/1s"
    settings.LEDGER_ADMISSION_HORIZON_SECONDS = 2
    settings.LEDGER_ADMISSION_REFRESH_SECONDS = 0  # every request counts afresh: no timing luck
    rpc_budget.reset()
    admission.forget()
    yield
    rpc_budget.reset()
    admission.forget()


def _transfer(api, source, destination, lamports, request_id):
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": lamports}}}
    return api.call("post", TRANSFER, body, request_id=request_id)


def _unsent() -> int:
    return Transaction.unscoped.filter(cluster=CLUSTER, status=TransactionStatus.SIGNED, submit_attempts=0).count()


def test_a_full_backlog_refuses_with_retry_after_and_stores_nothing_until_sent(api, node, send_budget):
    source = wallet(api, lamports=50_000_000)
    destination = wallet(api)
    queued = [_transfer(api, source, destination, 1_000_000 + i, uuid.uuid4()) for i in range(2)]
    assert [r.status_code for r in queued] == [200, 200], [r.json() for r in queued]
    assert _unsent() == 2  # the pump is held: both wait for the budget

    before = Transaction.unscoped.count()
    request_id = uuid.uuid4()
    refused = _transfer(api, source, destination, 3_000_000, request_id)
    assert refused.status_code == 503, refused.json()
    body = assert_error(refused, 503, "CHAIN_BUSY")
    assert "nothing was stored" in str(body)
    assert int(refused["Retry-After"]) >= 1
    assert Transaction.unscoped.count() == before  # nothing stored: no row, no lease, no debit

    # The budget sends the backlog (the test drives the pump); the same request now goes through.
    for answer in queued:
        drive(status_is(answer.json()["svmTransaction"]["offchainId"], *LANDED), "the backlog", timeout=60)
    again = _transfer(api, source, destination, 3_000_000, request_id)
    assert again.status_code == 200, again.json()
    offchain_id = again.json()["svmTransaction"]["offchainId"]
    drive(status_is(offchain_id, *LANDED), "the admitted transfer", timeout=60)
    balance = chain_client(node).get_balance(Pubkey.from_string(destination["onchainId"])).value
    assert balance == 1_000_000 + 1_000_001 + 3_000_000


@pytest.mark.django_db
def test_without_a_send_budget_nothing_is_counted(settings, django_assert_num_queries):
    settings.LEDGER_RPC_BUDGETS = ""
    rpc_budget.reset()
    admission.forget()
    try:
        with django_assert_num_queries(0):
            admission.admit(CLUSTER)
    finally:
        rpc_budget.reset()


def test_the_line_and_the_retry_after(settings, monkeypatch):
    """50 sends a second for 60 s: 3,000 waiting rows are the line; each 50 past it one
    second more to wait, at most 60."""
    settings.LEDGER_RPC_BUDGETS = "CHAIN_DEVNET.sendTransaction=50/1s"
    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0
    settings.LEDGER_ADMISSION_HORIZON_SECONDS = 60
    rpc_budget.reset()
    try:
        for waiting, expected in ((2_999, None), (3_000, 1), (3_100, 3), (99_000, 60)):
            monkeypatch.setattr(admission, "backlog", lambda cluster, n=waiting: n)
            if expected is None:
                admission.admit("CHAIN_DEVNET")
                continue
            with pytest.raises(admission.SendBacklogFull) as caught:
                admission.admit("CHAIN_DEVNET")
            assert caught.value.retry_after == expected and caught.value.code == "CHAIN_BUSY"
    finally:
        rpc_budget.reset()


def test_a_total_budget_counts_half_of_it_as_sends(settings):
    """Only a total limited: the sends get half of it (the pump's reads take the rest); with
    both limited, the lower of the send limit and half the total."""
    settings.LEDGER_RPC_WINDOW_MARGIN_SECONDS = 0
    try:
        for budgets, rate in (("CHAIN_DEVNET.*=100/1s", 50.0), ("CHAIN_DEVNET.*=100/1s,CHAIN_DEVNET.sendTransaction=20/1s", 20.0),
                              ("CHAIN_DEVNET.*=30/1s,CHAIN_DEVNET.sendTransaction=20/1s", 15.0), ("CHAIN_DEVNET.getBalance=5/1s", None)):
            settings.LEDGER_RPC_BUDGETS = budgets
            rpc_budget.reset()
            assert admission.send_rate("CHAIN_DEVNET") == rate, budgets
    finally:
        rpc_budget.reset()
