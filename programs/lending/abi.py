"""ABI of the lending program (docs/programs.md, "lending"): the one definition of its
accounts, instructions and errors; ``abi.h`` is generated from it.

Two kinds of account, both PDAs owned by the program:

- a **loan strategy** (the spec's ``loanStrategyAddress``), PDA ``["loan-strategy", lender,
  strategy_id u64 LE]``: the lender's standing offer. Its terms (APY, loan-to-value and
  liquidation ratios in basis points, duration), the oracle program whose feeds it trusts,
  the mints it accepts as pledges and the mints it lends, each with its price feed and
  maximum feed age. The strategy account itself owns its token accounts (its associated
  token account of every configured mint, created when the mint is configured): the
  liquidity it lends from, where repayments land and where liquidated collateral goes;
- a **loan escrow** (the spec's ``escrow``), PDA ``["loan-escrow", borrower, nonce u64
  LE]``: one loan. Its terms (copied from the strategy when the loan was created or
  refinanced), its times, the pledged items (held in the escrow's associated token
  accounts, which the escrow owns) and the borrowed items (principal, repaid principal,
  interest accrued since ``last_interest_update_time``, repaid interest).

Values: a feed's reading is ``value × 10^exponent`` quote units per whole token; an item's
value is computed in units of ``10^VALUE_EXPONENT`` quote units (collateral rounded down,
debt rounded up). The loan-to-value check is ``debt × 10000 <= collateral × ltv_bps``;
a loan may be liquidated when ``debt × 10000 > collateral × liquidation_bps`` or when it
is overdue. Interest is simple interest on the outstanding principal, per second:
``outstanding × apy_bps × seconds / (10000 × SECONDS_PER_YEAR)``, the remainder carried in
``interest_remainder`` (so accruing often or rarely gives the same interest) and a
non-zero remainder owed as one more base unit (the lender's favour).
"""

from __future__ import annotations

from programs.price_feed import abi as feed_abi
from programs.toolchain.abi import Account, Error, Instruction, ProgramAbi, Struct

SEED_STRATEGY = b"loan-strategy"
SEED_ESCROW = b"loan-escrow"
STRATEGY_KIND = 4
ESCROW_KIND = 5
LAYOUT_VERSION = 1
ERROR_BASE = 7500

#: Accounts one instruction may pass (the program's account views live on its heap).
MAX_ACCOUNTS = 40
#: Mints a strategy accepts as pledges / lends.
MAX_PLEDGE_MINTS = 8
MAX_BORROW_MINTS = 4
#: Items one loan holds.
MAX_PLEDGED_ITEMS = 6
MAX_BORROWED_ITEMS = 3

BPS = 10_000
#: Bounds of the terms: APY up to 1000 %, loan durations of 1 to 3650 days.
MAX_APY_BPS = 100_000
MAX_DURATION_DAYS = 3650
SECONDS_PER_DAY = 86_400
SECONDS_PER_YEAR = 365 * SECONDS_PER_DAY
#: Maximum feed age a strategy may set for a mint (seconds).
MAX_FEED_AGE = 366 * SECONDS_PER_DAY
#: Values are computed in units of 10^VALUE_EXPONENT of the feeds' quote currency.
VALUE_EXPONENT = -12

DURATION_DAYS = 1  # the spec's duration code DAYS
ROLE_PLEDGE = 0
ROLE_BORROW = 1

STATUS_ACTIVE = 1
STATUS_REPAID = 2
STATUS_LIQUIDATED = 3
#: Not seen onchain: CloseLoan deletes the escrow. The service records it once CloseLoan landed.
STATUS_CLOSED = 4
STATUS_NAMES = {STATUS_ACTIVE: "ACTIVE", STATUS_REPAID: "REPAID", STATUS_LIQUIDATED: "LIQUIDATED", STATUS_CLOSED: "CLOSED"}
DURATION_CODES = {DURATION_DAYS: "DAYS"}

STRATEGY_STATE = Struct("StrategyState", [
    ("kind", "u8"),
    ("version", "u8"),
    ("bump", "u8"),
    ("pledge_count", "u8"),
    ("borrow_count", "u8"),
    ("duration_code", "u8"),
    ("_pad", "u8[2]"),
    ("strategy_id", "u64"),
    ("lender", "pubkey"),
    ("oracle_program", "pubkey"),
    ("apy_bps", "u32"),
    ("ltv_bps", "u32"),
    ("liquidation_bps", "u32"),
    ("duration_unit", "u32"),
], doc="Strategy header; MAX_PLEDGE_MINTS then MAX_BORROW_MINTS StrategyMint entries follow it, the first pledge_count / borrow_count in use.")
STRATEGY_MINT = Struct("StrategyMint", [
    ("mint", "pubkey"),
    ("feed", "pubkey"),
    ("token_account", "pubkey"),
    ("token_program", "pubkey"),
    ("max_age", "u32"),
    ("decimals", "u8"),
    ("_pad", "u8[3]"),
], doc="A mint the strategy accepts or lends: its feed, the maximum age of the feed's observation, and the strategy's token account of it.")
STRATEGY_SIZE = STRATEGY_STATE.size + STRATEGY_MINT.size * (MAX_PLEDGE_MINTS + MAX_BORROW_MINTS)

LOAN_ESCROW = Struct("LoanEscrow", [
    ("kind", "u8"),
    ("version", "u8"),
    ("bump", "u8"),
    ("status", "u8"),
    ("pledged_count", "u8"),
    ("borrowed_count", "u8"),
    ("duration_code", "u8"),
    ("_pad", "u8"),
    ("apy_bps", "u32"),
    ("ltv_bps", "u32"),
    ("liquidation_bps", "u32"),
    ("duration_unit", "u32"),
    ("nonce", "u64"),
    ("start_time", "i64"),
    ("due_time", "i64"),
    ("last_interest_update_time", "i64"),
    ("borrower", "pubkey"),
    ("strategy", "pubkey"),
], doc="Loan escrow header; MAX_PLEDGED_ITEMS PledgedItem then MAX_BORROWED_ITEMS BorrowedItem follow it, the first pledged_count / borrowed_count in use.")
PLEDGED_ITEM = Struct("PledgedItem", [
    ("mint", "pubkey"),
    ("token_account", "pubkey"),
    ("amount", "u64"),
    ("decimals", "u8"),
    ("_pad", "u8[7]"),
], doc="Collateral held in the escrow's token account of the mint.")
BORROWED_ITEM = Struct("BorrowedItem", [
    ("mint", "pubkey"),
    ("principal", "u64"),
    ("principal_repaid", "u64"),
    ("interest_accrued", "u64"),
    ("interest_remainder", "u64"),
    ("interest_repaid", "u64"),
    ("decimals", "u8"),
    ("_pad", "u8[7]"),
], doc="Debt in one mint. interest_remainder < 10000 × SECONDS_PER_YEAR is the fraction of a base unit accrued beyond interest_accrued (owed as one unit while non-zero).")
ESCROW_SIZE = LOAN_ESCROW.size + PLEDGED_ITEM.size * MAX_PLEDGED_ITEMS + BORROWED_ITEM.size * MAX_BORROWED_ITEMS

_AMOUNT = [("tag", "u8"), ("_pad", "u8[7]"), ("amount", "u64")]
_TERMS = [("apy_bps", "u32"), ("ltv_bps", "u32"), ("liquidation_bps", "u32"), ("duration_unit", "u32")]
_EXPECTED = [("expected_apy_bps", "u32"), ("expected_ltv_bps", "u32"), ("expected_liquidation_bps", "u32"), ("_pad2", "u32")]
_FEEDS = "the price feeds of the loan's pledged items, then of its borrowed items, in the escrow's order as the instruction leaves it (none needed when the loan owes nothing)"

INSTRUCTIONS = [
    # --- strategies (the lender signs) ---------------------------------------------------
    Instruction(
        "InitializeStrategy", 0,
        Struct("InitializeStrategyArgs", [("tag", "u8"), ("duration_code", "u8"), ("_pad", "u8[6]"), ("strategy_id", "u64"), *_TERMS]),
        (
            Account("payer", writable=True, signer=True, doc="pays the strategy's rent"),
            Account("lender", signer=True, doc="recorded as the strategy's lender (signs every change and liquidity withdrawal)"),
            Account("strategy", writable=True, doc='PDA ["loan-strategy", lender, strategy_id]'),
            Account("oracle_program", doc="the price feed program whose feeds the strategy trusts (executable)"),
            Account("system_program"),
        ),
        doc="Creates a strategy with its terms and no mints.",
    ),
    Instruction(
        "SetTerms", 1,
        Struct("SetTermsArgs", [("tag", "u8"), ("duration_code", "u8"), ("_pad", "u8[6]"), *_TERMS]),
        (
            Account("strategy", writable=True),
            Account("lender", signer=True),
        ),
        doc="Changes the terms offered to new loans and refinancings (existing loans keep theirs).",
    ),
    Instruction(
        "SetMint", 2,
        Struct("SetMintArgs", [("tag", "u8"), ("role", "u8"), ("_pad", "u8[2]"), ("max_age", "u32")]),
        (
            Account("strategy", writable=True),
            Account("lender", writable=True, signer=True, doc="pays the rent of the strategy's token account"),
            Account("mint"),
            Account("feed", doc="a feed of the strategy's oracle program for this mint"),
            Account("token_account", writable=True, doc="the strategy's associated token account of the mint (created when missing)"),
            Account("token_program", doc="the mint's token program"),
            Account("system_program"),
            Account("associated_token_program"),
        ),
        doc="Accepts a mint as pledge (role 0) or lends it (role 1) with its feed and maximum feed age; again for a listed mint, replaces its feed and age.",
    ),
    Instruction(
        "RemoveMint", 3,
        Struct("RemoveMintArgs", [("tag", "u8"), ("role", "u8")]),
        (
            Account("strategy", writable=True),
            Account("lender", signer=True),
            Account("mint"),
        ),
        doc="Stops accepting (role 0) or lending (role 1) a mint; its token account stays.",
    ),
    Instruction(
        "DepositLiquidity", 4,
        Struct("DepositLiquidityArgs", _AMOUNT),
        (
            Account("strategy"),
            Account("lender", signer=True, doc="owner of the source"),
            Account("source", writable=True),
            Account("mint"),
            Account("token_account", writable=True, doc="the strategy's token account of the mint"),
            Account("token_program"),
        ),
        doc="Moves the lender's tokens into the strategy's token account of a listed mint.",
    ),
    Instruction(
        "WithdrawLiquidity", 5,
        Struct("WithdrawLiquidityArgs", _AMOUNT),
        (
            Account("strategy"),
            Account("lender", signer=True),
            Account("token_account", writable=True, doc="the strategy's associated token account of the mint"),
            Account("mint"),
            Account("destination", writable=True),
            Account("token_program"),
        ),
        doc="Moves tokens out of the strategy's associated token account of any mint (liquidity, repayments, liquidated collateral), signed by the strategy.",
    ),
    # --- loans -----------------------------------------------------------------------------
    Instruction(
        "CreateLoan", 8,
        Struct("CreateLoanArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("nonce", "u64"), *_EXPECTED]),
        (
            Account("borrower", writable=True, signer=True, doc="pays the escrow's rent"),
            Account("escrow", writable=True, doc='PDA ["loan-escrow", borrower, nonce]'),
            Account("strategy"),
            Account("system_program"),
        ),
        doc="Opens a loan on the strategy's current terms, which must equal the expected ones; DepositCollateral and Borrow follow in the same transaction.",
    ),
    Instruction(
        "DepositCollateral", 9,
        Struct("DepositCollateralArgs", _AMOUNT),
        (
            Account("escrow", writable=True),
            Account("strategy"),
            Account("borrower", writable=True, signer=True, doc="owner of the source; pays the escrow token account's rent"),
            Account("source", writable=True),
            Account("mint", doc="a mint the strategy accepts as pledge"),
            Account("escrow_token", writable=True, doc="the escrow's associated token account of the mint (created when missing)"),
            Account("token_program"),
            Account("system_program"),
            Account("associated_token_program"),
        ),
        doc="Pledges tokens into the escrow (an item per mint; what arrives is recorded).",
    ),
    Instruction(
        "Borrow", 10,
        Struct("BorrowArgs", _AMOUNT),
        (
            Account("escrow", writable=True),
            Account("strategy"),
            Account("borrower", signer=True),
            Account("mint", doc="a mint the strategy lends"),
            Account("liquidity_token", writable=True, doc="the strategy's token account of the mint"),
            Account("destination", writable=True, doc="receives the borrowed tokens"),
            Account("token_program"),
        ),
        doc="Lends tokens from the strategy to the borrower; the loan-to-value ratio is checked afterwards against fresh feeds.",
        rest=_FEEDS,
    ),
    Instruction(
        "WithdrawCollateral", 11,
        Struct("WithdrawCollateralArgs", _AMOUNT),
        (
            Account("escrow", writable=True),
            Account("strategy"),
            Account("borrower", writable=True, signer=True, doc="receives the rent of an emptied escrow token account"),
            Account("mint"),
            Account("escrow_token", writable=True),
            Account("destination", writable=True),
            Account("token_program"),
        ),
        doc="Releases collateral to the borrower: when the loan owes something, the loan-to-value ratio must hold afterwards. An item withdrawn in full is removed and its token account closed.",
        rest=_FEEDS,
    ),
    Instruction(
        "Repay", 12,
        Struct("RepayArgs", [("tag", "u8"), ("repay_all", "u8"), ("_pad", "u8[6]"), ("amount", "u64")]),
        (
            Account("escrow", writable=True),
            Account("repayer", signer=True, doc="owner of the source (anyone may repay)"),
            Account("mint"),
            Account("source", writable=True),
            Account("liquidity_token", writable=True, doc="the associated token account of the loan's strategy for the mint"),
            Account("token_program"),
        ),
        doc="Pays debt in one mint, interest first: `amount` exactly, or with repay_all the whole debt of the mint, `amount` being the most the repayer accepts to pay. The loan is REPAID once it owes nothing.",
    ),
    Instruction(
        "Refinance", 13,
        Struct("RefinanceArgs", [("tag", "u8"), ("_pad", "u8[7]"), *_EXPECTED]),
        (
            Account("escrow", writable=True),
            Account("strategy", doc="the loan's strategy"),
            Account("new_strategy", doc="the strategy taking the loan over (may be the same: a renewal)"),
            Account("borrower", signer=True),
        ),
        doc=("The new strategy pays the loan's strategy everything owed (per borrowed mint); the debt becomes principal under the new strategy's terms, "
             "which must equal the expected ones, from now; the loan-to-value ratio is checked with the new strategy's feeds."),
        rest=("per borrowed item in the escrow's order: mint, the new strategy's token account (w), the loan strategy's associated token account (w), token program; "
              "then the new strategy's feeds for the loan's pledged items, then its borrowed items"),
    ),
    Instruction(
        "Liquidate", 14,
        Struct("LiquidateArgs", [("tag", "u8")]),
        (
            Account("escrow", writable=True),
            Account("strategy"),
        ),
        doc="Anyone may liquidate a loan that is overdue or whose debt exceeds its collateral × liquidation ratio (fresh feeds): its debt is settled by its collateral, which ClaimCollateral moves to the strategy.",
        rest="the loan's feeds as Borrow takes them (none needed once the loan is overdue)",
    ),
    Instruction(
        "ClaimCollateral", 15,
        Struct("ClaimCollateralArgs", [("tag", "u8")]),
        (
            Account("escrow", writable=True),
            Account("borrower", writable=True, doc="the loan's borrower: receives the escrow token account's rent"),
            Account("mint"),
            Account("escrow_token", writable=True),
            Account("strategy_token", writable=True, doc="the associated token account of the loan's strategy for the mint"),
            Account("token_program"),
        ),
        doc="Moves one pledged item of a liquidated loan to the strategy and closes its escrow token account (anyone may send it).",
    ),
    Instruction(
        "CloseLoan", 16,
        Struct("CloseLoanArgs", [("tag", "u8")]),
        (
            Account("escrow", writable=True),
            Account("borrower", signer=True),
            Account("rent_recipient", writable=True, doc="receives the rent of the escrow and its token accounts (the borrower or transferRentRefundTo)"),
        ),
        doc="Closes a loan that owes nothing: remaining collateral back to the borrower, the escrow's token accounts and the escrow closed, their rent to the recipient.",
        rest="per pledged item in the escrow's order: mint, escrow token account (w), destination token account of the borrower (w), token program",
    ),
]

_ERRORS = [
    ("InvalidInstruction", "unknown instruction or data of the wrong length"),
    ("NotEnoughAccounts", "fewer accounts than the instruction lists"),
    ("TooManyAccounts", f"more accounts than the program reads ({MAX_ACCOUNTS})"),
    ("PayerNotSigner", "the payer did not sign"),
    ("PayerNotWritable", "the payer is not writable"),
    ("WrongSystemProgram", "the system program account is not the System program"),
    ("WrongTokenProgram", "the token program is not SPL Token or Token-2022, or not the mint's"),
    ("WrongAssociatedTokenProgram", "the associated token program account is not the Associated Token Account program"),
    ("LenderNotSigner", "the strategy's lender did not sign"),
    ("LenderMismatch", "the signer is not the strategy's lender"),
    ("WrongStrategyAccount", 'the strategy is not the PDA ["loan-strategy", lender, strategy_id]'),
    ("StrategyNotWritable", "the strategy is not writable"),
    ("StrategyAlreadyExists", "the strategy already exists"),
    ("StrategyNotFound", "the strategy does not exist"),
    ("StrategyWrongOwner", "the strategy is not owned by this program"),
    ("StrategyInvalid", "the strategy's data is not a strategy"),
    ("OracleNotExecutable", "the oracle program account is not an executable program"),
    ("InvalidApy", f"the APY is above {MAX_APY_BPS} basis points"),
    ("InvalidRatios", "the ratios are not 0 < ltv_bps < liquidation_bps <= 10000"),
    ("InvalidDuration", f"the duration code is not DAYS ({DURATION_DAYS}) or its unit is not 1..{MAX_DURATION_DAYS} days"),
    ("InvalidRole", "the role is neither pledge (0) nor borrow (1)"),
    ("MintInvalid", "the mint is not an initialized mint of its token program"),
    ("InvalidMaxAge", f"the maximum feed age is not 1..{MAX_FEED_AGE} seconds"),
    ("MintListFull", f"the strategy lists {MAX_PLEDGE_MINTS} pledge or {MAX_BORROW_MINTS} borrowable mints already"),
    ("MintNotListed", "the strategy does not list the mint in that role"),
    ("WrongTokenAccount", "a token account is not the one the strategy or the escrow has for the mint"),
    ("TokenAccountNotWritable", "a token account the instruction moves tokens in or out of is not writable"),
    ("ZeroAmount", "the amount is zero"),
    ("RentUnavailable", "the rent sysvar cannot be read or applied"),
    ("BorrowerNotSigner", "the borrower did not sign"),
    ("BorrowerNotWritable", "the borrower is not writable"),
    ("WrongEscrowAccount", 'the escrow is not the PDA ["loan-escrow", borrower, nonce]'),
    ("EscrowNotWritable", "the escrow is not writable"),
    ("EscrowAlreadyExists", "the escrow already exists"),
    ("EscrowNotFound", "the escrow does not exist (never created, or closed)"),
    ("EscrowWrongOwner", "the escrow is not owned by this program"),
    ("EscrowInvalid", "the escrow's data is not a loan"),
    ("BorrowerMismatch", "the account is not the loan's borrower"),
    ("StrategyMismatch", "the strategy is not the loan's"),
    ("ApyMismatch", "the expected APY is not the strategy's"),
    ("RatiosMismatch", "the expected loan-to-value or liquidation ratio is not the strategy's"),
    ("LoanNotActive", "the loan is not ACTIVE"),
    ("MintNotAccepted", "the strategy does not accept the mint as pledge"),
    ("MintNotBorrowable", "the strategy does not lend the mint"),
    ("PledgedItemsFull", f"the loan holds {MAX_PLEDGED_ITEMS} pledged mints already"),
    ("BorrowedItemsFull", f"the loan holds {MAX_BORROWED_ITEMS} borrowed mints already"),
    ("ItemNotFound", "the loan has no item of the mint"),
    ("InsufficientCollateral", "the amount exceeds the pledged amount"),
    ("InsufficientLiquidity", "the strategy's token account holds less than the amount"),
    ("LoanOverdue", "the loan is past its due time"),
    ("LtvExceeded", "the debt would exceed the collateral's value × the loan-to-value ratio"),
    ("FeedMissing", "fewer feed accounts than the loan's items"),
    ("FeedWrongAccount", "the feed is not the one the strategy lists for the item's mint"),
    ("FeedWrongOwner", "the feed is not owned by the strategy's oracle program (or no longer exists)"),
    ("FeedInvalid", "the feed's data is not a price feed"),
    ("FeedMintMismatch", "the feed prices another mint"),
    ("FeedStale", "the feed has no reading, or its observation is older than the strategy's maximum age"),
    ("FeedNotPositive", "the feed's value is zero or negative"),
    ("MathOverflow", "a value, interest or amount does not fit"),
    ("RepayExceedsDebt", "the amount exceeds what the loan owes in the mint"),
    ("RepayAllExceedsMax", "the debt in the mint exceeds the most the repayer accepts to pay"),
    ("NothingToRepay", "the loan owes nothing in the mint"),
    ("InvalidDestination", "the destination is the account the tokens come from"),
    ("DebtOutstanding", "the loan still owes something"),
    ("CollateralNotClaimed", "the liquidated loan still holds collateral (ClaimCollateral first)"),
    ("NotLiquidatable", "the loan is neither overdue nor beyond its liquidation ratio"),
    ("LoanNotLiquidated", "the loan is not LIQUIDATED"),
    ("RentRecipientNotWritable", "the rent recipient is not writable"),
    ("InvalidRentRecipient", "the rent recipient is the escrow or one of its token accounts"),
    ("ItemAccountsMismatch", "the accounts after the fixed ones do not match the loan's items"),
]
ERRORS = [Error(name, ERROR_BASE + i, message) for i, (name, message) in enumerate(_ERRORS, start=1)]

ABI = ProgramAbi(
    name="lending",
    prefix="LEND",
    doc="Lending: lenders' strategies and borrowers' loan escrows, collateral valued by price feeds.",
    constants={
        "SEED_STRATEGY": SEED_STRATEGY,
        "SEED_ESCROW": SEED_ESCROW,
        "STRATEGY_KIND": STRATEGY_KIND,
        "ESCROW_KIND": ESCROW_KIND,
        "LAYOUT_VERSION": LAYOUT_VERSION,
        "MAX_ACCOUNTS": MAX_ACCOUNTS,
        "MAX_PLEDGE_MINTS": MAX_PLEDGE_MINTS,
        "MAX_BORROW_MINTS": MAX_BORROW_MINTS,
        "MAX_PLEDGED_ITEMS": MAX_PLEDGED_ITEMS,
        "MAX_BORROWED_ITEMS": MAX_BORROWED_ITEMS,
        "STRATEGY_SIZE": STRATEGY_SIZE,
        "ESCROW_SIZE": ESCROW_SIZE,
        "BPS": BPS,
        "MAX_APY_BPS": MAX_APY_BPS,
        "MAX_DURATION_DAYS": MAX_DURATION_DAYS,
        "SECONDS_PER_DAY": SECONDS_PER_DAY,
        "SECONDS_PER_YEAR": SECONDS_PER_YEAR,
        "MAX_FEED_AGE": MAX_FEED_AGE,
        "VALUE_DECIMALS": -VALUE_EXPONENT,
        "DURATION_DAYS": DURATION_DAYS,
        "ROLE_PLEDGE": ROLE_PLEDGE,
        "ROLE_BORROW": ROLE_BORROW,
        "STATUS_ACTIVE": STATUS_ACTIVE,
        "STATUS_REPAID": STATUS_REPAID,
        "STATUS_LIQUIDATED": STATUS_LIQUIDATED,
        "STATUS_CLOSED": STATUS_CLOSED,
        "FEED_KIND": feed_abi.FEED_KIND,
        "FEED_LAYOUT_VERSION": feed_abi.LAYOUT_VERSION,
        "FEED_SIZE": feed_abi.FEED_SIZE,
    },
    structs=[STRATEGY_STATE, STRATEGY_MINT, LOAN_ESCROW, PLEDGED_ITEM, BORROWED_ITEM, feed_abi.FEED_STATE],
    instructions=INSTRUCTIONS,
    errors=ERRORS,
)
