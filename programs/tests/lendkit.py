"""Helpers for the lending program's tests on a real local node (the shared one, or a node
of the test's own where the clock is warped), driven with an unmodified solana-py client
and solders transactions; real SPL Token, Token-2022 and price_feed programs.

A ``World`` makes assets (a mint and its price feed), funded accounts, strategies and
loans; balances and lamports are read with the plain Client, the program's accounts with
the decoders of programs/lending/client.py (whose byte layout test_lending.py checks
independently)."""

from __future__ import annotations

import itertools
import secrets
import time
from dataclasses import dataclass, field

import pytest
from solana.rpc.api import Client
from solana.rpc.core import RPCException
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import CreateAccountParams, create_account
from solders.transaction import Transaction
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError
from spl.token.instructions import MintToCheckedParams, create_idempotent_associated_token_account, get_associated_token_address, mint_to_checked

from instruments.token2022 import instructions as t22
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, AccountState, ExtensionType
from instruments.token2022.sizes import mint_space
from programs.lending import abi
from programs.lending import client as lend
from programs.price_feed import client as feed_client
from programs.tests.feedkit import JOB, node_clock
from transactions.tests.chainkit import funded, wait

PROGRAM = lend.LOCALNET_PROGRAM_ID
PRICE_FEED = feed_client.LOCALNET_PROGRAM_ID
E = lend.ERROR_CODES
#: The terms most tests lend on: 10 % APY, 50 % loan-to-value, liquidation at 80 %, 30 days.
TERMS = lend.Terms(apy_bps=1_000, ltv_bps=5_000, liquidation_bps=8_000, duration_unit=30)
MAX_AGE = 3_600
PACKET_DATA_SIZE = 1232


#: The blockhash each message was last sent with: the same message under the same blockhash
#: is the same transaction (AlreadyProcessed), so a repeat waits for the next blockhash.
_SENT: dict[bytes, object] = {}


def transaction(chain: Client, payer: Keypair, instructions: list[Instruction], signers=()) -> Transaction:
    message = Message(instructions, payer.pubkey())
    # Sign with whichever of ``signers`` the message asks for (negative tests drop signer
    # flags and keep the same signer list).
    required = set(message.account_keys[:message.header.num_required_signatures])
    unique = {payer.pubkey(): payer}
    for s in signers:
        if s.pubkey() in required:
            unique.setdefault(s.pubkey(), s)
    key = bytes(message)
    deadline = time.monotonic() + 10
    blockhash = chain.get_latest_blockhash().value.blockhash
    while _SENT.get(key) == blockhash:
        assert time.monotonic() < deadline, "no new blockhash"
        time.sleep(0.1)
        blockhash = chain.get_latest_blockhash().value.blockhash
    _SENT[key] = blockhash
    tx = Transaction(list(unique.values()), message, blockhash)
    # What a validator accepts (the local node does not check the packet size).
    assert len(bytes(tx)) <= PACKET_DATA_SIZE, f"a transaction of {len(bytes(tx))} bytes does not fit a packet"
    return tx


def ok(chain: Client, payer: Keypair, instructions: list[Instruction], signers=()) -> Signature:
    signature = chain.send_transaction(transaction(chain, payer, instructions, signers)).value
    status = wait(chain, signature)
    assert status.err is None, status
    return signature


def failure(chain: Client, payer: Keypair, instructions: list[Instruction], signers=()):
    """The preflight refusal of ``instructions`` (its TransactionError and logs)."""
    with pytest.raises(RPCException) as refused:
        chain.send_transaction(transaction(chain, payer, instructions, signers))
    return refused.value.args[0].data


def refused(chain: Client, payer: Keypair, instructions: list[Instruction] | Instruction, signers=(), *, index: int | None = None) -> str:
    """Send ``instructions``: they must fail in preflight with a lending error (raised by
    instruction ``index`` when given); its name."""
    instructions = [instructions] if isinstance(instructions, Instruction) else instructions
    detail = failure(chain, payer, instructions, signers)
    assert any(line.startswith(f"Program {PROGRAM} failed: custom program error") for line in detail.logs), detail.logs
    assert isinstance(detail.err, TransactionErrorInstructionError) and isinstance(detail.err.err, InstructionErrorCustom), detail.err
    if index is not None:
        assert detail.err.index == index, detail.err
    return lend.error_name(detail.err.err.code)


def flagged(ix: Instruction, index: int, *, signer: bool | None = None, writable: bool | None = None, key: Pubkey | None = None) -> Instruction:
    """``ix`` with account ``index`` re-flagged or replaced by ``key``."""
    accounts = list(ix.accounts)
    m = accounts[index]
    accounts[index] = AccountMeta(key or m.pubkey, is_signer=m.is_signer if signer is None else signer, is_writable=m.is_writable if writable is None else writable)
    return Instruction(ix.program_id, ix.data, accounts)


def account_index(name: str, account: str) -> int:
    return abi.ABI.instruction(name).account_index(account)


def with_data(ix: Instruction, data: bytes) -> Instruction:
    return Instruction(ix.program_id, data, list(ix.accounts))


def with_accounts(ix: Instruction, accounts: list[AccountMeta]) -> Instruction:
    return Instruction(ix.program_id, ix.data, accounts)


@dataclass
class Asset:
    """A mint (SPL Token or Token-2022) and its price feed, priced ``value × 10^exponent``."""

    token: lend.TokenMint
    decimals: int
    feed: Pubkey
    feed_authority: Keypair
    exponent: int
    round: int = 0

    @property
    def mint(self) -> Pubkey:
        return self.token.mint

    @property
    def program(self) -> Pubkey:
        return self.token.token_program


@dataclass
class Strategy:
    address: Pubkey
    lender: Keypair
    strategy_id: int
    terms: lend.Terms
    pledge: list[Asset] = field(default_factory=list)
    borrow: list[Asset] = field(default_factory=list)


@dataclass
class Loan:
    escrow: Pubkey
    borrower: Keypair
    nonce: int
    strategy: Strategy
    pledged: list[Asset]
    borrowed: list[Asset]


class World:
    """A funded payer (mint authority of every asset, fee payer of everything) on ``chain``."""

    _ids = itertools.count(secrets.randbelow(2**40))

    def __init__(self, chain: Client):
        self.chain = chain
        self.payer = funded(chain, 50 * 10**9)

    # --- plumbing -----------------------------------------------------------------------------
    def ok(self, instructions: list[Instruction], signers=()) -> Signature:
        return ok(self.chain, self.payer, instructions, signers)

    def refused(self, instructions, signers=(), *, watch: tuple[Pubkey, ...] = (), **kw) -> str:
        """Refused with nothing changed in ``watch`` (accounts' data and lamports): the
        error's name."""
        before = [self.snapshot(a) for a in watch]
        name = refused(self.chain, self.payer, instructions, signers, **kw)
        assert [self.snapshot(a) for a in watch] == before
        return name

    def snapshot(self, address: Pubkey):
        info = self.chain.get_account_info(address).value
        return None if info is None else (info.lamports, bytes(info.data), info.owner)

    def data(self, address: Pubkey) -> bytes | None:
        info = self.chain.get_account_info(address).value
        return bytes(info.data) if info is not None else None

    def now(self) -> int:
        return node_clock(self.chain)[1]

    def after(self, unix: int) -> int:
        """Wait until the node's clock is past ``unix`` (its Clock moves with wall time, a
        slot at a time); the new time."""
        deadline = time.monotonic() + 10
        while (now := self.now()) <= unix:
            assert time.monotonic() < deadline, "the node's clock did not move"
            time.sleep(0.2)
        return now

    def balance(self, token_account: Pubkey) -> int:
        """A token account's amount, as the RPC's getTokenAccountBalance gives it."""
        return int(self.chain.get_token_account_balance(token_account).value.amount)

    def lamports(self, address: Pubkey) -> int:
        return self.chain.get_balance(address).value

    def rent(self, size: int) -> int:
        return self.chain.get_minimum_balance_for_rent_exemption(size).value

    def keypair(self, lamports: int = 2 * 10**9) -> Keypair:
        return funded(self.chain, lamports)

    # --- assets ---------------------------------------------------------------------------------
    def mint(self, *, program: Pubkey = TOKEN_PROGRAM_ID, decimals: int = 6, frozen_by_default: Keypair | None = None) -> Pubkey:
        """A new mint; ``frozen_by_default``: a Token-2022 mint whose accounts start frozen,
        with that freeze authority."""
        mint = Keypair()
        extensions = {ExtensionType.DEFAULT_ACCOUNT_STATE} if frozen_by_default else set()
        space = mint_space(extensions) if program == TOKEN_2022_PROGRAM_ID else 82
        ixs = [create_account(CreateAccountParams(from_pubkey=self.payer.pubkey(), to_pubkey=mint.pubkey(), lamports=self.rent(space), space=space, owner=program))]
        if frozen_by_default:
            ixs.append(t22.initialize_default_account_state(mint=mint.pubkey(), state=AccountState.FROZEN))
        freeze = frozen_by_default.pubkey() if frozen_by_default else None
        ixs.append(t22.initialize_mint2(mint=mint.pubkey(), decimals=decimals, mint_authority=self.payer.pubkey(), freeze_authority=freeze, program=program))
        self.ok(ixs, [mint])
        return mint.pubkey()

    def feed(self, mint: Pubkey, *, exponent: int = -8, max_staleness: int = 86_400, authority: Keypair | None = None, keypair: Keypair | None = None) -> tuple[Pubkey, Keypair]:
        feed, authority = keypair or Keypair(), authority or Keypair()
        create = feed_client.create_feed_account(PRICE_FEED, payer=self.payer.pubkey(), feed=feed.pubkey(), lamports=self.rent(feed_client.FEED_SIZE))
        init = feed_client.initialize(PRICE_FEED, feed=feed.pubkey(), authority=authority.pubkey(), mint=mint, exponent=exponent, max_staleness=max_staleness, job_hash=feed_client.job_hash(JOB))
        self.ok([create, init], [feed, authority])
        return feed.pubkey(), authority

    def asset(self, price: int, *, program: Pubkey = TOKEN_PROGRAM_ID, decimals: int = 6, exponent: int = -8, frozen_by_default: Keypair | None = None) -> Asset:
        """A mint and its feed, priced ``price × 10^exponent`` per whole token now."""
        mint = self.mint(program=program, decimals=decimals, frozen_by_default=frozen_by_default)
        feed, authority = self.feed(mint, exponent=exponent)
        asset = Asset(lend.TokenMint(mint, program), decimals, feed, authority, exponent)
        self.price(asset, price)
        return asset

    def price(self, asset: Asset, value: int, *, observed_at: int | None = None) -> None:
        asset.round += 1
        observed_at = self.now() if observed_at is None else observed_at
        update = feed_client.update(PRICE_FEED, feed=asset.feed, authority=asset.feed_authority.pubkey(), round=asset.round, value=value, observed_at=observed_at)
        self.ok([update], [asset.feed_authority])

    def account(self, owner: Pubkey, asset: Asset) -> Pubkey:
        """``owner``'s associated token account of the asset (created when missing)."""
        self.ok([create_idempotent_associated_token_account(self.payer.pubkey(), owner, asset.mint, asset.program)])
        return get_associated_token_address(owner, asset.mint, asset.program)

    def fund(self, owner: Pubkey, asset: Asset, amount: int) -> Pubkey:
        account = self.account(owner, asset)
        self.ok([mint_to_checked(MintToCheckedParams(program_id=asset.program, mint=asset.mint, dest=account, mint_authority=self.payer.pubkey(), amount=amount, decimals=asset.decimals))])
        return account

    # --- strategies -------------------------------------------------------------------------------
    def strategy(self, *, terms: lend.Terms = TERMS, pledge: list[Asset] = (), borrow: list[Asset] = (), liquidity: int = 0, lender: Keypair | None = None, max_age: int = MAX_AGE) -> Strategy:
        """A strategy lending ``borrow`` against ``pledge``, with ``liquidity`` base units of
        each borrowable asset deposited by its lender."""
        lender = lender or self.keypair()
        strategy_id = next(self._ids)
        address = lend.strategy_address(PROGRAM, lender.pubkey(), strategy_id)[0]
        self.ok([lend.initialize_strategy(PROGRAM, payer=self.payer.pubkey(), lender=lender.pubkey(), strategy_id=strategy_id, oracle_program=PRICE_FEED, terms=terms)], [lender])
        s = Strategy(address, lender, strategy_id, terms)
        for role, assets in ((abi.ROLE_PLEDGE, pledge), (abi.ROLE_BORROW, borrow)):
            for asset in assets:
                self.set_mint(s, asset, role, max_age=max_age)
        for asset in borrow:
            if liquidity:
                self.deposit_liquidity(s, asset, liquidity)
        return s

    def set_mint(self, s: Strategy, asset: Asset, role: int, *, max_age: int = MAX_AGE) -> Signature:
        signature = self.ok([lend.set_mint(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), mint=asset.token, feed=asset.feed, role=role, max_age=max_age)], [s.lender])
        listed = s.pledge if role == abi.ROLE_PLEDGE else s.borrow
        if asset not in listed:
            listed.append(asset)
        return signature

    def deposit_liquidity(self, s: Strategy, asset: Asset, amount: int) -> None:
        source = self.fund(s.lender.pubkey(), asset, amount)
        self.ok([lend.deposit_liquidity(PROGRAM, strategy=s.address, lender=s.lender.pubkey(), source=source, mint=asset.token, amount=amount)], [s.lender])

    def liquidity(self, s: Strategy, asset: Asset) -> Pubkey:
        return lend.associated_token_address(s.address, asset.mint, asset.program)

    def strategy_state(self, s: Strategy) -> lend.Strategy:
        return lend.decode_strategy(self.data(s.address))

    # --- loans ---------------------------------------------------------------------------------------
    def loan_ixs(self, s: Strategy, borrower: Keypair, *, pledges: list[tuple[Asset, int]], borrows: list[tuple[Asset, int]], nonce: int | None = None,
                 expected: lend.Terms | None = None) -> tuple[Loan, list[Instruction]]:
        """CreateLoan, DepositCollateral per pledge, Borrow per borrowed asset: the
        instructions of one Create Loan (the borrower's token accounts must hold the pledges)."""
        nonce = next(self._ids) if nonce is None else nonce
        escrow = lend.escrow_address(PROGRAM, borrower.pubkey(), nonce)[0]
        expected = expected or s.terms
        ixs = [lend.create_loan(PROGRAM, borrower=borrower.pubkey(), nonce=nonce, strategy=s.address, expected_apy=expected.apy_bps, expected_lqt=expected.expected_lqt)]
        for asset, amount in pledges:
            source = get_associated_token_address(borrower.pubkey(), asset.mint, asset.program)
            ixs.append(lend.deposit_collateral(PROGRAM, escrow=escrow, strategy=s.address, borrower=borrower.pubkey(), source=source, mint=asset.token, amount=amount))
        pledged = [a for a, _ in pledges]
        for i, (asset, amount) in enumerate(borrows):
            destination = get_associated_token_address(borrower.pubkey(), asset.mint, asset.program)
            feeds = [a.feed for a in pledged] + [a.feed for a, _ in borrows[:i + 1]]
            ixs.append(lend.borrow(PROGRAM, escrow=escrow, strategy=s.address, borrower=borrower.pubkey(), mint=asset.token, destination=destination, amount=amount, feeds=feeds))
        return Loan(escrow, borrower, nonce, s, pledged, [a for a, _ in borrows]), ixs

    def borrower(self, *holdings: tuple[Asset, int], receives: list[Asset] = ()) -> Keypair:
        """A funded borrower holding ``holdings`` and token accounts for ``receives``."""
        borrower = self.keypair()
        for asset, amount in holdings:
            self.fund(borrower.pubkey(), asset, amount)
        for asset in receives:
            self.account(borrower.pubkey(), asset)
        return borrower

    def open_loan(self, s: Strategy, *, pledges: list[tuple[Asset, int]], borrows: list[tuple[Asset, int]], borrower: Keypair | None = None) -> Loan:
        borrower = borrower or self.borrower(*pledges, receives=[a for a, _ in borrows])
        loan, ixs = self.loan_ixs(s, borrower, pledges=pledges, borrows=borrows)
        self.ok(ixs, [borrower])
        return loan

    def state(self, loan: Loan) -> lend.Loan:
        return lend.decode_loan(self.data(loan.escrow))

    def feeds(self, loan: Loan, s: Strategy | None = None) -> list[Pubkey]:
        """The loan's feeds under ``s`` (default: its strategy), read from the chain."""
        return lend.loan_feeds(self.state(loan), self.strategy_state(s or loan.strategy))

    def escrow_token(self, loan: Loan, asset: Asset) -> Pubkey:
        return lend.associated_token_address(loan.escrow, asset.mint, asset.program)

    def own(self, owner: Keypair | Pubkey, asset: Asset) -> Pubkey:
        owner = owner.pubkey() if isinstance(owner, Keypair) else owner
        return get_associated_token_address(owner, asset.mint, asset.program)

    def withdraw_ix(self, loan: Loan, asset: Asset, amount: int, *, feeds: list[Pubkey] | None = None) -> Instruction:
        feeds = self.feeds(loan) if feeds is None else feeds
        return lend.withdraw_collateral(PROGRAM, escrow=loan.escrow, strategy=loan.strategy.address, borrower=loan.borrower.pubkey(), mint=asset.token,
                                        destination=self.own(loan.borrower, asset), amount=amount, feeds=feeds)

    def repay_ix(self, loan: Loan, asset: Asset, amount: int, *, repay_all: bool = False, repayer: Keypair | None = None) -> Instruction:
        repayer = repayer or loan.borrower
        return lend.repay(PROGRAM, escrow=loan.escrow, strategy=loan.strategy.address, repayer=repayer.pubkey(), mint=asset.token,
                          source=self.own(repayer, asset), amount=amount, repay_all=repay_all)

    def borrow_ix(self, loan: Loan, asset: Asset, amount: int, *, feeds: list[Pubkey] | None = None) -> Instruction:
        if feeds is None:
            state = self.state(loan)
            feeds = self.feeds(loan) + ([asset.feed] if all(b.mint != asset.mint for b in state.borrowed) else [])
        return lend.borrow(PROGRAM, escrow=loan.escrow, strategy=loan.strategy.address, borrower=loan.borrower.pubkey(), mint=asset.token,
                           destination=self.own(loan.borrower, asset), amount=amount, feeds=feeds)

    def close_ix(self, loan: Loan, rent_recipient: Pubkey | None = None) -> Instruction:
        state = self.state(loan)
        by_mint = {a.mint: a for a in loan.pledged}
        pledged = [(by_mint[item.mint].token, self.own(loan.borrower, by_mint[item.mint])) for item in state.pledged]
        return lend.close_loan(PROGRAM, escrow=loan.escrow, borrower=loan.borrower.pubkey(), rent_recipient=rent_recipient or loan.borrower.pubkey(), pledged=pledged)


#: The usual market of the lending tests: ACME at $50.00 and USDC at $1.00 (feeds at exponent
#: -8), both with 6 decimals (UNIT).
ACME = 50_00000000
USD = 1_00000000
UNIT = 10**6


def usual_market(world: "World") -> tuple[Asset, Asset, "Strategy"]:
    """ACME (SPL Token) pledged, USDC (Token-2022) lent: a strategy with 100,000 USDC."""
    from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID

    acme = world.asset(ACME)
    usdc = world.asset(USD, program=TOKEN_2022_PROGRAM_ID)
    return acme, usdc, world.strategy(pledge=[acme], borrow=[usdc], liquidity=100_000 * UNIT)


def value_of(amount: int, asset: Asset, price: int, *, round_up: bool = False) -> int:
    return lend.value_units(amount, asset.decimals, price, asset.exponent, round_up=round_up)
