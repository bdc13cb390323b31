"""Interest and due times through the API on a local node of the test's own whose clock the
test warps (``localnetWarpClock``: warping the shared node would expire every other test's
transactions and age their feeds), with a worker of its own on it: interest accrues per
second as the program accrues it, repayments pay interest first, an overdue loan is
liquidated by the keeper, and `reconcile` finds no drift on that node."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from solders.pubkey import Pubkey

from loans.models import Loan, LoanStatus
from loans.tasks import loans_keeper
from programs.lending import client as lend
from tests.workers import WorkerProcess, new_queue_name, paused_workers, route_tasks_to, wait_for
from chain import builder
from chain.rpc import rpc_for
from localnet.testing import LocalnetProcess, rpc_call

from .kit import call, create_loan, details, landed, node_time, strategy, world

pytestmark = pytest.mark.chain

ACME = 10**6
USD = 100
DAY = 86_400


@pytest.fixture
def own_node(tmp_path, settings, celery_worker_process):
    """A node of this test as CHAIN_LOCALNET, and a worker of its own following it (the
    session's is paused meanwhile)."""
    from transactions.fee_payers import fee_payer_cache_clear

    node = LocalnetProcess(tmp_path / "node").start()
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_LOCALNET": node.url}
    settings.LEDGER_LOCALNET_RPC_URL = node.url
    fee_payer_cache_clear()
    queue = new_queue_name()
    worker = WorkerProcess(queue, {"LEDGER_LOCALNET_RPC_URL": node.url})
    with paused_workers():
        route_tasks_to(queue)
        worker.start()
        try:
            yield node
        finally:
            worker.stop()
            route_tasks_to(celery_worker_process.queue)
            builder.forget_blockhash(rpc_for("CHAIN_LOCALNET"))
            node.stop()


def _chain_loan(chain, escrow: str) -> lend.Loan:
    return lend.decode_loan(bytes(chain.get_account_info(Pubkey.from_string(escrow)).value.data))


@pytest.mark.django_db(transaction=True)
def test_interest_accrues_with_the_node_clock_and_is_paid_first(api, own_node):
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    chain = Client(own_node.url, timeout=10, commitment=Confirmed)
    w = world(api, chain)
    s = strategy(api, w)
    liquidating = strategy(api, w, mode="LIQUIDATE")
    loan = landed(create_loan(api, w, s["onchainId"], pledge=300 * ACME, borrow=1_000 * USD), 201)["newLoan"]
    overdue = landed(create_loan(api, w, liquidating["onchainId"], pledge=100 * ACME, borrow=10 * USD), 201)["newLoan"]
    start = _chain_loan(chain, loan["onchainId"]).start_time

    d = details(api, loan)
    item = d["borrowedItems"][0]
    assert item["interestOutstanding"] == 0 and d["dueTime"] > d["startTime"]
    # 10 % a year on 1,000 USD: 100 USD after a year, to the base unit.
    year = details(api, loan, computeEstimatedInterestUntil=lend_time(start + 365 * DAY))
    assert year["borrowedItems"][0]["estimatedInterest"] == 100 and year["estimatedInterestUntil"] == lend_time(start + 365 * DAY)
    assert abs(item["interestPerSecond"] * 365 * DAY - 100) < 0.000001

    # Thirty days pass on the node's clock.
    warped = rpc_call(own_node.url, "localnetWarpClock", [30 * DAY])["result"]
    assert warped >= start + 30 * DAY
    stale = details(api, loan)
    assert not any(m["fresh"] for m in stale["marketData"]) and stale["valuation"]["loanToValueRatio"] is None
    now = node_time(chain)
    expected = _chain_loan(chain, loan["onchainId"]).at(now).borrowed[0].interest_due
    assert 820 <= expected <= 823  # 100,000 × 10 % × 30/365 base units
    assert round(stale["borrowedItems"][0]["estimatedInterest"] * USD) >= expected  # estimated at the chain's clock (it moves on)
    w.acme_feed.set(chain, w.payer, 10_00)
    w.usd_feed.set(chain, w.payer, 1_00)
    assert all(m["fresh"] for m in details(api, loan)["marketData"])

    # 5 USD repaid: all of it interest (interest first).
    landed(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.usd), "value": {"amount": 5}}]}))
    state = _chain_loan(chain, loan["onchainId"])
    assert state.borrowed[0].interest_repaid == 500 and state.borrowed[0].principal_repaid == 0 and state.last_interest_update_time >= warped
    shown = details(api, loan)["borrowedItems"][0]
    assert shown["principalDue"] == 1_000 and shown["principalRepaid"] == 0 and round(shown["interestOutstanding"] * USD) == state.borrowed[0].interest_due

    # The second loan's thirty days are over: the keeper liquidates it (its strategy says so).
    rpc_call(own_node.url, "localnetWarpClock", [DAY])
    report = next(r for r in loans_keeper() if r["cluster"] == "CHAIN_LOCALNET")
    assert overdue["offchainId"] in report["liquidated"]
    wait_for(lambda: Loan.unscoped.get(offchain_id=overdue["offchainId"]).status == LoanStatus.LIQUIDATED, timeout=30, what="the liquidation")
    assert _chain_loan(chain, overdue["onchainId"]).status == "LIQUIDATED"
    # The first one is overdue too, but its strategy only flags.
    assert details(api, loan)["flagReason"] == "overdue" and details(api, loan)["status"] == "ACTIVE"

    # Everything repaid (the program takes exactly what is owed), released, closed.
    landed(call(api, "patch", "/repay", {"defiProtocol": "PARTNER_LENDING", "escrow": loan, "itemsToRepay": [{"positionLookup": w.holding(w.borrower, w.usd), "repayAll": True,
                                                                                                          "mintAsset": True, "value": {"amount": 1_100}}],
                                        "itemsToRelease": [{"positionLookup": {"position": {"offchainId": w.borrower_acme["offchainId"]}}, "value": {"amount": 300}}]}))
    assert _chain_loan(chain, loan["onchainId"]).status == "REPAID"
    landed(call(api, "patch", "/close", {"defiProtocol": "PARTNER_LENDING", "escrow": loan}), result=None)
    out = StringIO()
    call_command("reconcile", "--cluster", "CHAIN_LOCALNET", stdout=out)
    report = json.loads(out.getvalue().splitlines()[0])
    assert report["drift"] == [] and report["positionsChecked"] >= 4, report


def lend_time(unix: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(unix, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
