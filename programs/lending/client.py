"""Python side of the lending program: addresses, instruction encoders, account decoders,
the program's arithmetic (interest, values, the loan-to-value rules) and error names, all
from abi.py (the definition the program's header is generated from). Pure functions:
nothing here talks to a cluster.

The program's id on a cluster: ``transactions.programs.require_program_id(cluster,
PROGRAM_NAME)``; on CHAIN_LOCALNET it is the fixed ``LOCALNET_PROGRAM_ID`` the embedded node
loads at genesis. Which instructions make up each spec operation: docs/programs.md,
"lending" ("For the loans API").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from . import abi

PROGRAM_NAME = "lending"
LOCALNET_PROGRAM_ID = Pubkey.from_string("Lending111111111111111111111111111111111111")
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
ASSOCIATED_TOKEN_PROGRAM = Pubkey.from_string("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
ERROR_CODES = {e.name: e.code for e in abi.ERRORS}
INTEREST_DENOMINATOR = abi.BPS * abi.SECONDS_PER_YEAR


# --- addresses ------------------------------------------------------------------------------
def strategy_address(program: Pubkey, lender: Pubkey, strategy_id: int) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_STRATEGY, bytes(lender), strategy_id.to_bytes(8, "little")], program)


def escrow_address(program: Pubkey, borrower: Pubkey, nonce: int) -> tuple[Pubkey, int]:
    return Pubkey.find_program_address([abi.SEED_ESCROW, bytes(borrower), nonce.to_bytes(8, "little")], program)


def associated_token_address(owner: Pubkey, mint: Pubkey, token_program: Pubkey) -> Pubkey:
    """The associated token account of ``owner`` (a strategy or an escrow: both own theirs)."""
    return Pubkey.find_program_address([bytes(owner), bytes(token_program), bytes(mint)], ASSOCIATED_TOKEN_PROGRAM)[0]


@dataclass(frozen=True)
class TokenMint:
    """A mint and its token program (SPL Token or Token-2022)."""

    mint: Pubkey
    token_program: Pubkey


# --- instructions ---------------------------------------------------------------------------
def _instruction(program: Pubkey, name: str, keys: dict[str, Pubkey], rest: list[AccountMeta] = (), **args) -> Instruction:
    spec = abi.ABI.instruction(name)
    metas = [AccountMeta(keys[a.name], is_signer=a.signer, is_writable=a.writable) for a in spec.accounts]
    return Instruction(program, spec.encode(**args), [*metas, *rest])


def _readonly(keys) -> list[AccountMeta]:
    return [AccountMeta(k, is_signer=False, is_writable=False) for k in keys]


@dataclass(frozen=True)
class Terms:
    """A strategy's (or a loan's) terms. ``expected_lqt`` is the spec's expectedLqt."""

    apy_bps: int
    ltv_bps: int
    liquidation_bps: int
    duration_unit: int
    duration_code: int = abi.DURATION_DAYS

    @property
    def expected_lqt(self) -> list[int]:
        return [self.ltv_bps, self.liquidation_bps]

    def args(self) -> dict:
        return {"apy_bps": self.apy_bps, "ltv_bps": self.ltv_bps, "liquidation_bps": self.liquidation_bps,
                "duration_unit": self.duration_unit, "duration_code": self.duration_code}


def expected_values(expected_apy: int, expected_lqt: list[int]) -> dict:
    """The spec's expectedLoanValues {expectedApy, expectedLqt: [ltvBps, liquidationBps]} as
    instruction arguments (ValueError when expectedLqt is not two ratios)."""
    if len(expected_lqt) != 2:
        raise ValueError("expectedLqt holds two ratios in basis points: [loan-to-value, liquidation]")
    return {"expected_apy_bps": expected_apy, "expected_ltv_bps": expected_lqt[0], "expected_liquidation_bps": expected_lqt[1]}


def initialize_strategy(program: Pubkey, *, payer: Pubkey, lender: Pubkey, strategy_id: int, oracle_program: Pubkey, terms: Terms) -> Instruction:
    keys = {"payer": payer, "lender": lender, "strategy": strategy_address(program, lender, strategy_id)[0],
            "oracle_program": oracle_program, "system_program": SYSTEM_PROGRAM}
    return _instruction(program, "InitializeStrategy", keys, strategy_id=strategy_id, **terms.args())


def set_terms(program: Pubkey, *, strategy: Pubkey, lender: Pubkey, terms: Terms) -> Instruction:
    return _instruction(program, "SetTerms", {"strategy": strategy, "lender": lender}, **terms.args())


def set_mint(program: Pubkey, *, strategy: Pubkey, lender: Pubkey, mint: TokenMint, feed: Pubkey, role: int, max_age: int) -> Instruction:
    keys = {"strategy": strategy, "lender": lender, "mint": mint.mint, "feed": feed,
            "token_account": associated_token_address(strategy, mint.mint, mint.token_program), "token_program": mint.token_program,
            "system_program": SYSTEM_PROGRAM, "associated_token_program": ASSOCIATED_TOKEN_PROGRAM}
    return _instruction(program, "SetMint", keys, role=role, max_age=max_age)


def remove_mint(program: Pubkey, *, strategy: Pubkey, lender: Pubkey, mint: Pubkey, role: int) -> Instruction:
    return _instruction(program, "RemoveMint", {"strategy": strategy, "lender": lender, "mint": mint}, role=role)


def deposit_liquidity(program: Pubkey, *, strategy: Pubkey, lender: Pubkey, source: Pubkey, mint: TokenMint, amount: int) -> Instruction:
    keys = {"strategy": strategy, "lender": lender, "source": source, "mint": mint.mint,
            "token_account": associated_token_address(strategy, mint.mint, mint.token_program), "token_program": mint.token_program}
    return _instruction(program, "DepositLiquidity", keys, amount=amount)


def withdraw_liquidity(program: Pubkey, *, strategy: Pubkey, lender: Pubkey, mint: TokenMint, destination: Pubkey, amount: int) -> Instruction:
    keys = {"strategy": strategy, "lender": lender, "token_account": associated_token_address(strategy, mint.mint, mint.token_program),
            "mint": mint.mint, "destination": destination, "token_program": mint.token_program}
    return _instruction(program, "WithdrawLiquidity", keys, amount=amount)


def create_loan(program: Pubkey, *, borrower: Pubkey, nonce: int, strategy: Pubkey, expected_apy: int, expected_lqt: list[int]) -> Instruction:
    keys = {"borrower": borrower, "escrow": escrow_address(program, borrower, nonce)[0], "strategy": strategy, "system_program": SYSTEM_PROGRAM}
    return _instruction(program, "CreateLoan", keys, nonce=nonce, **expected_values(expected_apy, expected_lqt))


def deposit_collateral(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, borrower: Pubkey, source: Pubkey, mint: TokenMint, amount: int) -> Instruction:
    keys = {"escrow": escrow, "strategy": strategy, "borrower": borrower, "source": source, "mint": mint.mint,
            "escrow_token": associated_token_address(escrow, mint.mint, mint.token_program), "token_program": mint.token_program,
            "system_program": SYSTEM_PROGRAM, "associated_token_program": ASSOCIATED_TOKEN_PROGRAM}
    return _instruction(program, "DepositCollateral", keys, amount=amount)


def borrow(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, borrower: Pubkey, mint: TokenMint, destination: Pubkey, amount: int, feeds: list[Pubkey]) -> Instruction:
    """``feeds``: ``loan_feeds`` of the loan as it will be (a new borrowed mint included)."""
    keys = {"escrow": escrow, "strategy": strategy, "borrower": borrower, "mint": mint.mint,
            "liquidity_token": associated_token_address(strategy, mint.mint, mint.token_program), "destination": destination,
            "token_program": mint.token_program}
    return _instruction(program, "Borrow", keys, _readonly(feeds), amount=amount)


def withdraw_collateral(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, borrower: Pubkey, mint: TokenMint, destination: Pubkey, amount: int, feeds: list[Pubkey] = ()) -> Instruction:
    """Swap Collateral's itemsToWithdraw and Repay Loan's itemsToRelease. ``feeds``: the
    loan's (``loan_feeds``; none needed once it owes nothing)."""
    keys = {"escrow": escrow, "strategy": strategy, "borrower": borrower, "mint": mint.mint,
            "escrow_token": associated_token_address(escrow, mint.mint, mint.token_program), "destination": destination,
            "token_program": mint.token_program}
    return _instruction(program, "WithdrawCollateral", keys, _readonly(feeds), amount=amount)


def repay(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, repayer: Pubkey, mint: TokenMint, source: Pubkey, amount: int, repay_all: bool = False) -> Instruction:
    """With ``repay_all`` the whole debt in the mint is paid and ``amount`` is the most the
    repayer accepts to pay (``debt_at`` a little later, plus a margin)."""
    keys = {"escrow": escrow, "repayer": repayer, "mint": mint.mint, "source": source,
            "liquidity_token": associated_token_address(strategy, mint.mint, mint.token_program), "token_program": mint.token_program}
    return _instruction(program, "Repay", keys, amount=amount, repay_all=int(repay_all))


def refinance(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, new_strategy: Pubkey, borrower: Pubkey, borrowed: list[TokenMint], feeds: list[Pubkey], expected_apy: int, expected_lqt: list[int]) -> Instruction:
    """``borrowed``: the loan's borrowed mints in the escrow's order; ``feeds``: the new
    strategy's feeds for the loan (``loan_feeds(escrow, new strategy)``)."""
    rest = []
    for m in borrowed:
        rest += [
            AccountMeta(m.mint, False, False),
            AccountMeta(associated_token_address(new_strategy, m.mint, m.token_program), False, True),
            AccountMeta(associated_token_address(strategy, m.mint, m.token_program), False, True),
            AccountMeta(m.token_program, False, False),
        ]
    keys = {"escrow": escrow, "strategy": strategy, "new_strategy": new_strategy, "borrower": borrower}
    return _instruction(program, "Refinance", keys, rest + _readonly(feeds), **expected_values(expected_apy, expected_lqt))


def liquidate(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, feeds: list[Pubkey] = ()) -> Instruction:
    return _instruction(program, "Liquidate", {"escrow": escrow, "strategy": strategy}, _readonly(feeds))


def claim_collateral(program: Pubkey, *, escrow: Pubkey, strategy: Pubkey, borrower: Pubkey, mint: TokenMint) -> Instruction:
    keys = {"escrow": escrow, "borrower": borrower, "mint": mint.mint,
            "escrow_token": associated_token_address(escrow, mint.mint, mint.token_program),
            "strategy_token": associated_token_address(strategy, mint.mint, mint.token_program), "token_program": mint.token_program}
    return _instruction(program, "ClaimCollateral", keys)


def close_loan(program: Pubkey, *, escrow: Pubkey, borrower: Pubkey, rent_recipient: Pubkey, pledged: list[tuple[TokenMint, Pubkey]] = ()) -> Instruction:
    """``pledged``: (mint, the borrower's destination token account) per pledged item still
    in the escrow, in its order."""
    rest = []
    for m, destination in pledged:
        rest += [
            AccountMeta(m.mint, False, False),
            AccountMeta(associated_token_address(escrow, m.mint, m.token_program), False, True),
            AccountMeta(destination, False, True),
            AccountMeta(m.token_program, False, False),
        ]
    keys = {"escrow": escrow, "borrower": borrower, "rent_recipient": rent_recipient}
    return _instruction(program, "CloseLoan", keys, rest)


# --- accounts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class StrategyMint:
    mint: Pubkey
    feed: Pubkey
    token_account: Pubkey
    token_program: Pubkey
    max_age: int
    decimals: int


@dataclass(frozen=True)
class Strategy:
    lender: Pubkey
    strategy_id: int
    bump: int
    oracle_program: Pubkey
    terms: Terms
    pledge_mints: tuple[StrategyMint, ...]
    borrow_mints: tuple[StrategyMint, ...]

    def mint(self, role: int, mint: Pubkey) -> StrategyMint | None:
        entries = self.pledge_mints if role == abi.ROLE_PLEDGE else self.borrow_mints
        return next((e for e in entries if e.mint == mint), None)


def _strategy_mint(data: bytes, offset: int) -> StrategyMint:
    raw = abi.STRATEGY_MINT.unpack(data, offset)
    return StrategyMint(Pubkey.from_bytes(raw["mint"]), Pubkey.from_bytes(raw["feed"]), Pubkey.from_bytes(raw["token_account"]),
                        Pubkey.from_bytes(raw["token_program"]), raw["max_age"], raw["decimals"])


def decode_strategy(data: bytes) -> Strategy:
    if len(data) != abi.STRATEGY_SIZE:
        raise ValueError(f"a strategy holds {abi.STRATEGY_SIZE} bytes, not {len(data)}")
    head = abi.STRATEGY_STATE.unpack(data)
    if head["kind"] != abi.STRATEGY_KIND or head["version"] != abi.LAYOUT_VERSION:
        raise ValueError("not a loan strategy account")
    size = abi.STRATEGY_MINT.size
    pledge_at = abi.STRATEGY_STATE.size
    borrow_at = pledge_at + size * abi.MAX_PLEDGE_MINTS
    return Strategy(
        lender=Pubkey.from_bytes(head["lender"]), strategy_id=head["strategy_id"], bump=head["bump"],
        oracle_program=Pubkey.from_bytes(head["oracle_program"]),
        terms=Terms(head["apy_bps"], head["ltv_bps"], head["liquidation_bps"], head["duration_unit"], head["duration_code"]),
        pledge_mints=tuple(_strategy_mint(data, pledge_at + size * i) for i in range(head["pledge_count"])),
        borrow_mints=tuple(_strategy_mint(data, borrow_at + size * i) for i in range(head["borrow_count"])),
    )


@dataclass(frozen=True)
class PledgedItem:
    mint: Pubkey
    token_account: Pubkey
    amount: int
    decimals: int


@dataclass(frozen=True)
class BorrowedItem:
    mint: Pubkey
    principal: int
    principal_repaid: int
    interest_accrued: int
    interest_remainder: int
    interest_repaid: int
    decimals: int

    @property
    def principal_outstanding(self) -> int:
        return self.principal - self.principal_repaid

    @property
    def interest_due(self) -> int:
        """Interest owed, rounded up (a non-zero remainder is one more base unit)."""
        return self.interest_accrued - self.interest_repaid + (1 if self.interest_remainder else 0)

    @property
    def debt(self) -> int:
        return self.principal_outstanding + self.interest_due


@dataclass(frozen=True)
class Loan:
    """A decoded loan escrow. ``status``: the spec-side name (ACTIVE, REPAID, LIQUIDATED)."""

    borrower: Pubkey
    strategy: Pubkey
    nonce: int
    bump: int
    status: str
    terms: Terms
    start_time: int
    due_time: int
    last_interest_update_time: int
    pledged: tuple[PledgedItem, ...]
    borrowed: tuple[BorrowedItem, ...]

    @property
    def duration_code(self) -> str:
        return abi.DURATION_CODES[self.terms.duration_code]

    def interest_per_second(self, item: BorrowedItem) -> Decimal:
        """Base units of interest per second on the item's outstanding principal (exact)."""
        return Decimal(item.principal_outstanding * self.terms.apy_bps) / Decimal(INTEREST_DENOMINATOR)

    def at(self, now: int) -> "Loan":
        """The loan with its interest accrued up to ``now`` exactly as the program accrues
        it (an ACTIVE loan; others accrue nothing): what computeEstimatedInterestUntil shows."""
        if self.status != "ACTIVE" or now <= self.last_interest_update_time:
            return self
        seconds = now - self.last_interest_update_time
        items = []
        for b in self.borrowed:
            total = b.principal_outstanding * self.terms.apy_bps * seconds + b.interest_remainder
            whole, remainder = divmod(total, INTEREST_DENOMINATOR)
            items.append(replace(b, interest_accrued=b.interest_accrued + whole, interest_remainder=remainder) if b.principal_outstanding and self.terms.apy_bps else b)
        return replace(self, borrowed=tuple(items), last_interest_update_time=now)

    def debt_at(self, mint: Pubkey, now: int) -> int:
        """Everything owed in ``mint`` at ``now``: what Repay with repay_all pays then."""
        return next(b.debt for b in self.at(now).borrowed if b.mint == mint)

    def owes_anything(self) -> bool:
        return any(b.debt for b in self.borrowed)


_STATUS = {code: name for code, name in abi.STATUS_NAMES.items() if code != abi.STATUS_CLOSED}  # CLOSED is never stored


def decode_loan(data: bytes) -> Loan:
    if len(data) != abi.ESCROW_SIZE:
        raise ValueError(f"a loan escrow holds {abi.ESCROW_SIZE} bytes, not {len(data)}")
    head = abi.LOAN_ESCROW.unpack(data)
    if head["kind"] != abi.ESCROW_KIND or head["version"] != abi.LAYOUT_VERSION or head["status"] not in _STATUS:
        raise ValueError("not a loan escrow account")
    pledged_at = abi.LOAN_ESCROW.size
    borrowed_at = pledged_at + abi.PLEDGED_ITEM.size * abi.MAX_PLEDGED_ITEMS
    pledged = []
    for i in range(head["pledged_count"]):
        raw = abi.PLEDGED_ITEM.unpack(data, pledged_at + abi.PLEDGED_ITEM.size * i)
        pledged.append(PledgedItem(Pubkey.from_bytes(raw["mint"]), Pubkey.from_bytes(raw["token_account"]), raw["amount"], raw["decimals"]))
    borrowed = []
    for i in range(head["borrowed_count"]):
        raw = abi.BORROWED_ITEM.unpack(data, borrowed_at + abi.BORROWED_ITEM.size * i)
        borrowed.append(BorrowedItem(Pubkey.from_bytes(raw["mint"]), raw["principal"], raw["principal_repaid"], raw["interest_accrued"],
                                     raw["interest_remainder"], raw["interest_repaid"], raw["decimals"]))
    return Loan(
        borrower=Pubkey.from_bytes(head["borrower"]), strategy=Pubkey.from_bytes(head["strategy"]), nonce=head["nonce"], bump=head["bump"],
        status=_STATUS[head["status"]],
        terms=Terms(head["apy_bps"], head["ltv_bps"], head["liquidation_bps"], head["duration_unit"], head["duration_code"]),
        start_time=head["start_time"], due_time=head["due_time"], last_interest_update_time=head["last_interest_update_time"],
        pledged=tuple(pledged), borrowed=tuple(borrowed),
    )


def loan_feeds(loan: Loan, strategy: Strategy) -> list[Pubkey]:
    """The feed accounts an LTV-dependent instruction takes after its fixed accounts: the
    strategy's feed of each pledged mint, then of each borrowed mint, in the loan's order
    (KeyError naming a mint the strategy no longer lists)."""
    feeds = []
    for role, items in ((abi.ROLE_PLEDGE, loan.pledged), (abi.ROLE_BORROW, loan.borrowed)):
        for item in items:
            entry = strategy.mint(role, item.mint)
            if entry is None:
                raise KeyError(f"the strategy does not list {item.mint} ({'pledge' if role == abi.ROLE_PLEDGE else 'borrow'})")
            feeds.append(entry.feed)
    return feeds


# --- values -----------------------------------------------------------------------------------
def value_units(amount: int, decimals: int, price_value: int, price_exponent: int, *, round_up: bool) -> int:
    """An amount's value in units of 10^VALUE_EXPONENT quote units, as the program computes
    it (collateral rounded down, debt up)."""
    k = price_exponent - decimals - abi.VALUE_EXPONENT
    raw = amount * price_value
    if k >= 0:
        return raw * 10**k
    whole, rest = divmod(raw, 10**-k)
    return whole + (1 if round_up and rest else 0)


def liquidatable(collateral_units: int, debt_units: int, liquidation_bps: int) -> bool:
    return debt_units * abi.BPS > collateral_units * liquidation_bps


def error_name(code: int) -> str | None:
    """The program's name for Custom(code), or None when the code is not the lending program's."""
    error = abi.ABI.error_by_code(code)
    return error.name if error else None
