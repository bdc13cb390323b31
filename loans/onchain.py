"""The lending program as the loans area uses it: its id on a cluster, the strategy and
escrow accounts as the chain holds them, price feeds, and the arithmetic the program
does — interest and valuation — so reads (Fetch Loan Details, the keeper) can estimate
between confirmed changes (programs/lending/client.py encodes the instructions and
decodes the accounts; docs/programs.md, "lending")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, localcontext

from solders.pubkey import Pubkey

from ledger_project.api.errors import LedgerError
from programs.lending import abi, client
from positions import instructions as ix
from programs.price_feed import client as feed_client
from chain.rpc import rpc_for
from transactions.programs import require_program_id

PROGRAM = client.PROGRAM_NAME
SECONDS_PER_YEAR = abi.SECONDS_PER_YEAR
BPS = abi.BPS
DURATION_CODES = abi.DURATION_CODES
ROLE_PLEDGE, ROLE_BORROW = abi.ROLE_PLEDGE, abi.ROLE_BORROW

#: The request field a lending program error is about (docs/loans.md, "Errors"): the 400
#: PROGRAM_ERROR names it; errors about the whole request name none.
_EXPECTED = "itemData.partnerLendingDetails.expectedLoanValues"
ERROR_FIELDS = {
    "ApyMismatch": f"{_EXPECTED}.expectedApy", "RatiosMismatch": f"{_EXPECTED}.expectedLqt",
    "StrategyNotFound": "itemData.partnerLendingDetails.loanStrategyAddress", "StrategyWrongOwner": "itemData.partnerLendingDetails.loanStrategyAddress",
    "StrategyInvalid": "itemData.partnerLendingDetails.loanStrategyAddress", "StrategyMismatch": "itemData.escrow",
    "MintNotAccepted": "itemData.itemsToPledge", "PledgedItemsFull": "itemData.itemsToPledge",
    "MintNotBorrowable": "itemData.itemsToBorrow", "BorrowedItemsFull": "itemData.itemsToBorrow", "InsufficientLiquidity": "itemData.itemsToBorrow",
    "LtvExceeded": "itemData", "FeedStale": "itemData", "FeedMissing": "itemData", "FeedWrongAccount": "itemData", "FeedNotPositive": "itemData",
    "InsufficientCollateral": "itemData.itemsToWithdraw", "ItemNotFound": "itemData",
    "RepayExceedsDebt": "itemData.itemsToRepay", "RepayAllExceedsMax": "itemData.itemsToRepay", "NothingToRepay": "itemData.itemsToRepay",
    "LoanNotActive": "itemData.escrow", "LoanOverdue": "itemData.escrow", "EscrowNotFound": "itemData.escrow", "DebtOutstanding": "itemData.escrow",
    "CollateralNotClaimed": "itemData.escrow", "BorrowerMismatch": "itemData.borrower", "InvalidRentRecipient": "itemData.transferRentRefundTo",
    "LenderMismatch": "itemData.lender", "InvalidApy": "itemData.terms.apy", "InvalidRatios": "itemData.terms", "InvalidDuration": "itemData.terms.duration",
    "InvalidMaxAge": "itemData", "MintListFull": "itemData", "MintNotListed": "itemData", "StrategyAlreadyExists": "itemData.strategyId",
    "ZeroAmount": "itemData",
}


def program_id(cluster: str) -> Pubkey:
    """The lending program's id on ``cluster`` (400 PROGRAM_NOT_DEPLOYED without one)."""
    return require_program_id(cluster, PROGRAM)


def oracle_program_id(cluster: str) -> Pubkey:
    return require_program_id(cluster, feed_client.PROGRAM_NAME)


def seconds(value: datetime | None) -> int | None:
    return int(value.timestamp()) if value is not None else None


def moment(unix: int | None) -> datetime | None:
    return datetime.fromtimestamp(unix, tz=timezone.utc) if unix else None


# --- accounts as the chain holds them ------------------------------------------------------


def _decoded(account, owner: str, decode):
    """``decode`` of an account's data (None when absent, not ``owner``'s, or not its kind)."""
    if account is None or str(account.owner) != owner:
        return None
    try:
        return decode(bytes(account.data))
    except ValueError:
        return None


def decode_strategy(account, program: str) -> client.Strategy | None:
    return _decoded(account, program, client.decode_strategy)


def decode_loan(account, program: str) -> client.Loan | None:
    """The loan escrow in ``account`` (None when absent — closed — or not a loan)."""
    return _decoded(account, program, client.decode_loan)


def decode_feed(account, oracle: str):
    return _decoded(account, oracle, feed_client.decode_feed)


def read_strategy(cluster: str, address: str, *, field: str):
    """The strategy at ``address`` as the chain holds it now; 400 STRATEGY_NOT_FOUND when
    there is none (the program would refuse the same)."""
    program = program_id(cluster)
    strategy = decode_strategy(rpc_for(cluster).account(Pubkey.from_string(address)), str(program))
    if strategy is None:
        raise LedgerError("No loan strategy of the lending program exists at this address on the cluster.", field=field, code="STRATEGY_NOT_FOUND")
    return strategy


def token_mint(instrument) -> client.TokenMint:
    return client.TokenMint(Pubkey.from_string(instrument.address), ix.program_of(instrument))


def strategy_mint(strategy: client.Strategy, role: int, mint: str) -> client.StrategyMint | None:
    """The strategy's entry for ``mint`` in ``role`` (ROLE_PLEDGE / ROLE_BORROW), or None."""
    return strategy.mint(role, Pubkey.from_string(mint))


def feeds(strategy: client.Strategy, pledged: list[str], borrowed: list[str], *, field: str) -> list[Pubkey]:
    """The feeds an LTV-checked instruction names (client.loan_feeds): the strategy's feed of
    each pledged mint, then of each borrowed mint, in the escrow's order as it will be after
    the instruction; 400 when the strategy does not list one."""
    out = []
    for role, mints, code in ((ROLE_PLEDGE, pledged, "MINT_NOT_ACCEPTED"), (ROLE_BORROW, borrowed, "MINT_NOT_BORROWABLE")):
        for mint in mints:
            entry = strategy_mint(strategy, role, mint)
            if entry is None:
                what = "accept as collateral" if role == ROLE_PLEDGE else "lend"
                raise LedgerError(f"The loan strategy does not {what} the mint {mint}.", field=field, code=code)
            out.append(entry.feed)
    return out


# --- interest (the program's rule, for estimates between confirmed changes) ------------------


def recorded_loan(loan) -> client.Loan:
    """The loan as its records hold it (the chain's state at the last confirmed change), as
    the client's Loan: ``.at(now)`` accrues its interest exactly as the program would."""
    terms = client.Terms(int(loan.apy_bps), int(loan.ltv_bps), int(loan.liquidation_bps), int(loan.duration_unit), abi.DURATION_DAYS)
    borrowed = tuple(
        client.BorrowedItem(Pubkey.from_string(i.mint_address), int(i.principal), int(i.principal_repaid), int(i.interest_accrued), int(i.interest_remainder),
                            int(i.interest_repaid), int(i.instrument.decimals))
        for i in loan.borrowed_items.all()
    )
    pledged = tuple(client.PledgedItem(Pubkey.from_string(i.mint_address), Pubkey.from_string(i.token_account_address), int(i.amount), int(i.instrument.decimals))
                    for i in loan.pledged_items.all())
    return client.Loan(borrower=Pubkey.from_string(loan.borrower_address), strategy=Pubkey.from_string(loan.strategy_address), nonce=int(loan.nonce), bump=0,
                       status=str(loan.status), terms=terms, start_time=seconds(loan.start_time) or 0, due_time=seconds(loan.due_time) or 0,
                       last_interest_update_time=seconds(loan.last_interest_update_time) or 0, pledged=pledged, borrowed=borrowed)


# --- valuation (what the keeper and the loan response show) ---------------------------------


@dataclass(frozen=True)
class Price:
    """A feed's reading for a mint: ``price`` per whole token, ``fresh`` by the strategy's age rule."""

    feed: str
    price: Decimal | None
    observed_at: int | None
    round: int
    fresh: bool
    max_age: int | None
    mantissa: tuple[int, int] = (0, 0)  # (value, exponent) as the feed holds them


def price_of(feed_state, *, feed: str, now: int, max_age: int | None) -> Price:
    """A feed's reading under the program's rule: a reading exists, its observation is at
    most ``max_age`` seconds old by the chain's clock (``now``), its value positive."""
    if feed_state is None or feed_state.round == 0:
        return Price(feed, None, None, 0, False, max_age)
    positive = feed_state.value > 0
    fresh = positive and max_age is not None and not (now > feed_state.observed_at and now - feed_state.observed_at > max_age)
    return Price(feed, feed_state.price if positive else None, feed_state.observed_at, feed_state.round, fresh, max_age, (feed_state.value, feed_state.exponent))


@dataclass(frozen=True)
class Valuation:
    """The loan's collateral and debt in the feeds' quote currency (as the program computes
    them: collateral rounded down, debt up, in units of 10^VALUE_EXPONENT), its loan-to-value
    ratio in basis points, and whether the program would let it be liquidated (``reason``)."""

    collateral: Decimal | None
    debt: Decimal | None
    ltv_bps: Decimal | None
    liquidatable: bool
    reason: str


def valuation(loan: client.Loan, prices: dict[tuple[int, str], Price], *, now: int) -> Valuation:
    """``loan`` accrued to ``now`` is valued with ``prices`` by (role, mint). Overdue loans
    that owe anything are liquidatable whatever the feeds say; otherwise every feed must be
    fresh and positive."""
    loan = loan.at(now)
    owes = loan.owes_anything()
    overdue = owes and loan.status == "ACTIVE" and now >= loan.due_time  # the program: now >= due_time
    items = [(ROLE_PLEDGE, str(i.mint), i.amount, i.decimals) for i in loan.pledged] + [(ROLE_BORROW, str(i.mint), i.debt, i.decimals) for i in loan.borrowed]
    readings = [(role, units, decimals, prices.get((role, mint))) for role, mint, units, decimals in items]
    if any(p is None or p.price is None or not p.fresh for _, _, _, p in readings):
        return Valuation(None, None, None, overdue, "overdue" if overdue else "")
    collateral = debt = 0
    for role, units, decimals, p in readings:
        mantissa, exponent = p.mantissa
        if role == ROLE_PLEDGE:
            collateral += client.value_units(units, decimals, mantissa, exponent, round_up=False)
        else:
            debt += client.value_units(units, decimals, mantissa, exponent, round_up=True)
    beyond = owes and loan.status == "ACTIVE" and client.liquidatable(collateral, debt, loan.terms.liquidation_bps)
    with localcontext() as ctx:
        ctx.prec = 60
        ltv = (Decimal(debt) * BPS / Decimal(collateral)).quantize(Decimal("0.01")) if collateral else None
    reason = "overdue" if overdue else ("beyond the liquidation ratio" if beyond else "")
    return Valuation(Decimal(collateral).scaleb(abi.VALUE_EXPONENT), Decimal(debt).scaleb(abi.VALUE_EXPONENT), ltv, overdue or beyond, reason)
