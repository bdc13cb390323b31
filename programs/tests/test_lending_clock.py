"""The lending program's rules counted in seconds, on a local node of this module whose
clock the tests warp (``localnetWarpClock``; warping the shared node would move every other
test's time): interest accrued per second at the loan's APY, exactly as the client computes
it; feeds turning stale as the clock moves; an overdue loan refusing new debt and open to
liquidation whatever the prices."""

from __future__ import annotations

from decimal import Decimal

import pytest
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID
from programs.lending import client as lend
from programs.tests.lendkit import PROGRAM, World, ok
from localnet.testing import LocalnetProcess, rpc_call

pytestmark = pytest.mark.chain

UNIT = 10**6
DAY = 86_400


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    process = LocalnetProcess(tmp_path_factory.mktemp("lending-clock") / "node").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def world(node) -> World:
    return World(Client(node.url, timeout=10, commitment=Confirmed))


def warp(node, seconds: int) -> int:
    return rpc_call(node.url, "localnetWarpClock", [seconds])["result"]


def market(world: World):
    acme = world.asset(50_00000000)
    usdc = world.asset(1_00000000, program=TOKEN_2022_PROGRAM_ID)
    strategy = world.strategy(pledge=[acme], borrow=[usdc], liquidity=100_000 * UNIT)
    return acme, usdc, strategy


def test_interest_accrues_per_second_at_the_apy_and_repayment_pays_it_first(node, world):
    acme, usdc, s = market(world)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_000 * UNIT)])
    world.fund(loan.borrower.pubkey(), usdc, 100 * UNIT)
    start = world.state(loan)
    item = start.borrowed[0]
    assert start.interest_per_second(item) == Decimal(2_000 * UNIT * 1_000) / Decimal(10_000 * 365 * DAY)  # ~63.42 base units

    # Ten days later (the feeds refreshed: they are ten days old too), one base unit repaid:
    # the interest accrued is exactly 2,000 USDC × 10 % × 10/365.
    now = warp(node, 10 * DAY)
    world.price(acme, 50_00000000)
    world.price(usdc, 1_00000000)
    world.ok([world.repay_ix(loan, usdc, 1)], [loan.borrower])
    state = world.state(loan)
    elapsed = state.last_interest_update_time - start.start_time
    assert 10 * DAY <= elapsed <= 10 * DAY + (state.last_interest_update_time - now) + 5
    exact = 2_000 * UNIT * 1_000 * elapsed
    accrued = state.borrowed[0]
    assert accrued.interest_accrued * lend.INTEREST_DENOMINATOR + accrued.interest_remainder == exact
    assert accrued.interest_accrued >= 5_479_452 and accrued.interest_repaid == 1 and accrued.principal_repaid == 0
    estimate = start.at(state.last_interest_update_time).borrowed[0]  # the client's arithmetic
    assert (estimate.interest_accrued, estimate.interest_remainder) == (accrued.interest_accrued, accrued.interest_remainder)

    # Accrued in several steps or in one, the interest is the same (the remainder carries).
    for days in (3, 7):
        warp(node, days * DAY)
        world.price(acme, 50_00000000)
        world.price(usdc, 1_00000000)
        world.ok([world.repay_ix(loan, usdc, 1)], [loan.borrower])
    state = world.state(loan)
    total = state.last_interest_update_time - start.start_time
    item = state.borrowed[0]
    assert item.interest_accrued * lend.INTEREST_DENOMINATOR + item.interest_remainder == 2_000 * UNIT * 1_000 * total
    assert item.interest_repaid == 3 and item.principal_repaid == 0

    # What the client estimates for a moment ahead is what the program then charges.
    later = warp(node, 2 * DAY) + 1
    world.after(later - 1)
    world.price(acme, 50_00000000)
    world.price(usdc, 1_00000000)
    due = world.state(loan).debt_at(usdc.mint, world.now())
    balance = world.balance(world.own(loan.borrower, usdc))
    world.ok([world.repay_ix(loan, usdc, due + 10_000, repay_all=True)], [loan.borrower])
    repaid = world.state(loan)
    paid = balance - world.balance(world.own(loan.borrower, usdc))
    assert repaid.status == "REPAID" and paid == state.debt_at(usdc.mint, repaid.last_interest_update_time)
    assert paid >= 2_000 * UNIT + 2_000 * UNIT * 22 // 365 // 10  # 22 days at 10 %


def test_feeds_older_than_the_strategy_allows_refuse_every_ltv_check(node, world):
    acme, usdc, s = market(world)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    warp(node, 3_600 + 10)  # past the strategy's maximum age (3,600 s)
    watch = (loan.escrow,)
    assert world.refused([world.withdraw_ix(loan, acme, UNIT)], [loan.borrower], watch=watch) == "FeedStale"
    assert world.refused([world.borrow_ix(loan, usdc, UNIT)], [loan.borrower], watch=watch) == "FeedStale"
    liquidate = lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s.address, feeds=world.feeds(loan))
    assert world.refused([liquidate], watch=watch) == "FeedStale"
    world.price(acme, 50_00000000)  # the collateral's feed is fresh again, the debt's is not
    assert world.refused([world.withdraw_ix(loan, acme, UNIT)], [loan.borrower], watch=watch) == "FeedStale"
    world.price(usdc, 1_00000000)
    world.ok([world.withdraw_ix(loan, acme, UNIT)], [loan.borrower])
    # Repaying needs no feed.
    world.fund(loan.borrower.pubkey(), usdc, 10 * UNIT)
    warp(node, 3_600 + 10)
    world.ok([world.repay_ix(loan, usdc, 5 * UNIT)], [loan.borrower])


def test_an_overdue_loan_takes_no_new_debt_and_anyone_may_liquidate_it_whatever_the_prices(node, world):
    acme, usdc, s = market(world)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 500 * UNIT)])
    state = world.state(loan)
    keeper = world.keypair()
    # Not due yet: a healthy loan cannot be liquidated.
    liquidate = lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s.address, feeds=world.feeds(loan))
    assert world.refused([liquidate], watch=(loan.escrow,)) == "NotLiquidatable"
    warp(node, state.due_time - world.now() + 1)
    world.price(acme, 50_00000000)
    world.price(usdc, 1_00000000)
    assert world.refused([world.borrow_ix(loan, usdc, UNIT)], [loan.borrower], watch=(loan.escrow,)) == "LoanOverdue"
    # Overdue: liquidated without feeds (they could be gone), the collateral to the strategy.
    claim = lend.claim_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=loan.borrower.pubkey(), mint=acme.token)
    ok(world.chain, keeper, [lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s.address), claim])
    liquidated = world.state(loan)
    assert liquidated.status == "LIQUIDATED" and liquidated.pledged == ()
    assert liquidated.borrowed[0].interest_accrued > 0  # accrued up to the liquidation
    assert world.balance(world.liquidity(s, acme)) == 100 * UNIT
