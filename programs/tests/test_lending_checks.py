"""Every check of the lending program's strategy instructions (and the checks every
instruction shares) refuses with its own error on the shared local node and changes
nothing; the loan instructions' checks are in test_lending_checks_loans.py. One check
cannot be provoked on a node (its rent sysvar is fixed): RentUnavailable is shown in
LiteSVM, the runtime the node runs, with a rent threshold the program cannot apply."""

from __future__ import annotations

import pytest
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.lending import abi
from programs.lending import client as lend
from programs.price_feed import client as feed_client
from programs.tests.svmkit import Chain, set_rent_threshold
from programs.tests.lendkit import PRICE_FEED, PROGRAM, TERMS, World, account_index, flagged, with_accounts, with_data

pytestmark = pytest.mark.chain
UNIT = 10**6


@pytest.fixture(scope="module")
def world(chain) -> World:
    return World(chain)


@pytest.fixture(scope="module")
def market(world):
    acme = world.asset(50_00000000)
    usdc = world.asset(1_00000000, program=TOKEN_2022_PROGRAM_ID)
    s = world.strategy(pledge=[acme], borrow=[usdc], liquidity=1_000 * UNIT)
    return acme, usdc, s


def init_ix(world: World, lender: Keypair, strategy_id: int = 7, terms: lend.Terms = TERMS, oracle: Pubkey = PRICE_FEED) -> Instruction:
    return lend.initialize_strategy(PROGRAM, payer=world.payer.pubkey(), lender=lender.pubkey(), strategy_id=strategy_id, oracle_program=oracle, terms=terms)


def test_unknown_instructions_wrong_lengths_and_account_counts(world, market):
    acme, usdc, s = market
    terms = lend.set_terms(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), terms=TERMS)
    watch = (s.address,)
    assert world.refused(Instruction(PROGRAM, b"\xfe", []), watch=watch) == "InvalidInstruction"
    assert world.refused(Instruction(PROGRAM, b"", []), watch=watch) == "InvalidInstruction"
    assert world.refused(with_data(terms, terms.data + b"\0"), [s.lender], watch=watch) == "InvalidInstruction"
    assert world.refused(with_accounts(terms, terms.accounts[:1]), watch=watch) == "NotEnoughAccounts"
    # 41 accounts (the same ones repeated): more than the program reads.
    crowd = [AccountMeta(Keypair().pubkey(), False, False) for _ in range(4)] * 11
    assert world.refused(with_accounts(terms, list(terms.accounts) + crowd[:39]), [s.lender], watch=watch) == "TooManyAccounts"


def test_initialize_strategy_checks(world, market):
    lender = world.keypair()
    ix = init_ix(world, lender)
    strategy = lend.strategy_address(PROGRAM, lender.pubkey(), 7)[0]
    watch = (strategy,)
    idx = lambda name: account_index("InitializeStrategy", name)  # noqa: E731
    other = world.keypair()
    paid_by_other = flagged(ix, idx("payer"), key=other.pubkey())
    assert world.refused(flagged(paid_by_other, idx("payer"), signer=False), [lender], watch=watch) == "PayerNotSigner"
    assert world.refused(flagged(paid_by_other, idx("payer"), writable=False), [lender, other], watch=watch) == "PayerNotWritable"
    assert world.refused(flagged(ix, idx("lender"), signer=False), watch=watch) == "LenderNotSigner"
    assert world.refused(flagged(ix, idx("system_program"), key=TOKEN_PROGRAM_ID), [lender], watch=watch) == "WrongSystemProgram"
    assert world.refused(init_ix(world, lender, oracle=Keypair().pubkey()), [lender], watch=watch) == "OracleNotExecutable"
    for terms, error in [
        (lend.Terms(abi.MAX_APY_BPS + 1, 5_000, 8_000, 30), "InvalidApy"),
        (lend.Terms(1_000, 0, 8_000, 30), "InvalidRatios"),
        (lend.Terms(1_000, 8_000, 8_000, 30), "InvalidRatios"),
        (lend.Terms(1_000, 5_000, 10_001, 30), "InvalidRatios"),
        (lend.Terms(1_000, 5_000, 8_000, 30, duration_code=2), "InvalidDuration"),
        (lend.Terms(1_000, 5_000, 8_000, 0), "InvalidDuration"),
        (lend.Terms(1_000, 5_000, 8_000, abi.MAX_DURATION_DAYS + 1), "InvalidDuration"),
    ]:
        assert world.refused(init_ix(world, lender, terms=terms), [lender], watch=watch) == error, terms
    elsewhere = lend.strategy_address(PROGRAM, lender.pubkey(), 8)[0]
    assert world.refused(flagged(ix, idx("strategy"), key=elsewhere), [lender], watch=watch) == "WrongStrategyAccount"
    assert world.refused(flagged(ix, idx("strategy"), writable=False), [lender], watch=watch) == "StrategyNotWritable"
    # At the limits, accepted; then the address is taken.
    world.ok([init_ix(world, lender, terms=lend.Terms(abi.MAX_APY_BPS, 1, 10_000, abi.MAX_DURATION_DAYS))], [lender])
    assert lend.decode_strategy(world.data(strategy)).terms == lend.Terms(abi.MAX_APY_BPS, 1, 10_000, abi.MAX_DURATION_DAYS)
    assert world.refused(ix, [lender], watch=watch) == "StrategyAlreadyExists"


def test_the_strategy_account_and_its_lender_are_checked_on_every_change(world, market):
    acme, usdc, s = market
    stranger = world.keypair()
    escrow = world.open_loan(s, pledges=[(acme, 10 * UNIT)], borrows=[(usdc, UNIT)]).escrow
    changes = [
        ("SetTerms", lend.set_terms(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), terms=TERMS)),
        ("SetMint", lend.set_mint(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=acme.token, feed=acme.feed, role=abi.ROLE_PLEDGE, max_age=60)),
        ("RemoveMint", lend.remove_mint(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=acme.mint, role=abi.ROLE_PLEDGE)),
        ("DepositLiquidity", lend.deposit_liquidity(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), source=world.own(s.lender, usdc), mint=usdc.token, amount=1)),
        ("WithdrawLiquidity", lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=usdc.token, destination=world.own(s.lender, usdc), amount=1)),
    ]
    watch = (s.address, world.liquidity(s, usdc))
    for name, ix in changes:
        strategy, lender = account_index(name, "strategy"), account_index(name, "lender")
        assert world.refused(flagged(ix, lender, signer=False), watch=watch) == "LenderNotSigner", name
        assert world.refused(flagged(ix, lender, key=stranger.pubkey()), [stranger], watch=watch) == "LenderMismatch", name
        assert world.refused(flagged(ix, strategy, key=Keypair().pubkey()), [s.lender], watch=watch) == "StrategyNotFound", name
        assert world.refused(flagged(ix, strategy, key=acme.mint), [s.lender], watch=watch) == "StrategyWrongOwner", name
        assert world.refused(flagged(ix, strategy, key=escrow), [s.lender], watch=watch) == "StrategyInvalid", name
        if name in ("SetTerms", "SetMint", "RemoveMint"):
            assert world.refused(flagged(ix, strategy, writable=False), [s.lender], watch=watch) == "StrategyNotWritable", name


def test_set_mint_checks_the_mint_its_feed_and_the_strategy_token_account(world, market):
    acme, usdc, s = market
    lender = s.lender
    gold = world.asset(2_000_00000000)
    ix = lend.set_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=gold.token, feed=gold.feed, role=abi.ROLE_PLEDGE, max_age=60)
    idx = lambda name: account_index("SetMint", name)  # noqa: E731
    watch = (s.address, world.liquidity(s, gold))

    def refused(instruction) -> str:
        return world.refused(instruction, [lender], watch=watch)

    assert refused(flagged(ix, idx("lender"), writable=False)) == "PayerNotWritable"
    assert refused(lend.set_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=gold.token, feed=gold.feed, role=2, max_age=60)) == "InvalidRole"
    assert refused(flagged(ix, idx("system_program"), key=TOKEN_PROGRAM_ID)) == "WrongSystemProgram"
    assert refused(flagged(ix, idx("associated_token_program"), key=TOKEN_PROGRAM_ID)) == "WrongAssociatedTokenProgram"
    assert refused(flagged(ix, idx("token_program"), key=TOKEN_2022_PROGRAM_ID)) == "WrongTokenProgram"
    assert refused(flagged(ix, idx("token_program"), key=PRICE_FEED)) == "WrongTokenProgram"
    assert refused(flagged(ix, idx("mint"), key=world.account(lender.pubkey(), gold))) == "MintInvalid"  # a token account
    assert refused(flagged(ix, idx("mint"), key=Keypair().pubkey())) == "MintInvalid"  # nothing there
    for age in (0, abi.MAX_FEED_AGE + 1):
        assert refused(lend.set_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=gold.token, feed=gold.feed, role=abi.ROLE_PLEDGE, max_age=age)) == "InvalidMaxAge"
    assert refused(flagged(ix, idx("feed"), key=Keypair().pubkey())) == "FeedWrongOwner"
    assert refused(flagged(ix, idx("feed"), key=gold.mint)) == "FeedWrongOwner"
    uninitialized = Keypair()
    world.ok([create_account(CreateAccountParams(from_pubkey=world.payer.pubkey(), to_pubkey=uninitialized.pubkey(), lamports=world.rent(feed_client.FEED_SIZE), space=feed_client.FEED_SIZE, owner=PRICE_FEED))], [uninitialized])
    assert refused(flagged(ix, idx("feed"), key=uninitialized.pubkey())) == "FeedInvalid"
    assert refused(flagged(ix, idx("feed"), key=acme.feed)) == "FeedMintMismatch"
    assert refused(flagged(ix, idx("token_account"), key=world.account(lender.pubkey(), gold))) == "WrongTokenAccount"
    assert refused(flagged(ix, idx("token_account"), writable=False)) == "TokenAccountNotWritable"
    world.ok([ix], [lender])
    assert world.strategy_state(s).mint(abi.ROLE_PLEDGE, gold.mint).max_age == 60


def test_mint_lists_have_a_capacity_and_removal_needs_a_listed_mint(world):
    lender = world.keypair()
    assets = [world.asset(1_00000000) for _ in range(abi.MAX_BORROW_MINTS + 1)]
    s = world.strategy(borrow=assets[:abi.MAX_BORROW_MINTS], lender=lender)
    extra = assets[-1]
    full = lend.set_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=extra.token, feed=extra.feed, role=abi.ROLE_BORROW, max_age=60)
    assert world.refused(full, [lender], watch=(s.address,)) == "MintListFull"
    world.set_mint(s, extra, abi.ROLE_PLEDGE)  # the other role's list is separate
    remove = lend.remove_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=extra.mint, role=abi.ROLE_BORROW)
    assert world.refused(remove, [lender], watch=(s.address,)) == "MintNotListed"
    assert world.refused(lend.remove_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=extra.mint, role=5), [lender], watch=(s.address,)) == "InvalidRole"
    # Removing keeps the others in order.
    world.ok([lend.remove_mint(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=assets[1].mint, role=abi.ROLE_BORROW)], [lender])
    assert [m.mint for m in world.strategy_state(s).borrow_mints] == [assets[0].mint, assets[2].mint, assets[3].mint]


def test_liquidity_moves_check_the_mint_the_accounts_and_the_amount(world, market):
    acme, usdc, s = market
    lender = s.lender
    source = world.fund(lender.pubkey(), usdc, 10 * UNIT)
    deposit = lend.deposit_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), source=source, mint=usdc.token, amount=UNIT)
    idx = lambda name: account_index("DepositLiquidity", name)  # noqa: E731
    watch = (world.liquidity(s, usdc), source)
    unlisted = world.asset(1_00000000)
    world.fund(lender.pubkey(), unlisted, UNIT)
    assert world.refused(lend.deposit_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), source=world.own(lender, unlisted), mint=unlisted.token, amount=1), [lender], watch=watch) == "MintNotListed"
    assert world.refused(flagged(deposit, idx("token_account"), key=source), [lender], watch=watch) == "WrongTokenAccount"
    assert world.refused(flagged(deposit, idx("token_account"), writable=False), [lender], watch=watch) == "TokenAccountNotWritable"
    assert world.refused(lend.deposit_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), source=source, mint=usdc.token, amount=0), [lender], watch=watch) == "ZeroAmount"
    assert world.refused(flagged(deposit, idx("token_program"), key=TOKEN_PROGRAM_ID), [lender], watch=watch) == "WrongTokenProgram"

    withdraw = lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=usdc.token, destination=source, amount=UNIT)
    idx = lambda name: account_index("WithdrawLiquidity", name)  # noqa: E731
    assert world.refused(flagged(withdraw, idx("token_account"), key=source), [lender], watch=watch) == "WrongTokenAccount"
    assert world.refused(flagged(withdraw, idx("destination"), writable=False), [lender], watch=watch) == "TokenAccountNotWritable"
    assert world.refused(flagged(withdraw, idx("destination"), key=world.liquidity(s, usdc)), [lender], watch=watch) == "InvalidDestination"
    assert world.refused(lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=usdc.token, destination=source, amount=0), [lender], watch=watch) == "ZeroAmount"
    held = world.balance(world.liquidity(s, usdc))
    too_much = lend.withdraw_liquidity(PROGRAM, strategy=s.address, lender=lender.pubkey(), mint=usdc.token, destination=source, amount=held + 1)
    assert world.refused(too_much, [lender], watch=watch) == "InsufficientLiquidity"
    world.ok([deposit, withdraw], [lender])
    assert world.balance(world.liquidity(s, usdc)) == held


def test_a_rent_threshold_the_program_cannot_apply_refuses_account_creation():
    """In LiteSVM with the node's runtime: a threshold whose double needs more mantissa bits
    than an exact product holds. InitializeStrategy and CreateLoan both create accounts."""
    c = Chain()
    program = c.load("lending")
    lender = c.funded()
    ix = lend.initialize_strategy(program, payer=c.payer.pubkey(), lender=lender.pubkey(), strategy_id=1, oracle_program=TOKEN_PROGRAM_ID, terms=TERMS)
    c.ok([ix], [lender])
    strategy = lend.strategy_address(program, lender.pubkey(), 1)[0]
    loan = lend.create_loan(program, borrower=c.payer.pubkey(), nonce=1, strategy=strategy, expected_apy=TERMS.apy_bps, expected_lqt=TERMS.expected_lqt)
    set_rent_threshold(c, 1.7)
    second = lend.initialize_strategy(program, payer=c.payer.pubkey(), lender=lender.pubkey(), strategy_id=2, oracle_program=TOKEN_PROGRAM_ID, terms=TERMS)
    for instruction in (second, loan):
        outcome = c.send([instruction], [lender])
        assert outcome.custom == lend.ERROR_CODES["RentUnavailable"], outcome.logs
