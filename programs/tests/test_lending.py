"""The lending program at its genesis id on the shared local node, with the real SPL Token,
Token-2022 and price_feed programs: strategies, a loan against feed-valued collateral,
repayment, collateral withdrawal, refinancing, closing with the rent refunded and a price
drop leading to liquidation. Balances and lamports are read with an unmodified solana-py
Client; the accounts' bytes are decoded here with ``struct`` from the layout
docs/programs.md publishes, and the client's decoders are held to the same bytes.

Time-dependent rules (interest over days, due dates, stale feeds) are in
test_lending_clock.py, on a node whose clock the test warps."""

from __future__ import annotations

import struct

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.lending import abi
from programs.lending import client as lend
from programs.tests.feedkit import compute_units
from programs.tests.lendkit import ACME, PRICE_FEED, PROGRAM, Strategy, TERMS, UNIT, USD, World, ok, refused, usual_market, value_of

pytestmark = pytest.mark.chain

# docs/programs.md, "lending": the accounts' layouts.
STRATEGY = struct.Struct("<BBBBBB2xQ32s32sIIII")
STRATEGY_MINT = struct.Struct("<32s32s32s32sIB3x")
ESCROW = struct.Struct("<BBBBBBBxIIIIQqqq32s32s")
PLEDGED = struct.Struct("<32s32sQB7x")
BORROWED = struct.Struct("<32sQQQQQB7x")


@pytest.fixture(scope="module")
def world(chain) -> World:
    return World(chain)


@pytest.fixture(scope="module")
def market(world):
    return usual_market(world)


def test_a_strategy_is_laid_out_as_documented_and_configured_by_its_lender(world):
    acme = world.asset(ACME)
    usdc = world.asset(USD, program=TOKEN_2022_PROGRAM_ID)
    s = world.strategy(pledge=[acme], borrow=[usdc])
    info = world.chain.get_account_info(s.address).value
    assert info.owner == PROGRAM and len(info.data) == abi.STRATEGY_SIZE == 1728 and info.lamports == world.rent(1728)
    data = bytes(info.data)
    (kind, version, bump, pledge_count, borrow_count, duration_code, strategy_id, lender, oracle, apy, ltv, liquidation, unit) = STRATEGY.unpack_from(data)
    assert (kind, version, pledge_count, borrow_count, duration_code) == (4, 1, 1, 1, abi.DURATION_DAYS)
    assert (Pubkey.from_bytes(lender), strategy_id, Pubkey.from_bytes(oracle)) == (s.lender.pubkey(), s.strategy_id, PRICE_FEED)
    assert (apy, ltv, liquidation, unit) == (1_000, 5_000, 8_000, 30)
    assert (s.address, bump) == lend.strategy_address(PROGRAM, s.lender.pubkey(), s.strategy_id)
    pledge = STRATEGY_MINT.unpack_from(data, STRATEGY.size)
    borrow = STRATEGY_MINT.unpack_from(data, STRATEGY.size + STRATEGY_MINT.size * abi.MAX_PLEDGE_MINTS)
    for entry, asset in ((pledge, acme), (borrow, usdc)):
        mint, feed, token_account, token_program, max_age, decimals = entry
        assert (Pubkey.from_bytes(mint), Pubkey.from_bytes(feed), Pubkey.from_bytes(token_program), max_age, decimals) == (asset.mint, asset.feed, asset.program, 3_600, 6)
        # The strategy's own associated token account of each listed mint exists, empty.
        assert Pubkey.from_bytes(token_account) == world.liquidity(s, asset) and world.balance(world.liquidity(s, asset)) == 0
    decoded = world.strategy_state(s)
    assert decoded.terms == TERMS and decoded.terms.expected_lqt == [5_000, 8_000]
    assert [m.mint for m in decoded.pledge_mints] == [acme.mint] and [m.mint for m in decoded.borrow_mints] == [usdc.mint]

    # New terms; a mint listed again takes a new feed and age; a mint unlisted.
    terms = lend.Terms(apy_bps=750, ltv_bps=6_000, liquidation_bps=8_500, duration_unit=90)
    world.ok([lend.set_terms(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), terms=terms)], [s.lender])
    other_feed, _ = world.feed(acme.mint)
    world.ok([lend.set_mint(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=acme.token, feed=other_feed, role=abi.ROLE_PLEDGE, max_age=60)], [s.lender])
    decoded = world.strategy_state(s)
    assert decoded.terms == terms and decoded.pledge_mints[0].feed == other_feed and decoded.pledge_mints[0].max_age == 60
    world.ok([lend.remove_mint(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=usdc.mint, role=abi.ROLE_BORROW)], [s.lender])
    assert world.strategy_state(s).borrow_mints == ()

    # Liquidity in and out (any mint the strategy holds), signed by the lender.
    world.set_mint(s, usdc, abi.ROLE_BORROW)
    world.deposit_liquidity(s, usdc, 5_000 * UNIT)
    assert world.balance(world.liquidity(s, usdc)) == 5_000 * UNIT
    destination = world.own(s.lender, usdc)
    world.ok([lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=usdc.token, destination=destination, amount=1_500 * UNIT)], [s.lender])
    assert world.balance(world.liquidity(s, usdc)) == 3_500 * UNIT and world.balance(destination) == 1_500 * UNIT


def test_a_loan_lends_up_to_the_loan_to_value_of_its_feed_valued_collateral(world, market):
    acme, usdc, s = market
    # 100 ACME at $50 is worth $5,000: at 50 % loan-to-value, 2,500 USDC and not a base unit more.
    borrower = world.borrower((acme, 100 * UNIT), receives=[usdc])
    loan, ixs = world.loan_ixs(s, borrower, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_500 * UNIT + 1)])
    assert world.refused(ixs, [borrower], index=2, watch=(world.liquidity(s, usdc),)) == "LtvExceeded"
    liquidity = world.balance(world.liquidity(s, usdc))
    loan, ixs = world.loan_ixs(s, borrower, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_500 * UNIT)])
    paid = world.lamports(borrower.pubkey())
    world.ok(ixs, [borrower])

    assert world.balance(world.own(borrower, usdc)) == 2_500 * UNIT
    assert world.balance(world.liquidity(s, usdc)) == liquidity - 2_500 * UNIT
    assert world.balance(world.own(borrower, acme)) == 0 and world.balance(world.escrow_token(loan, acme)) == 100 * UNIT
    escrow_rent, token_rent = world.rent(abi.ESCROW_SIZE), world.rent(165)
    assert paid - world.lamports(borrower.pubkey()) == escrow_rent + token_rent  # the borrower paid the rents (fees by the world's payer)

    info = world.chain.get_account_info(loan.escrow).value
    assert info.owner == PROGRAM and len(info.data) == abi.ESCROW_SIZE == 840 and info.lamports == escrow_rent
    data = bytes(info.data)
    head = ESCROW.unpack_from(data)
    kind, version, bump, status, pledged_count, borrowed_count, duration_code, apy, ltv, liquidation, unit, nonce, start, due, last, borrower_key, strategy_key = head
    assert (kind, version, status, pledged_count, borrowed_count, duration_code) == (5, 1, abi.STATUS_ACTIVE, 1, 1, abi.DURATION_DAYS)
    assert (apy, ltv, liquidation, unit) == (1_000, 5_000, 8_000, 30)
    assert (nonce, Pubkey.from_bytes(borrower_key), Pubkey.from_bytes(strategy_key)) == (loan.nonce, borrower.pubkey(), s.address)
    assert (loan.escrow, bump) == lend.escrow_address(PROGRAM, borrower.pubkey(), loan.nonce)
    assert last == start and due == start + 30 * 86_400 and abs(start - world.now()) <= 5
    mint, token_account, amount, decimals = PLEDGED.unpack_from(data, ESCROW.size)
    assert (Pubkey.from_bytes(mint), Pubkey.from_bytes(token_account), amount, decimals) == (acme.mint, world.escrow_token(loan, acme), 100 * UNIT, 6)
    offset = ESCROW.size + PLEDGED.size * abi.MAX_PLEDGED_ITEMS
    assert BORROWED.unpack_from(data, offset) == (bytes(usdc.mint), 2_500 * UNIT, 0, 0, 0, 0, 6)
    state = world.state(loan)
    assert state.status == "ACTIVE" and state.duration_code == "DAYS" and state.borrowed[0].debt == 2_500 * UNIT
    assert state.pledged[0].amount == 100 * UNIT and state.start_time == start
    assert value_of(100 * UNIT, acme, ACME) == 5_000 * 10**12  # value units of 10^-12 dollars


def test_repay_pays_interest_first_then_everything_and_close_refunds_the_rent(world, market):
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    borrower = loan.borrower
    world.fund(borrower.pubkey(), usdc, 10 * UNIT)  # interest money
    liquidity = world.balance(world.liquidity(s, usdc))

    # A partial payment: the interest accrued since the loan opened first, then principal.
    before = world.state(loan)
    world.after(before.start_time)
    world.ok([world.repay_ix(loan, usdc, 400 * UNIT)], [borrower])
    after = world.state(loan)
    expected = before.at(after.last_interest_update_time).borrowed[0]
    assert after.last_interest_update_time > before.last_interest_update_time  # seconds passed on the node
    interest = expected.interest_due
    assert interest > 0 and after.borrowed[0].interest_repaid == interest
    assert after.borrowed[0].interest_remainder == 0 and after.borrowed[0].interest_accrued == interest  # the rounding unit charged
    assert after.borrowed[0].principal_repaid == 400 * UNIT - interest and after.status == "ACTIVE"
    assert world.balance(world.liquidity(s, usdc)) == liquidity + 400 * UNIT

    # Repay all: whatever is owed when it lands, up to the maximum the borrower accepts.
    balance = world.balance(world.own(borrower, usdc))
    world.ok([world.repay_ix(loan, usdc, 700 * UNIT, repay_all=True)], [borrower])
    repaid = world.state(loan)
    paid = balance - world.balance(world.own(borrower, usdc))
    item = repaid.borrowed[0]
    assert repaid.status == "REPAID" and item.debt == 0 and item.principal_repaid == 1_000 * UNIT
    assert paid == 1_000 * UNIT - (400 * UNIT - interest) + (item.interest_repaid - interest)
    assert world.balance(world.liquidity(s, usdc)) == liquidity + 400 * UNIT + paid
    assert world.refused([world.repay_ix(loan, usdc, 1)], [borrower], watch=(loan.escrow,)) == "LoanNotActive"

    # Nothing owed: collateral leaves without feeds; close sends the rent to another account.
    world.ok([world.withdraw_ix(loan, acme, 40 * UNIT, feeds=[])], [borrower])
    assert world.balance(world.own(borrower, acme)) == 40 * UNIT
    recipient = Keypair().pubkey()
    rents = world.lamports(loan.escrow) + world.lamports(world.escrow_token(loan, acme))
    borrower_lamports = world.lamports(borrower.pubkey())
    world.ok([world.close_ix(loan, recipient)], [borrower])
    assert world.lamports(recipient) == rents == world.rent(abi.ESCROW_SIZE) + world.rent(165)
    assert world.lamports(borrower.pubkey()) == borrower_lamports  # fees by the world's payer
    assert world.chain.get_account_info(loan.escrow).value is None
    assert world.chain.get_account_info(world.escrow_token(loan, acme)).value is None
    assert world.balance(world.own(borrower, acme)) == 100 * UNIT  # the rest came back on closing


def test_collateral_withdrawal_is_refused_when_it_breaks_the_loan_to_value_and_accepted_otherwise(world, market):
    acme, usdc, s = market
    gold = world.asset(2_000_00000000, program=TOKEN_2022_PROGRAM_ID, decimals=9)  # $2,000 an ounce, 9 decimals
    world.set_mint(s, gold, abi.ROLE_PLEDGE)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT), (gold, 10**9)], borrows=[(usdc, 3_000 * UNIT)])  # $7,000 of collateral
    borrower = loan.borrower
    # Leaving $5,950 would allow 5,950 × 50 % = 2,975 of debt: refused; leaving $6,500 holds.
    assert world.refused([world.withdraw_ix(loan, acme, 21 * UNIT)], [borrower], watch=(loan.escrow, world.escrow_token(loan, acme))) == "LtvExceeded"
    world.ok([world.withdraw_ix(loan, acme, 10 * UNIT)], [borrower])
    assert world.state(loan).pledged[0].amount == 90 * UNIT and world.balance(world.own(borrower, acme)) == 10 * UNIT
    # Swap collateral: more gold in, ACME out entirely (its escrow account closes, rent back).
    world.fund(borrower.pubkey(), gold, 3 * 10**9)
    deposit = lend.deposit_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=borrower.pubkey(), source=world.own(borrower, gold), mint=gold.token, amount=3 * 10**9)
    lamports = world.lamports(borrower.pubkey())
    world.ok([deposit, world.withdraw_ix(loan, acme, 90 * UNIT, feeds=[gold.feed, usdc.feed])], [borrower])
    state = world.state(loan)
    assert [(p.mint, p.amount) for p in state.pledged] == [(gold.mint, 4 * 10**9)]
    assert world.chain.get_account_info(world.escrow_token(loan, acme)).value is None
    assert world.lamports(borrower.pubkey()) == lamports + world.rent(165)
    assert world.balance(world.own(borrower, acme)) == 100 * UNIT and world.balance(world.escrow_token(loan, gold)) == 4 * 10**9


def test_refinance_moves_the_loan_to_a_second_strategy_that_pays_the_first(world, market):
    acme, usdc, s = market
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_000 * UNIT)])
    terms = lend.Terms(apy_bps=800, ltv_bps=6_000, liquidation_bps=8_500, duration_unit=60)
    second = world.strategy(terms=terms, pledge=[acme], borrow=[usdc], liquidity=50_000 * UNIT)
    first_liquidity, second_liquidity = world.balance(world.liquidity(s, usdc)), world.balance(world.liquidity(second, usdc))
    before = world.state(loan)
    world.after(before.start_time)
    ix = lend.refinance(PROGRAM, escrow=loan.escrow, strategy=s.address, new_strategy=second.address, borrower=loan.borrower.pubkey(),
                        borrowed=[usdc.token], feeds=world.feeds(loan, second), expected_apy=800, expected_lqt=[6_000, 8_500])
    world.ok([ix], [loan.borrower])
    after = world.state(loan)
    owed = before.debt_at(usdc.mint, after.start_time)
    assert owed > 2_000 * UNIT  # seconds of interest at least
    assert world.balance(world.liquidity(s, usdc)) == first_liquidity + owed
    assert world.balance(world.liquidity(second, usdc)) == second_liquidity - owed
    assert after.strategy == second.address and after.terms == terms and after.status == "ACTIVE"
    assert after.due_time == after.start_time + 60 * 86_400 and after.last_interest_update_time == after.start_time
    assert after.borrowed[0] == lend.BorrowedItem(usdc.mint, owed, 0, 0, 0, 0, 6)
    loan.strategy = second
    # Repayments now go to the second strategy.
    world.fund(loan.borrower.pubkey(), usdc, 10 * UNIT)
    world.ok([world.repay_ix(loan, usdc, 100 * UNIT)], [loan.borrower])
    assert world.balance(world.liquidity(second, usdc)) == second_liquidity - owed + 100 * UNIT
    # The same strategy again: a renewal (nothing moves; interest becomes principal, a new term).
    state = world.state(loan)
    world.after(state.last_interest_update_time)
    renew = lend.refinance(PROGRAM, escrow=loan.escrow, strategy=second.address, new_strategy=second.address, borrower=loan.borrower.pubkey(),
                           borrowed=[usdc.token], feeds=world.feeds(loan), expected_apy=800, expected_lqt=[6_000, 8_500])
    world.ok([renew], [loan.borrower])
    renewed = world.state(loan)
    assert renewed.borrowed[0].principal == state.debt_at(usdc.mint, renewed.start_time) and renewed.borrowed[0].principal_repaid == 0
    assert world.balance(world.liquidity(second, usdc)) == second_liquidity - owed + 100 * UNIT


def test_a_price_drop_lets_anyone_liquidate_and_the_collateral_goes_to_the_strategy(world):
    acme = world.asset(ACME)
    usdc = world.asset(USD, program=TOKEN_2022_PROGRAM_ID)
    s = world.strategy(pledge=[acme], borrow=[usdc], liquidity=10_000 * UNIT)
    loan = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_000 * UNIT)])
    keeper = world.keypair()
    liquidate = lend.liquidate(PROGRAM, escrow=loan.escrow, strategy=s.address, feeds=world.feeds(loan))
    # $30: collateral $3,000 against $2,000 of debt, 66.7 % < 80 %: not yet.
    world.price(acme, 30_00000000)
    assert refused_by(world, keeper, [liquidate], loan) == "NotLiquidatable"
    # $24: $2,400 × 80 % = $1,920 < $2,000 owed: liquidated, by anyone.
    world.price(acme, 24_00000000)
    claim = lend.claim_collateral(PROGRAM, escrow=loan.escrow, strategy=s.address, borrower=loan.borrower.pubkey(), mint=acme.token)
    borrower_lamports = world.lamports(loan.borrower.pubkey())
    ok(world.chain, keeper, [liquidate, claim])
    state = world.state(loan)
    assert state.status == "LIQUIDATED" and state.pledged == () and state.borrowed[0].principal == 2_000 * UNIT
    assert world.balance(world.liquidity(s, acme)) == 100 * UNIT  # the collateral is the strategy's
    assert world.chain.get_account_info(world.escrow_token(loan, acme)).value is None
    assert world.lamports(loan.borrower.pubkey()) == borrower_lamports + world.rent(165)  # its rent back to the borrower
    assert world.balance(world.own(loan.borrower, usdc)) == 2_000 * UNIT  # the borrower keeps what was lent
    # The lender takes the collateral out; the borrower closes the settled loan.
    destination = world.account(s.lender.pubkey(), acme)
    world.ok([lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=acme.token, destination=destination, amount=100 * UNIT)], [s.lender])
    assert world.balance(destination) == 100 * UNIT
    world.ok([world.close_ix(loan)], [loan.borrower])
    assert world.chain.get_account_info(loan.escrow).value is None


def refused_by(world: World, payer: Keypair, instructions, loan) -> str:
    """Refused when ``payer`` sends it, the escrow unchanged: the error's name."""
    before = world.snapshot(loan.escrow)
    name = refused(world.chain, payer, instructions)
    assert world.snapshot(loan.escrow) == before
    return name


@pytest.mark.parametrize("collateral_program,lent_program", [(TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID), (TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID)])
def test_compute_unit_budgets(world, collateral_program, lent_program):
    """What each instruction costs (docs/programs.md, "Costs"), one per transaction, read
    back with getTransaction; each well inside the 200,000 an instruction gets by default."""
    acme = world.asset(ACME, program=collateral_program)
    usdc = world.asset(USD, program=lent_program)
    lender = world.keypair()
    cost = {"init": compute_units(world.chain, world.ok([lend.initialize_strategy(PROGRAM, payer=world.payer.pubkey(), lender=lender.pubkey(), strategy_id=1, oracle_program=PRICE_FEED, terms=TERMS)], [lender]))}
    s = Strategy(lend.strategy_address(PROGRAM, lender.pubkey(), 1)[0], lender, 1, TERMS)
    cost["set_mint"] = compute_units(world.chain, world.set_mint(s, acme, abi.ROLE_PLEDGE))
    world.set_mint(s, usdc, abi.ROLE_BORROW)
    world.deposit_liquidity(s, usdc, 10_000 * UNIT)
    borrower = world.borrower((acme, 100 * UNIT), receives=[usdc])
    loan, ixs = world.loan_ixs(s, borrower, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 1_000 * UNIT)])
    for name, ix in zip(("create", "deposit", "borrow"), ixs):
        cost[name] = compute_units(world.chain, world.ok([ix], [borrower]))
    world.fund(borrower.pubkey(), usdc, 10 * UNIT)
    cost["repay"] = compute_units(world.chain, world.ok([world.repay_ix(loan, usdc, 5 * UNIT)], [borrower]))
    cost["withdraw"] = compute_units(world.chain, world.ok([world.withdraw_ix(loan, acme, UNIT)], [borrower]))
    cost["repay_all"] = compute_units(world.chain, world.ok([world.repay_ix(loan, usdc, 1_010 * UNIT, repay_all=True)], [borrower]))
    cost["close"] = compute_units(world.chain, world.ok([world.close_ix(loan)], [borrower]))
    second = world.open_loan(s, pledges=[(acme, 100 * UNIT)], borrows=[(usdc, 2_000 * UNIT)])
    world.price(acme, 20 * USD)
    cost["liquidate"] = compute_units(world.chain, world.ok([lend.liquidate(PROGRAM, escrow=second.escrow, strategy=s.address, feeds=world.feeds(second))]))
    cost["claim"] = compute_units(world.chain, world.ok([lend.claim_collateral(PROGRAM, escrow=second.escrow, strategy=s.address, borrower=second.borrower.pubkey(), mint=acme.token)]))
    # Instructions that derive a PDA or an associated address vary with the bumps tried (1,500 each).
    budgets = {"init": 30_000, "set_mint": 60_000, "create": 30_000, "deposit": 70_000, "borrow": 15_000, "repay": 25_000,
               "withdraw": 20_000, "repay_all": 25_000, "close": 25_000, "liquidate": 6_000, "claim": 35_000}
    assert all(cost[name] < budget for name, budget in budgets.items()), cost
