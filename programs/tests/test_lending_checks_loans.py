"""Every check of opening a loan and adding to it (CreateLoan, DepositCollateral, Borrow),
the escrow checks every loan instruction shares, and the feed checks of every LTV
valuation: each refuses with its own error on the shared local node and changes nothing.
Also: a frozen-by-default Token-2022 collateral pledged in the same transaction as the
escrow's token account is created and thawed (what Create Loan builds for such mints)."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.system_program import CreateAccountParams, create_account
from spl.token.instructions import ThawAccountParams, create_idempotent_associated_token_account, thaw_account

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.lending import abi
from programs.lending import client as lend
from programs.price_feed import client as feed_client
from programs.tests.lendkit import ACME, Asset, PRICE_FEED, PROGRAM, UNIT, USD, World, account_index, failure, flagged, usual_market

pytestmark = pytest.mark.chain


@pytest.fixture(scope="module")
def world(chain) -> World:
    return World(chain)


@pytest.fixture(scope="module")
def market(world):
    return usual_market(world)


@pytest.fixture(scope="module")
def loan(world, market):
    """An active loan: 100 ACME pledged, 1,000 USDC borrowed; its borrower holds 50 ACME more."""
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    world.fund(loan.borrower.pubkey(), acme, 50 * UNIT)
    return loan


def test_create_loan_checks(world, market):
    acme, usdc, s = market
    borrower = world.keypair()
    ix = lend.create_loan(PROGRAM, borrower=borrower.pubkey(), nonce=1, strategy=s.address, expected_apy=1_000, expected_lqt=[5_000, 8_000])
    escrow = lend.escrow_address(PROGRAM, borrower.pubkey(), 1)[0]
    idx = lambda name: account_index("CreateLoan", name)  # noqa: E731
    watch = (escrow,)

    def refused(instruction, signers=(borrower,)) -> str:
        return world.refused(instruction, list(signers), watch=watch)

    assert refused(flagged(ix, idx("borrower"), signer=False), ()) == "BorrowerNotSigner"
    assert refused(flagged(ix, idx("borrower"), writable=False)) == "BorrowerNotWritable"
    assert refused(flagged(ix, idx("system_program"), key=TOKEN_PROGRAM_ID)) == "WrongSystemProgram"
    assert refused(flagged(ix, idx("strategy"), key=Keypair().pubkey())) == "StrategyNotFound"
    assert refused(flagged(ix, idx("strategy"), key=acme.mint)) == "StrategyWrongOwner"
    # expectedLoanValues must be the strategy's: expectedApy, expectedLqt [loan-to-value, liquidation].
    for apy, lqt, error in [(999, [5_000, 8_000], "ApyMismatch"), (1_000, [5_001, 8_000], "RatiosMismatch"), (1_000, [5_000, 7_999], "RatiosMismatch")]:
        assert refused(lend.create_loan(PROGRAM, borrower=borrower.pubkey(), nonce=1, strategy=s.address, expected_apy=apy, expected_lqt=lqt)) == error
    assert refused(flagged(ix, idx("escrow"), key=lend.escrow_address(PROGRAM, borrower.pubkey(), 2)[0])) == "WrongEscrowAccount"
    assert refused(flagged(ix, idx("escrow"), writable=False)) == "EscrowNotWritable"
    world.ok([ix], [borrower])
    assert refused(ix) == "EscrowAlreadyExists"
    with pytest.raises(ValueError, match="two ratios"):
        lend.create_loan(PROGRAM, borrower=borrower.pubkey(), nonce=1, strategy=s.address, expected_apy=1_000, expected_lqt=[5_000])


def test_every_loan_instruction_checks_its_escrow_strategy_and_borrower(world, market, loan):
    acme, usdc, s = market
    other = world.strategy(pledge=[acme], borrow=[usdc])
    stranger = world.keypair()
    b = loan.borrower
    instructions = {
        "DepositCollateral": lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, acme), mint=acme.token, amount=UNIT),
        "Borrow": world.borrow_ix(loan, usdc, UNIT),
        "WithdrawCollateral": world.withdraw_ix(loan, acme, UNIT),
        "Repay": world.repay_ix(loan, usdc, UNIT),
        "Refinance": lend.refinance(PROGRAM, escrow=loan.escrow, strategy=s.address, new_strategy=s.address, borrower=b.pubkey(), borrowed=[usdc.token],
                                    feeds=world.feeds(loan), expected_apy=1_000, expected_lqt=[5_000, 8_000]),
        "Liquidate": lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s.address, feeds=world.feeds(loan)),
        "ClaimCollateral": lend.claim_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), mint=acme.token),
        "CloseLoan": world.close_ix(loan),
    }
    watch = (loan.escrow, world.escrow_token(loan, acme))
    for name, ix in instructions.items():
        escrow = account_index(name, "escrow")
        assert world.refused(flagged(ix, escrow, key=Keypair().pubkey()), [b], watch=watch) == "EscrowNotFound", name
        assert world.refused(flagged(ix, escrow, key=acme.mint), [b], watch=watch) == "EscrowWrongOwner", name
        assert world.refused(flagged(ix, escrow, key=s.address), [b], watch=watch) == "EscrowInvalid", name
        assert world.refused(flagged(ix, escrow, writable=False), [b], watch=watch) == "EscrowNotWritable", name
        if any(a.name == "strategy" for a in abi.ABI.instruction(name).accounts) and name != "ClaimCollateral":
            assert world.refused(flagged(ix, account_index(name, "strategy"), key=other.address), [b], watch=watch) == "StrategyMismatch", name
        if any(a.name == "borrower" and a.signer for a in abi.ABI.instruction(name).accounts):
            borrower = account_index(name, "borrower")
            assert world.refused(flagged(ix, borrower, key=stranger.pubkey()), [stranger], watch=watch) == "BorrowerMismatch", name
            assert world.refused(flagged(ix, borrower, signer=False), watch=watch) == "BorrowerNotSigner", name
    deposit = instructions["DepositCollateral"]
    assert world.refused(flagged(deposit, account_index("DepositCollateral", "borrower"), writable=False), [b], watch=watch) == "BorrowerNotWritable"


def test_deposit_collateral_checks(world, market, loan):
    acme, usdc, s = market
    b = loan.borrower
    ix = lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, acme), mint=acme.token, amount=UNIT)
    idx = lambda name: account_index("DepositCollateral", name)  # noqa: E731
    watch = (loan.escrow, world.escrow_token(loan, acme), world.own(b, acme))

    def refused(instruction) -> str:
        return world.refused(instruction, [b], watch=watch)

    assert refused(flagged(ix, idx("system_program"), key=TOKEN_PROGRAM_ID)) == "WrongSystemProgram"
    assert refused(flagged(ix, idx("associated_token_program"), key=TOKEN_PROGRAM_ID)) == "WrongAssociatedTokenProgram"
    assert refused(flagged(ix, idx("token_program"), key=TOKEN_2022_PROGRAM_ID)) == "WrongTokenProgram"
    assert refused(flagged(ix, idx("mint"), key=world.own(b, acme))) == "MintInvalid"
    unlisted = world.asset(USD)
    world.fund(b.pubkey(), unlisted, UNIT)
    assert refused(lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, unlisted), mint=unlisted.token, amount=1)) == "MintNotAccepted"
    assert refused(lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, acme), mint=acme.token, amount=0)) == "ZeroAmount"
    assert refused(flagged(ix, idx("escrow_token"), key=world.own(b, acme))) == "WrongTokenAccount"
    assert refused(flagged(ix, idx("escrow_token"), writable=False)) == "TokenAccountNotWritable"
    # A new item: its token account must be the escrow's associated one.
    gold = world.asset(2_000_00000000, program=TOKEN_2022_PROGRAM_ID)
    world.set_mint(s, gold, abi.ROLE_PLEDGE)
    world.fund(b.pubkey(), gold, UNIT)
    new = lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, gold), mint=gold.token, amount=UNIT)
    assert refused(flagged(new, idx("escrow_token"), key=world.own(b, gold))) == "WrongTokenAccount"
    assert refused(flagged(new, idx("escrow_token"), writable=False)) == "TokenAccountNotWritable"
    world.ok([ix], [b])
    assert world.state(loan).pledged[0].amount == 101 * UNIT


def test_a_loan_holds_a_bounded_number_of_pledged_and_borrowed_mints(world):
    pledges = [world.asset(10 * USD) for _ in range(abi.MAX_PLEDGED_ITEMS + 1)]
    lends = [world.asset(USD) for _ in range(abi.MAX_BORROWED_ITEMS + 1)]
    s = world.strategy(pledge=pledges, borrow=lends, liquidity=1_000 * UNIT)
    held = [(a, 100 * UNIT) for a in pledges[:abi.MAX_PLEDGED_ITEMS]]
    borrower = world.borrower(*held, receives=lends[:abi.MAX_BORROWED_ITEMS])
    loan, ixs = world.loan_ixs(s, borrower, pledges=held, borrows=[(a, UNIT) for a in lends[:abi.MAX_BORROWED_ITEMS]])
    # A packet holds the loan's creation with two pledges; the rest follow in transactions of their own.
    for chunk in (ixs[:3], ixs[3:5], ixs[5:7], *([ix] for ix in ixs[7:])):
        world.ok(chunk, [borrower])
    b, extra = loan.borrower, pledges[-1]
    world.fund(b.pubkey(), extra, UNIT)
    seventh = lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, extra), mint=extra.token, amount=UNIT)
    assert world.refused(seventh, [b], watch=(loan.escrow,)) == "PledgedItemsFull"
    world.account(b.pubkey(), lends[-1])
    assert world.refused(world.borrow_ix(loan, lends[-1], UNIT), [b], watch=(loan.escrow,)) == "BorrowedItemsFull"
    state = world.state(loan)
    assert [p.mint for p in state.pledged] == [a.mint for a in pledges[:-1]] and [x.mint for x in state.borrowed] == [a.mint for a in lends[:-1]]


def test_borrow_checks(world, market, loan):
    acme, usdc, s = market
    b = loan.borrower
    ix = world.borrow_ix(loan, usdc, UNIT)
    idx = lambda name: account_index("Borrow", name)  # noqa: E731
    liquidity = world.liquidity(s, usdc)
    watch = (loan.escrow, liquidity)

    def refused(instruction) -> str:
        return world.refused(instruction, [b], watch=watch)

    assert refused(flagged(ix, idx("token_program"), key=TOKEN_PROGRAM_ID)) == "WrongTokenProgram"
    assert refused(world.borrow_ix(loan, acme, UNIT, feeds=world.feeds(loan) + [acme.feed])) == "MintNotBorrowable"
    assert refused(flagged(ix, idx("liquidity_token"), key=world.own(b, usdc))) == "WrongTokenAccount"
    assert refused(flagged(ix, idx("liquidity_token"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("destination"), writable=False)) == "TokenAccountNotWritable"
    assert refused(flagged(ix, idx("destination"), key=liquidity)) == "InvalidDestination"
    assert refused(world.borrow_ix(loan, usdc, 0)) == "ZeroAmount"
    assert refused(world.borrow_ix(loan, usdc, world.balance(liquidity) + 1)) == "InsufficientLiquidity"
    feeds = world.feeds(loan)
    assert refused(world.borrow_ix(loan, usdc, UNIT, feeds=feeds[:1])) == "FeedMissing"
    assert refused(world.borrow_ix(loan, usdc, UNIT, feeds=feeds[::-1])) == "FeedWrongAccount"
    world.ok([ix], [b])
    assert world.state(loan).borrowed[0].principal == 1_001 * UNIT


def test_a_repaid_or_liquidated_loan_takes_no_collateral_or_debt(world, market):
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 10 * UNIT)], borrows=[(usdc, UNIT)])
    b = loan.borrower
    world.fund(b.pubkey(), usdc, UNIT)
    world.fund(b.pubkey(), acme, UNIT)
    world.ok([world.repay_ix(loan, usdc, 2 * UNIT, repay_all=True)], [b])
    deposit = lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=b.pubkey(), source=world.own(b, acme), mint=acme.token, amount=UNIT)
    assert world.refused(deposit, [b], watch=(loan.escrow,)) == "LoanNotActive"
    assert world.refused(world.borrow_ix(loan, usdc, UNIT), [b], watch=(loan.escrow,)) == "LoanNotActive"


def test_feeds_are_checked_in_every_valuation(world):
    """Closed, replaced, re-pointed, unpriced, non-positive and oversized feeds; mints the
    strategy stopped listing."""
    acme = world.asset(ACME)
    usdc = world.asset(USD, program=TOKEN_2022_PROGRAM_ID)
    feed_keypair = Keypair()
    gold_mint = world.mint()
    gold_feed, gold_authority = world.feed(gold_mint, keypair=feed_keypair)
    gold = Asset(lend.TokenMint(gold_mint, TOKEN_PROGRAM_ID), 6, gold_feed, gold_authority, -8)
    world.price(gold, 2_000_00000000)
    s = world.strategy(pledge=[acme, gold], borrow=[usdc], liquidity=10_000 * UNIT)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT), (gold, UNIT)], borrows=[(usdc, 100 * UNIT)])
    b = loan.borrower
    watch = (loan.escrow,)

    def borrow() -> str:
        return world.refused(world.borrow_ix(loan, usdc, UNIT), [b], watch=watch)

    # Non-positive prices.
    for value in (0, -5):
        world.price(acme, value)
        assert borrow() == "FeedNotPositive"
    world.price(acme, ACME)
    # The gold feed closed: gone; re-created at its address but not initialized; then a feed of another mint.
    world.ok([feed_client.close(PRICE_FEED, feed=gold_feed, authority=gold_authority.pubkey(), recipient=world.payer.pubkey())], [gold_authority])
    assert borrow() == "FeedWrongOwner"
    world.ok([create_account(CreateAccountParams(from_pubkey=world.payer.pubkey(), to_pubkey=gold_feed, lamports=world.rent(feed_client.FEED_SIZE), space=feed_client.FEED_SIZE, owner=PRICE_FEED))], [feed_keypair])
    assert borrow() == "FeedInvalid"
    authority = Keypair()
    world.ok([feed_client.initialize(PRICE_FEED, feed=gold_feed, authority=authority.pubkey(), mint=acme.mint, exponent=-8, max_staleness=3_600, job_hash=bytes(32))], [feed_keypair, authority])
    assert borrow() == "FeedMintMismatch"
    # A feed listed before its first reading: no reading is not fresh.
    silver_mint = world.mint()
    silver_feed, silver_authority = world.feed(silver_mint)
    silver = Asset(lend.TokenMint(silver_mint, TOKEN_PROGRAM_ID), 6, silver_feed, silver_authority, -8)
    s2 = world.strategy(pledge=[silver], borrow=[usdc], liquidity=10_000 * UNIT)
    borrower = world.borrower((silver, UNIT), receives=[usdc])
    _, ixs = world.loan_ixs(s2, borrower, pledges=[(silver, UNIT)], borrows=[(usdc, UNIT)])
    assert world.refused(ixs, [borrower]) == "FeedStale"
    # Values that do not fit: 10^18 × 10^18 dollars an ounce.
    huge_mint = world.mint(decimals=0)
    huge_feed, huge_authority = world.feed(huge_mint, exponent=18)
    huge = Asset(lend.TokenMint(huge_mint, TOKEN_PROGRAM_ID), 0, huge_feed, huge_authority, 18)
    world.price(huge, 10**18)
    s3 = world.strategy(pledge=[huge], borrow=[usdc], liquidity=10_000 * UNIT)
    borrower = world.borrower((huge, 10**6), receives=[usdc])
    _, ixs = world.loan_ixs(s3, borrower, pledges=[(huge, 10**6)], borrows=[(usdc, UNIT)])
    assert world.refused(ixs, [borrower]) == "MathOverflow"
    # Mints the strategy no longer lists cannot be valued.
    lender = s.lender
    world.ok([lend.remove_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=gold.mint, role=abi.ROLE_PLEDGE)], [lender])
    feeds = [acme.feed, gold_feed, usdc.feed]
    assert world.refused(world.borrow_ix(loan, usdc, UNIT, feeds=feeds), [b], watch=watch) == "MintNotAccepted"
    world.ok([lend.remove_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=usdc.mint, role=abi.ROLE_BORROW)], [lender])
    withdraw = world.withdraw_ix(loan, gold, UNIT, feeds=[acme.feed, usdc.feed])  # gold leaves entirely
    assert world.refused(withdraw, [b], watch=watch) == "MintNotBorrowable"


def test_a_frozen_by_default_collateral_is_thawed_in_the_loan_transaction(world, market):
    """Create Loan for a mint whose accounts start frozen: the escrow's token account is
    created and thawed by the freeze authority before DepositCollateral, all in one
    transaction."""
    acme, usdc, s = market
    freezer = Keypair()
    bond = world.asset(100_00000000, program=TOKEN_2022_PROGRAM_ID, frozen_by_default=freezer)
    world.set_mint(s, bond, abi.ROLE_PLEDGE)
    borrower = world.keypair()
    source = world.account(borrower.pubkey(), bond)
    world.ok([thaw_account(ThawAccountParams(program_id=TOKEN_2022_PROGRAM_ID, account=source, mint=bond.mint, authority=freezer.pubkey()))], [freezer])
    world.fund(borrower.pubkey(), bond, 10 * UNIT)
    world.account(borrower.pubkey(), usdc)
    loan, ixs = world.loan_ixs(s, borrower, pledges=[(bond, 10 * UNIT)], borrows=[(usdc, 400 * UNIT)])
    escrow_token = world.escrow_token(loan, bond)
    # Without the thaw, the escrow's new account is frozen and the token program refuses.
    detail = world_failure(world, ixs, [borrower])
    assert "Account is frozen" in "\n".join(detail.logs)
    prepare = [
        create_idempotent_associated_token_account(world.payer.pubkey(), loan.escrow, bond.mint, TOKEN_2022_PROGRAM_ID),
        thaw_account(ThawAccountParams(program_id=TOKEN_2022_PROGRAM_ID, account=escrow_token, mint=bond.mint, authority=freezer.pubkey())),
    ]
    world.ok([ixs[0], *prepare, *ixs[1:]], [borrower, freezer])
    assert world.balance(escrow_token) == 10 * UNIT and world.balance(world.own(borrower, usdc)) == 400 * UNIT
    assert world.state(loan).pledged[0].amount == 10 * UNIT


def world_failure(world: World, instructions, signers):
    return failure(world.chain, world.payer, instructions, signers)
