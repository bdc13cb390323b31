"""Every check of settling a loan (WithdrawCollateral, Repay, Refinance, Liquidate,
ClaimCollateral, CloseLoan) refuses with its own error on the shared local node and
changes nothing."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.lending import client as lend
from programs.tests.lendkit import PROGRAM, UNIT, USD, World, account_index, flagged, ok, usual_market, with_accounts, with_data

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def world(chain) -> World:
    return World(chain)


@pytest.fixture(scope="module")
def market(world):
    return usual_market(world)


@pytest.fixture(scope="module")
def loan(world, market):
    """An active loan: 100 ACME pledged, 1,000 USDC borrowed; its borrower holds 100 USDC more."""
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    world.fund(loan.borrower.pubkey(), usdc, 100 * UNIT)
    return loan


def test_withdraw_collateral_checks(world, market, loan):
    acme, usdc, s = market
    b = loan.borrower
    ix = world.withdraw_ix(loan, acme, UNIT)
    idx = lambda name: account_index("WithdrawCollateral", name)  # noqa: E731
    escrow_token = world.escrow_token(loan, acme)
    watch = (loan.escrow, escrow_token)

    def refused(instruction) -> str:
        return world.refused(instruction, [b], watch=watch)

    assert refused(flagged(ix, idx("borrower"), writable=False)) == "BorrowerNotWritable"
    assert refused(flagged(ix, idx("token_program"), key=TOKEN_2022_PROGRAM_ID)) == "WrongTokenProgram"
    assert refused(world.withdraw_ix(loan, usdc, UNIT)) == "ItemNotFound"
    assert refused(flagged(ix, idx("escrow_token"), key=world.own(b, acme))) == "WrongTokenAccount"
    assert refused(flagged(ix, idx("escrow_token"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("destination"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("destination"), key=escrow_token)) == "InvalidDestination"
    assert refused(world.withdraw_ix(loan, acme, 0)) == "ZeroAmount"
    assert refused(world.withdraw_ix(loan, acme, 100 * UNIT + 1)) == "InsufficientCollateral"
    assert refused(world.withdraw_ix(loan, acme, UNIT, feeds=[])) == "FeedMissing"  # debt outstanding: feeds needed
    world.ok([ix], [b])
    assert world.state(loan).pledged[0].amount == 99 * UNIT


def test_repay_checks(world, market, loan):
    acme, usdc, s = market
    b = loan.borrower
    ix = world.repay_ix(loan, usdc, UNIT)
    idx = lambda name: account_index("Repay", name)  # noqa: E731
    liquidity = world.liquidity(s, usdc)
    watch = (loan.escrow, liquidity, world.own(b, usdc))

    def refused(instruction, signers=(b,)) -> str:
        return world.refused(instruction, list(signers), watch=watch)

    assert refused(flagged(ix, idx("repayer"), signer=False), ()) == "PayerNotSigner"
    assert refused(with_data(ix, bytes([ix.data[0], 2]) + ix.data[2:])) == "InvalidInstruction"  # repay_all is 0 or 1
    assert refused(flagged(ix, idx("token_program"), key=TOKEN_PROGRAM_ID)) == "WrongTokenProgram"
    world.account(b.pubkey(), acme)
    assert refused(world.repay_ix(loan, acme, UNIT)) == "ItemNotFound"
    assert refused(flagged(ix, idx("liquidity_token"), key=world.liquidity(world.strategy(borrow=[usdc]), usdc))) == "WrongTokenAccount"
    assert refused(flagged(ix, idx("liquidity_token"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("source"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("source"), key=liquidity)) == "InvalidDestination"
    assert refused(world.repay_ix(loan, usdc, 0)) == "ZeroAmount"
    owed = world.state(loan).debt_at(usdc.mint, world.now() + 5)
    assert refused(world.repay_ix(loan, usdc, owed + UNIT)) == "RepayExceedsDebt"
    assert refused(world.repay_ix(loan, usdc, 999 * UNIT, repay_all=True)) == "RepayAllExceedsMax"
    # Anyone may repay for the borrower, from their own account.
    friend = world.keypair()
    world.fund(friend.pubkey(), usdc, UNIT)
    world.ok([world.repay_ix(loan, usdc, UNIT, repayer=friend)], [friend])
    assert world.balance(world.own(friend, usdc)) == 0


def test_a_mint_repaid_in_full_has_nothing_more_to_repay(world, market):
    acme, usdc, s = market
    eur = world.asset(USD)
    world.set_mint(s, eur, lend.abi.ROLE_BORROW)
    world.deposit_liquidity(s, eur, 1_000 * UNIT)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 100 * UNIT), (eur, 100 * UNIT)])
    b = loan.borrower
    world.fund(b.pubkey(), eur, UNIT)
    world.ok([world.repay_ix(loan, eur, 102 * UNIT, repay_all=True)], [b])
    assert world.state(loan).status == "ACTIVE"  # USDC still owed
    assert world.refused([world.repay_ix(loan, eur, 1)], [b], watch=(loan.escrow,)) == "NothingToRepay"


def refinance_ix(world: World, loan, new, *, apy: int, lqt: list[int], feeds=None, borrowed=None):
    usdc = loan.borrowed[0]
    return lend.refinance(PROGRAM, escrow=loan.escrow, strategy=loan.strategy.address, new_strategy=new.address, borrower=loan.borrower.pubkey(),
                          borrowed=borrowed or [usdc.token], feeds=world.feeds(loan, new) if feeds is None else feeds, expected_apy=apy, expected_lqt=lqt)


def test_refinance_checks(world, market, loan):
    acme, usdc, s = market
    b = loan.borrower
    terms = lend.Terms(apy_bps=900, ltv_bps=5_500, liquidation_bps=8_000, duration_unit=60)
    new = world.strategy(terms=terms, pledge=[acme], borrow=[usdc], liquidity=100_000 * UNIT)
    ix = refinance_ix(world, loan, new, apy=900, lqt=[5_500, 8_000])
    fixed = len(lend.abi.ABI.instruction("Refinance").accounts)
    watch = (loan.escrow, world.liquidity(s, usdc), world.liquidity(new, usdc))

    def refused(instruction) -> str:
        return world.refused(instruction, [b], watch=watch)

    assert refused(refinance_ix(world, loan, new, apy=1_000, lqt=[5_500, 8_000])) == "ApyMismatch"
    assert refused(refinance_ix(world, loan, new, apy=900, lqt=[5_000, 8_000])) == "RatiosMismatch"
    assert refused(flagged(ix, account_index("Refinance", "new_strategy"), key=Keypair().pubkey())) == "StrategyNotFound"
    assert refused(with_accounts(ix, list(ix.accounts)[:fixed + 2])) == "ItemAccountsMismatch"
    assert refused(flagged(ix, fixed, key=acme.mint)) == "ItemAccountsMismatch"
    assert refused(flagged(ix, fixed + 1, key=world.own(b, usdc))) == "WrongTokenAccount"
    assert refused(flagged(ix, fixed + 2, key=world.own(b, usdc))) == "WrongTokenAccount"
    assert refused(flagged(ix, fixed + 1, writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, fixed + 3, key=TOKEN_PROGRAM_ID)) == "WrongTokenProgram"
    # The new strategy must lend the borrowed mint, accept the pledged one, hold enough
    # liquidity, and its loan-to-value must hold.
    no_usdc = world.strategy(terms=terms, pledge=[acme], borrow=[world.asset(USD)])
    assert refused(refinance_ix(world, loan, no_usdc, apy=900, lqt=[5_500, 8_000], feeds=[acme.feed, usdc.feed])) == "MintNotBorrowable"
    no_acme = world.strategy(terms=terms, pledge=[world.asset(USD)], borrow=[usdc], liquidity=100_000 * UNIT)
    assert refused(refinance_ix(world, loan, no_acme, apy=900, lqt=[5_500, 8_000], feeds=[acme.feed, usdc.feed])) == "MintNotAccepted"
    dry = world.strategy(terms=terms, pledge=[acme], borrow=[usdc], liquidity=10 * UNIT)
    assert refused(refinance_ix(world, loan, dry, apy=900, lqt=[5_500, 8_000])) == "InsufficientLiquidity"
    strict = lend.Terms(apy_bps=900, ltv_bps=1_000, liquidation_bps=2_000, duration_unit=60)  # $5,000 × 10 % = $500 < $1,000
    tight = world.strategy(terms=strict, pledge=[acme], borrow=[usdc], liquidity=100_000 * UNIT)
    assert refused(refinance_ix(world, loan, tight, apy=900, lqt=[1_000, 2_000])) == "LtvExceeded"
    world.ok([ix], [b])
    assert world.state(loan).strategy == new.address
    loan.strategy = new


def test_liquidation_and_claim_checks(world, market):
    acme, usdc, s = market
    keeper = world.keypair()
    # A loan that owes nothing cannot be liquidated.
    unused = world.open_loan(s, pledges=[(acme, UNIT)], borrows=[])
    assert world.refused([lend.liquidate(PROGRAM, escrow=unused.escrow, strategy=s.address, feeds=[acme.feed])], watch=(unused.escrow,)) == "NotLiquidatable"

    gold = world.asset(2_000_00000000)
    s2 = world.strategy(pledge=[gold], borrow=[usdc], liquidity=10_000 * UNIT)
    loan = world.open_loan(s2, pledges=[(gold, UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    b = loan.borrower
    claim = lend.claim_collateral(PROGRAM, escrow=loan.escrow, strategy=s2.address, borrower=b.pubkey(), mint=gold.token)
    idx = lambda name: account_index("ClaimCollateral", name)  # noqa: E731
    watch = (loan.escrow, world.escrow_token(loan, gold))
    assert world.refused([claim], watch=watch) == "LoanNotLiquidated"
    world.price(gold, 1_000_00000000)  # $1,000 × 80 % < $1,000 owed
    liquidate = lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s2.address, feeds=world.feeds(loan))
    ok(world.chain, keeper, [liquidate])
    assert world.refused([liquidate], watch=watch) == "LoanNotActive"
    assert world.refused([world.withdraw_ix(loan, gold, 1, feeds=[])], [b], watch=watch) == "LoanNotActive"
    assert world.refused([flagged(claim, idx("borrower"), key=keeper.pubkey())], watch=watch) == "BorrowerMismatch"
    assert world.refused([flagged(claim, idx("borrower"), writable=False)], watch=watch) == "BorrowerNotWritable"
    assert world.refused([flagged(claim, idx("strategy_token"), key=world.liquidity(s, usdc))], watch=watch) == "WrongTokenAccount"
    assert world.refused([flagged(claim, idx("strategy_token"), writable=False)], watch=watch) == "TokenAccountNotWritable"
    assert world.refused([flagged(claim, idx("escrow_token"), writable=False)], watch=watch) == "TokenAccountNotWritable"
    assert world.refused([flagged(claim, idx("token_program"), key=TOKEN_2022_PROGRAM_ID)], watch=watch) == "WrongTokenProgram"
    # Closing before the collateral is claimed is refused; after, accepted.
    assert world.refused([world.close_ix(loan)], [b], watch=watch) == "CollateralNotClaimed"
    ok(world.chain, keeper, [claim])
    assert world.refused([claim], watch=(loan.escrow,)) == "ItemNotFound"
    world.ok([world.close_ix(loan)], [b])


def test_close_checks(world, market):
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 10 * UNIT)], borrows=[(usdc, 10 * UNIT)])
    b = loan.borrower
    escrow_token = world.escrow_token(loan, acme)
    watch = (loan.escrow, escrow_token)
    close = world.close_ix(loan)
    assert world.refused([close], [b], watch=watch) == "DebtOutstanding"
    world.fund(b.pubkey(), usdc, UNIT)
    world.ok([world.repay_ix(loan, usdc, 11 * UNIT, repay_all=True)], [b])
    idx = lambda name: account_index("CloseLoan", name)  # noqa: E731
    assert world.refused([flagged(close, idx("rent_recipient"), writable=False)], [b], watch=watch) == "RentRecipientNotWritable"
    assert world.refused([flagged(close, idx("rent_recipient"), key=loan.escrow)], [b], watch=watch) == "InvalidRentRecipient"
    assert world.refused([flagged(close, idx("rent_recipient"), key=escrow_token)], [b], watch=watch) == "InvalidRentRecipient"
    group = len(lend.abi.ABI.instruction("CloseLoan").accounts)
    assert world.refused([with_accounts(close, list(close.accounts)[:group])], [b], watch=watch) == "ItemAccountsMismatch"
    extra = list(close.accounts) + list(close.accounts)[group:]
    assert world.refused([with_accounts(close, extra)], [b], watch=watch) == "ItemAccountsMismatch"
    assert world.refused([flagged(close, group, key=usdc.mint)], [b], watch=watch) == "ItemAccountsMismatch"
    assert world.refused([flagged(close, group + 1, key=world.own(b, acme))], [b], watch=watch) == "ItemAccountsMismatch"
    assert world.refused([flagged(close, group + 2, key=escrow_token)], [b], watch=watch) == "InvalidDestination"
    assert world.refused([flagged(close, group + 2, writable=False)], [b], watch=watch) == "TokenAccountNotWritable"
    assert world.refused([flagged(close, group + 3, key=TOKEN_2022_PROGRAM_ID)], [b], watch=watch) == "WrongTokenProgram"
    world.ok([close], [b])
    assert world.chain.get_account_info(loan.escrow).value is None
