/* Generated from programs/lending/abi.py by programs/toolchain/build.py: do not edit. */
/* Lending: lenders' strategies and borrowers' loan escrows, collateral valued by price feeds. */
#ifndef LEND_ABI_H
#define LEND_ABI_H
#include "sbf.h"

/* --- constants --- */
static const u8 LEND_SEED_STRATEGY[13] __attribute__((aligned(8), unused)) = {0x6c, 0x6f, 0x61, 0x6e, 0x2d, 0x73, 0x74, 0x72, 0x61, 0x74, 0x65, 0x67, 0x79};
#define LEND_SEED_STRATEGY_LEN 13
static const u8 LEND_SEED_ESCROW[11] __attribute__((aligned(8), unused)) = {0x6c, 0x6f, 0x61, 0x6e, 0x2d, 0x65, 0x73, 0x63, 0x72, 0x6f, 0x77};
#define LEND_SEED_ESCROW_LEN 11
#define LEND_STRATEGY_KIND 4ULL
#define LEND_ESCROW_KIND 5ULL
#define LEND_LAYOUT_VERSION 1ULL
#define LEND_MAX_ACCOUNTS 40ULL
#define LEND_MAX_PLEDGE_MINTS 8ULL
#define LEND_MAX_BORROW_MINTS 4ULL
#define LEND_MAX_PLEDGED_ITEMS 6ULL
#define LEND_MAX_BORROWED_ITEMS 3ULL
#define LEND_STRATEGY_SIZE 1728ULL
#define LEND_ESCROW_SIZE 840ULL
#define LEND_BPS 10000ULL
#define LEND_MAX_APY_BPS 100000ULL
#define LEND_MAX_DURATION_DAYS 3650ULL
#define LEND_SECONDS_PER_DAY 86400ULL
#define LEND_SECONDS_PER_YEAR 31536000ULL
#define LEND_MAX_FEED_AGE 31622400ULL
#define LEND_VALUE_DECIMALS 12ULL
#define LEND_DURATION_DAYS 1ULL
#define LEND_ROLE_PLEDGE 0ULL
#define LEND_ROLE_BORROW 1ULL
#define LEND_STATUS_ACTIVE 1ULL
#define LEND_STATUS_REPAID 2ULL
#define LEND_STATUS_LIQUIDATED 3ULL
#define LEND_STATUS_CLOSED 4ULL
#define LEND_FEED_KIND 3ULL
#define LEND_FEED_LAYOUT_VERSION 1ULL
#define LEND_FEED_SIZE 408ULL

/* --- account layouts --- */
/* Strategy header; MAX_PLEDGE_MINTS then MAX_BORROW_MINTS StrategyMint entries follow it, the first pledge_count / borrow_count in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 bump;
  u8 pledge_count;
  u8 borrow_count;
  u8 duration_code;
  u8 _pad[2];
  u64 strategy_id;
  SolPubkey lender;
  SolPubkey oracle_program;
  u32 apy_bps;
  u32 ltv_bps;
  u32 liquidation_bps;
  u32 duration_unit;
} StrategyState;
_Static_assert(sizeof(StrategyState) == 96, "StrategyState size");
_Static_assert(offsetof(StrategyState, kind) == 0, "StrategyState.kind");
_Static_assert(offsetof(StrategyState, version) == 1, "StrategyState.version");
_Static_assert(offsetof(StrategyState, bump) == 2, "StrategyState.bump");
_Static_assert(offsetof(StrategyState, pledge_count) == 3, "StrategyState.pledge_count");
_Static_assert(offsetof(StrategyState, borrow_count) == 4, "StrategyState.borrow_count");
_Static_assert(offsetof(StrategyState, duration_code) == 5, "StrategyState.duration_code");
_Static_assert(offsetof(StrategyState, _pad) == 6, "StrategyState._pad");
_Static_assert(offsetof(StrategyState, strategy_id) == 8, "StrategyState.strategy_id");
_Static_assert(offsetof(StrategyState, lender) == 16, "StrategyState.lender");
_Static_assert(offsetof(StrategyState, oracle_program) == 48, "StrategyState.oracle_program");
_Static_assert(offsetof(StrategyState, apy_bps) == 80, "StrategyState.apy_bps");
_Static_assert(offsetof(StrategyState, ltv_bps) == 84, "StrategyState.ltv_bps");
_Static_assert(offsetof(StrategyState, liquidation_bps) == 88, "StrategyState.liquidation_bps");
_Static_assert(offsetof(StrategyState, duration_unit) == 92, "StrategyState.duration_unit");

/* A mint the strategy accepts or lends: its feed, the maximum age of the feed's observation, and the strategy's token account of it. */
typedef struct {
  SolPubkey mint;
  SolPubkey feed;
  SolPubkey token_account;
  SolPubkey token_program;
  u32 max_age;
  u8 decimals;
  u8 _pad[3];
} StrategyMint;
_Static_assert(sizeof(StrategyMint) == 136, "StrategyMint size");
_Static_assert(offsetof(StrategyMint, mint) == 0, "StrategyMint.mint");
_Static_assert(offsetof(StrategyMint, feed) == 32, "StrategyMint.feed");
_Static_assert(offsetof(StrategyMint, token_account) == 64, "StrategyMint.token_account");
_Static_assert(offsetof(StrategyMint, token_program) == 96, "StrategyMint.token_program");
_Static_assert(offsetof(StrategyMint, max_age) == 128, "StrategyMint.max_age");
_Static_assert(offsetof(StrategyMint, decimals) == 132, "StrategyMint.decimals");
_Static_assert(offsetof(StrategyMint, _pad) == 133, "StrategyMint._pad");

/* Loan escrow header; MAX_PLEDGED_ITEMS PledgedItem then MAX_BORROWED_ITEMS BorrowedItem follow it, the first pledged_count / borrowed_count in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 bump;
  u8 status;
  u8 pledged_count;
  u8 borrowed_count;
  u8 duration_code;
  u8 _pad;
  u32 apy_bps;
  u32 ltv_bps;
  u32 liquidation_bps;
  u32 duration_unit;
  u64 nonce;
  i64 start_time;
  i64 due_time;
  i64 last_interest_update_time;
  SolPubkey borrower;
  SolPubkey strategy;
} LoanEscrow;
_Static_assert(sizeof(LoanEscrow) == 120, "LoanEscrow size");
_Static_assert(offsetof(LoanEscrow, kind) == 0, "LoanEscrow.kind");
_Static_assert(offsetof(LoanEscrow, version) == 1, "LoanEscrow.version");
_Static_assert(offsetof(LoanEscrow, bump) == 2, "LoanEscrow.bump");
_Static_assert(offsetof(LoanEscrow, status) == 3, "LoanEscrow.status");
_Static_assert(offsetof(LoanEscrow, pledged_count) == 4, "LoanEscrow.pledged_count");
_Static_assert(offsetof(LoanEscrow, borrowed_count) == 5, "LoanEscrow.borrowed_count");
_Static_assert(offsetof(LoanEscrow, duration_code) == 6, "LoanEscrow.duration_code");
_Static_assert(offsetof(LoanEscrow, _pad) == 7, "LoanEscrow._pad");
_Static_assert(offsetof(LoanEscrow, apy_bps) == 8, "LoanEscrow.apy_bps");
_Static_assert(offsetof(LoanEscrow, ltv_bps) == 12, "LoanEscrow.ltv_bps");
_Static_assert(offsetof(LoanEscrow, liquidation_bps) == 16, "LoanEscrow.liquidation_bps");
_Static_assert(offsetof(LoanEscrow, duration_unit) == 20, "LoanEscrow.duration_unit");
_Static_assert(offsetof(LoanEscrow, nonce) == 24, "LoanEscrow.nonce");
_Static_assert(offsetof(LoanEscrow, start_time) == 32, "LoanEscrow.start_time");
_Static_assert(offsetof(LoanEscrow, due_time) == 40, "LoanEscrow.due_time");
_Static_assert(offsetof(LoanEscrow, last_interest_update_time) == 48, "LoanEscrow.last_interest_update_time");
_Static_assert(offsetof(LoanEscrow, borrower) == 56, "LoanEscrow.borrower");
_Static_assert(offsetof(LoanEscrow, strategy) == 88, "LoanEscrow.strategy");

/* Collateral held in the escrow's token account of the mint. */
typedef struct {
  SolPubkey mint;
  SolPubkey token_account;
  u64 amount;
  u8 decimals;
  u8 _pad[7];
} PledgedItem;
_Static_assert(sizeof(PledgedItem) == 80, "PledgedItem size");
_Static_assert(offsetof(PledgedItem, mint) == 0, "PledgedItem.mint");
_Static_assert(offsetof(PledgedItem, token_account) == 32, "PledgedItem.token_account");
_Static_assert(offsetof(PledgedItem, amount) == 64, "PledgedItem.amount");
_Static_assert(offsetof(PledgedItem, decimals) == 72, "PledgedItem.decimals");
_Static_assert(offsetof(PledgedItem, _pad) == 73, "PledgedItem._pad");

/* Debt in one mint. interest_remainder < 10000 × SECONDS_PER_YEAR is the fraction of a base unit accrued beyond interest_accrued (owed as one unit while non-zero). */
typedef struct {
  SolPubkey mint;
  u64 principal;
  u64 principal_repaid;
  u64 interest_accrued;
  u64 interest_remainder;
  u64 interest_repaid;
  u8 decimals;
  u8 _pad[7];
} BorrowedItem;
_Static_assert(sizeof(BorrowedItem) == 80, "BorrowedItem size");
_Static_assert(offsetof(BorrowedItem, mint) == 0, "BorrowedItem.mint");
_Static_assert(offsetof(BorrowedItem, principal) == 32, "BorrowedItem.principal");
_Static_assert(offsetof(BorrowedItem, principal_repaid) == 40, "BorrowedItem.principal_repaid");
_Static_assert(offsetof(BorrowedItem, interest_accrued) == 48, "BorrowedItem.interest_accrued");
_Static_assert(offsetof(BorrowedItem, interest_remainder) == 56, "BorrowedItem.interest_remainder");
_Static_assert(offsetof(BorrowedItem, interest_repaid) == 64, "BorrowedItem.interest_repaid");
_Static_assert(offsetof(BorrowedItem, decimals) == 72, "BorrowedItem.decimals");
_Static_assert(offsetof(BorrowedItem, _pad) == 73, "BorrowedItem._pad");

/* Feed header; RING_CAPACITY FeedRingEntry (32 bytes each) follow it, the newest at ring_head, the first ring_len accepted ones in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 ring_len;
  u8 ring_head;
  i32 exponent;
  u64 round;
  i64 value;
  i64 observed_at;
  u64 slot;
  i64 unix_time;
  i64 max_staleness;
  SolPubkey authority;
  SolPubkey mint;
  u8 job_hash[32];
} FeedState;
_Static_assert(sizeof(FeedState) == 152, "FeedState size");
_Static_assert(offsetof(FeedState, kind) == 0, "FeedState.kind");
_Static_assert(offsetof(FeedState, version) == 1, "FeedState.version");
_Static_assert(offsetof(FeedState, ring_len) == 2, "FeedState.ring_len");
_Static_assert(offsetof(FeedState, ring_head) == 3, "FeedState.ring_head");
_Static_assert(offsetof(FeedState, exponent) == 4, "FeedState.exponent");
_Static_assert(offsetof(FeedState, round) == 8, "FeedState.round");
_Static_assert(offsetof(FeedState, value) == 16, "FeedState.value");
_Static_assert(offsetof(FeedState, observed_at) == 24, "FeedState.observed_at");
_Static_assert(offsetof(FeedState, slot) == 32, "FeedState.slot");
_Static_assert(offsetof(FeedState, unix_time) == 40, "FeedState.unix_time");
_Static_assert(offsetof(FeedState, max_staleness) == 48, "FeedState.max_staleness");
_Static_assert(offsetof(FeedState, authority) == 56, "FeedState.authority");
_Static_assert(offsetof(FeedState, mint) == 88, "FeedState.mint");
_Static_assert(offsetof(FeedState, job_hash) == 120, "FeedState.job_hash");

/* --- instructions: selector, data layout, accounts in order --- */
#define LEND_IX_INITIALIZE_STRATEGY 0
typedef struct {
  u8 tag;
  u8 duration_code;
  u8 _pad[6];
  u64 strategy_id;
  u32 apy_bps;
  u32 ltv_bps;
  u32 liquidation_bps;
  u32 duration_unit;
} InitializeStrategyArgs;
_Static_assert(sizeof(InitializeStrategyArgs) == 32, "InitializeStrategyArgs size");
_Static_assert(offsetof(InitializeStrategyArgs, tag) == 0, "InitializeStrategyArgs.tag");
_Static_assert(offsetof(InitializeStrategyArgs, duration_code) == 1, "InitializeStrategyArgs.duration_code");
_Static_assert(offsetof(InitializeStrategyArgs, _pad) == 2, "InitializeStrategyArgs._pad");
_Static_assert(offsetof(InitializeStrategyArgs, strategy_id) == 8, "InitializeStrategyArgs.strategy_id");
_Static_assert(offsetof(InitializeStrategyArgs, apy_bps) == 16, "InitializeStrategyArgs.apy_bps");
_Static_assert(offsetof(InitializeStrategyArgs, ltv_bps) == 20, "InitializeStrategyArgs.ltv_bps");
_Static_assert(offsetof(InitializeStrategyArgs, liquidation_bps) == 24, "InitializeStrategyArgs.liquidation_bps");
_Static_assert(offsetof(InitializeStrategyArgs, duration_unit) == 28, "InitializeStrategyArgs.duration_unit");
enum {
  LEND_INITIALIZE_STRATEGY_PAYER = 0,
  LEND_INITIALIZE_STRATEGY_LENDER = 1,
  LEND_INITIALIZE_STRATEGY_STRATEGY = 2,
  LEND_INITIALIZE_STRATEGY_ORACLE_PROGRAM = 3,
  LEND_INITIALIZE_STRATEGY_SYSTEM_PROGRAM = 4,
  LEND_INITIALIZE_STRATEGY_ACCOUNTS = 5,
};

#define LEND_IX_SET_TERMS 1
typedef struct {
  u8 tag;
  u8 duration_code;
  u8 _pad[6];
  u32 apy_bps;
  u32 ltv_bps;
  u32 liquidation_bps;
  u32 duration_unit;
} SetTermsArgs;
_Static_assert(sizeof(SetTermsArgs) == 24, "SetTermsArgs size");
_Static_assert(offsetof(SetTermsArgs, tag) == 0, "SetTermsArgs.tag");
_Static_assert(offsetof(SetTermsArgs, duration_code) == 1, "SetTermsArgs.duration_code");
_Static_assert(offsetof(SetTermsArgs, _pad) == 2, "SetTermsArgs._pad");
_Static_assert(offsetof(SetTermsArgs, apy_bps) == 8, "SetTermsArgs.apy_bps");
_Static_assert(offsetof(SetTermsArgs, ltv_bps) == 12, "SetTermsArgs.ltv_bps");
_Static_assert(offsetof(SetTermsArgs, liquidation_bps) == 16, "SetTermsArgs.liquidation_bps");
_Static_assert(offsetof(SetTermsArgs, duration_unit) == 20, "SetTermsArgs.duration_unit");
enum {
  LEND_SET_TERMS_STRATEGY = 0,
  LEND_SET_TERMS_LENDER = 1,
  LEND_SET_TERMS_ACCOUNTS = 2,
};

#define LEND_IX_SET_MINT 2
typedef struct {
  u8 tag;
  u8 role;
  u8 _pad[2];
  u32 max_age;
} SetMintArgs;
_Static_assert(sizeof(SetMintArgs) == 8, "SetMintArgs size");
_Static_assert(offsetof(SetMintArgs, tag) == 0, "SetMintArgs.tag");
_Static_assert(offsetof(SetMintArgs, role) == 1, "SetMintArgs.role");
_Static_assert(offsetof(SetMintArgs, _pad) == 2, "SetMintArgs._pad");
_Static_assert(offsetof(SetMintArgs, max_age) == 4, "SetMintArgs.max_age");
enum {
  LEND_SET_MINT_STRATEGY = 0,
  LEND_SET_MINT_LENDER = 1,
  LEND_SET_MINT_MINT = 2,
  LEND_SET_MINT_FEED = 3,
  LEND_SET_MINT_TOKEN_ACCOUNT = 4,
  LEND_SET_MINT_TOKEN_PROGRAM = 5,
  LEND_SET_MINT_SYSTEM_PROGRAM = 6,
  LEND_SET_MINT_ASSOCIATED_TOKEN_PROGRAM = 7,
  LEND_SET_MINT_ACCOUNTS = 8,
};

#define LEND_IX_REMOVE_MINT 3
typedef struct {
  u8 tag;
  u8 role;
} RemoveMintArgs;
_Static_assert(sizeof(RemoveMintArgs) == 2, "RemoveMintArgs size");
_Static_assert(offsetof(RemoveMintArgs, tag) == 0, "RemoveMintArgs.tag");
_Static_assert(offsetof(RemoveMintArgs, role) == 1, "RemoveMintArgs.role");
enum {
  LEND_REMOVE_MINT_STRATEGY = 0,
  LEND_REMOVE_MINT_LENDER = 1,
  LEND_REMOVE_MINT_MINT = 2,
  LEND_REMOVE_MINT_ACCOUNTS = 3,
};

#define LEND_IX_DEPOSIT_LIQUIDITY 4
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 amount;
} DepositLiquidityArgs;
_Static_assert(sizeof(DepositLiquidityArgs) == 16, "DepositLiquidityArgs size");
_Static_assert(offsetof(DepositLiquidityArgs, tag) == 0, "DepositLiquidityArgs.tag");
_Static_assert(offsetof(DepositLiquidityArgs, _pad) == 1, "DepositLiquidityArgs._pad");
_Static_assert(offsetof(DepositLiquidityArgs, amount) == 8, "DepositLiquidityArgs.amount");
enum {
  LEND_DEPOSIT_LIQUIDITY_STRATEGY = 0,
  LEND_DEPOSIT_LIQUIDITY_LENDER = 1,
  LEND_DEPOSIT_LIQUIDITY_SOURCE = 2,
  LEND_DEPOSIT_LIQUIDITY_MINT = 3,
  LEND_DEPOSIT_LIQUIDITY_TOKEN_ACCOUNT = 4,
  LEND_DEPOSIT_LIQUIDITY_TOKEN_PROGRAM = 5,
  LEND_DEPOSIT_LIQUIDITY_ACCOUNTS = 6,
};

#define LEND_IX_WITHDRAW_LIQUIDITY 5
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 amount;
} WithdrawLiquidityArgs;
_Static_assert(sizeof(WithdrawLiquidityArgs) == 16, "WithdrawLiquidityArgs size");
_Static_assert(offsetof(WithdrawLiquidityArgs, tag) == 0, "WithdrawLiquidityArgs.tag");
_Static_assert(offsetof(WithdrawLiquidityArgs, _pad) == 1, "WithdrawLiquidityArgs._pad");
_Static_assert(offsetof(WithdrawLiquidityArgs, amount) == 8, "WithdrawLiquidityArgs.amount");
enum {
  LEND_WITHDRAW_LIQUIDITY_STRATEGY = 0,
  LEND_WITHDRAW_LIQUIDITY_LENDER = 1,
  LEND_WITHDRAW_LIQUIDITY_TOKEN_ACCOUNT = 2,
  LEND_WITHDRAW_LIQUIDITY_MINT = 3,
  LEND_WITHDRAW_LIQUIDITY_DESTINATION = 4,
  LEND_WITHDRAW_LIQUIDITY_TOKEN_PROGRAM = 5,
  LEND_WITHDRAW_LIQUIDITY_ACCOUNTS = 6,
};

#define LEND_IX_CREATE_LOAN 8
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 nonce;
  u32 expected_apy_bps;
  u32 expected_ltv_bps;
  u32 expected_liquidation_bps;
  u32 _pad2;
} CreateLoanArgs;
_Static_assert(sizeof(CreateLoanArgs) == 32, "CreateLoanArgs size");
_Static_assert(offsetof(CreateLoanArgs, tag) == 0, "CreateLoanArgs.tag");
_Static_assert(offsetof(CreateLoanArgs, _pad) == 1, "CreateLoanArgs._pad");
_Static_assert(offsetof(CreateLoanArgs, nonce) == 8, "CreateLoanArgs.nonce");
_Static_assert(offsetof(CreateLoanArgs, expected_apy_bps) == 16, "CreateLoanArgs.expected_apy_bps");
_Static_assert(offsetof(CreateLoanArgs, expected_ltv_bps) == 20, "CreateLoanArgs.expected_ltv_bps");
_Static_assert(offsetof(CreateLoanArgs, expected_liquidation_bps) == 24, "CreateLoanArgs.expected_liquidation_bps");
_Static_assert(offsetof(CreateLoanArgs, _pad2) == 28, "CreateLoanArgs._pad2");
enum {
  LEND_CREATE_LOAN_BORROWER = 0,
  LEND_CREATE_LOAN_ESCROW = 1,
  LEND_CREATE_LOAN_STRATEGY = 2,
  LEND_CREATE_LOAN_SYSTEM_PROGRAM = 3,
  LEND_CREATE_LOAN_ACCOUNTS = 4,
};

#define LEND_IX_DEPOSIT_COLLATERAL 9
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 amount;
} DepositCollateralArgs;
_Static_assert(sizeof(DepositCollateralArgs) == 16, "DepositCollateralArgs size");
_Static_assert(offsetof(DepositCollateralArgs, tag) == 0, "DepositCollateralArgs.tag");
_Static_assert(offsetof(DepositCollateralArgs, _pad) == 1, "DepositCollateralArgs._pad");
_Static_assert(offsetof(DepositCollateralArgs, amount) == 8, "DepositCollateralArgs.amount");
enum {
  LEND_DEPOSIT_COLLATERAL_ESCROW = 0,
  LEND_DEPOSIT_COLLATERAL_STRATEGY = 1,
  LEND_DEPOSIT_COLLATERAL_BORROWER = 2,
  LEND_DEPOSIT_COLLATERAL_SOURCE = 3,
  LEND_DEPOSIT_COLLATERAL_MINT = 4,
  LEND_DEPOSIT_COLLATERAL_ESCROW_TOKEN = 5,
  LEND_DEPOSIT_COLLATERAL_TOKEN_PROGRAM = 6,
  LEND_DEPOSIT_COLLATERAL_SYSTEM_PROGRAM = 7,
  LEND_DEPOSIT_COLLATERAL_ASSOCIATED_TOKEN_PROGRAM = 8,
  LEND_DEPOSIT_COLLATERAL_ACCOUNTS = 9,
};

#define LEND_IX_BORROW 10
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 amount;
} BorrowArgs;
_Static_assert(sizeof(BorrowArgs) == 16, "BorrowArgs size");
_Static_assert(offsetof(BorrowArgs, tag) == 0, "BorrowArgs.tag");
_Static_assert(offsetof(BorrowArgs, _pad) == 1, "BorrowArgs._pad");
_Static_assert(offsetof(BorrowArgs, amount) == 8, "BorrowArgs.amount");
enum {
  LEND_BORROW_ESCROW = 0,
  LEND_BORROW_STRATEGY = 1,
  LEND_BORROW_BORROWER = 2,
  LEND_BORROW_MINT = 3,
  LEND_BORROW_LIQUIDITY_TOKEN = 4,
  LEND_BORROW_DESTINATION = 5,
  LEND_BORROW_TOKEN_PROGRAM = 6,
  LEND_BORROW_ACCOUNTS = 7,
};

#define LEND_IX_WITHDRAW_COLLATERAL 11
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 amount;
} WithdrawCollateralArgs;
_Static_assert(sizeof(WithdrawCollateralArgs) == 16, "WithdrawCollateralArgs size");
_Static_assert(offsetof(WithdrawCollateralArgs, tag) == 0, "WithdrawCollateralArgs.tag");
_Static_assert(offsetof(WithdrawCollateralArgs, _pad) == 1, "WithdrawCollateralArgs._pad");
_Static_assert(offsetof(WithdrawCollateralArgs, amount) == 8, "WithdrawCollateralArgs.amount");
enum {
  LEND_WITHDRAW_COLLATERAL_ESCROW = 0,
  LEND_WITHDRAW_COLLATERAL_STRATEGY = 1,
  LEND_WITHDRAW_COLLATERAL_BORROWER = 2,
  LEND_WITHDRAW_COLLATERAL_MINT = 3,
  LEND_WITHDRAW_COLLATERAL_ESCROW_TOKEN = 4,
  LEND_WITHDRAW_COLLATERAL_DESTINATION = 5,
  LEND_WITHDRAW_COLLATERAL_TOKEN_PROGRAM = 6,
  LEND_WITHDRAW_COLLATERAL_ACCOUNTS = 7,
};

#define LEND_IX_REPAY 12
typedef struct {
  u8 tag;
  u8 repay_all;
  u8 _pad[6];
  u64 amount;
} RepayArgs;
_Static_assert(sizeof(RepayArgs) == 16, "RepayArgs size");
_Static_assert(offsetof(RepayArgs, tag) == 0, "RepayArgs.tag");
_Static_assert(offsetof(RepayArgs, repay_all) == 1, "RepayArgs.repay_all");
_Static_assert(offsetof(RepayArgs, _pad) == 2, "RepayArgs._pad");
_Static_assert(offsetof(RepayArgs, amount) == 8, "RepayArgs.amount");
enum {
  LEND_REPAY_ESCROW = 0,
  LEND_REPAY_REPAYER = 1,
  LEND_REPAY_MINT = 2,
  LEND_REPAY_SOURCE = 3,
  LEND_REPAY_LIQUIDITY_TOKEN = 4,
  LEND_REPAY_TOKEN_PROGRAM = 5,
  LEND_REPAY_ACCOUNTS = 6,
};

#define LEND_IX_REFINANCE 13
typedef struct {
  u8 tag;
  u8 _pad[7];
  u32 expected_apy_bps;
  u32 expected_ltv_bps;
  u32 expected_liquidation_bps;
  u32 _pad2;
} RefinanceArgs;
_Static_assert(sizeof(RefinanceArgs) == 24, "RefinanceArgs size");
_Static_assert(offsetof(RefinanceArgs, tag) == 0, "RefinanceArgs.tag");
_Static_assert(offsetof(RefinanceArgs, _pad) == 1, "RefinanceArgs._pad");
_Static_assert(offsetof(RefinanceArgs, expected_apy_bps) == 8, "RefinanceArgs.expected_apy_bps");
_Static_assert(offsetof(RefinanceArgs, expected_ltv_bps) == 12, "RefinanceArgs.expected_ltv_bps");
_Static_assert(offsetof(RefinanceArgs, expected_liquidation_bps) == 16, "RefinanceArgs.expected_liquidation_bps");
_Static_assert(offsetof(RefinanceArgs, _pad2) == 20, "RefinanceArgs._pad2");
enum {
  LEND_REFINANCE_ESCROW = 0,
  LEND_REFINANCE_STRATEGY = 1,
  LEND_REFINANCE_NEW_STRATEGY = 2,
  LEND_REFINANCE_BORROWER = 3,
  LEND_REFINANCE_ACCOUNTS = 4,
};

#define LEND_IX_LIQUIDATE 14
typedef struct {
  u8 tag;
} LiquidateArgs;
_Static_assert(sizeof(LiquidateArgs) == 1, "LiquidateArgs size");
_Static_assert(offsetof(LiquidateArgs, tag) == 0, "LiquidateArgs.tag");
enum {
  LEND_LIQUIDATE_ESCROW = 0,
  LEND_LIQUIDATE_STRATEGY = 1,
  LEND_LIQUIDATE_ACCOUNTS = 2,
};

#define LEND_IX_CLAIM_COLLATERAL 15
typedef struct {
  u8 tag;
} ClaimCollateralArgs;
_Static_assert(sizeof(ClaimCollateralArgs) == 1, "ClaimCollateralArgs size");
_Static_assert(offsetof(ClaimCollateralArgs, tag) == 0, "ClaimCollateralArgs.tag");
enum {
  LEND_CLAIM_COLLATERAL_ESCROW = 0,
  LEND_CLAIM_COLLATERAL_BORROWER = 1,
  LEND_CLAIM_COLLATERAL_MINT = 2,
  LEND_CLAIM_COLLATERAL_ESCROW_TOKEN = 3,
  LEND_CLAIM_COLLATERAL_STRATEGY_TOKEN = 4,
  LEND_CLAIM_COLLATERAL_TOKEN_PROGRAM = 5,
  LEND_CLAIM_COLLATERAL_ACCOUNTS = 6,
};

#define LEND_IX_CLOSE_LOAN 16
typedef struct {
  u8 tag;
} CloseLoanArgs;
_Static_assert(sizeof(CloseLoanArgs) == 1, "CloseLoanArgs size");
_Static_assert(offsetof(CloseLoanArgs, tag) == 0, "CloseLoanArgs.tag");
enum {
  LEND_CLOSE_LOAN_ESCROW = 0,
  LEND_CLOSE_LOAN_BORROWER = 1,
  LEND_CLOSE_LOAN_RENT_RECIPIENT = 2,
  LEND_CLOSE_LOAN_ACCOUNTS = 3,
};

/* --- custom errors (Custom(code)) --- */
#define LEND_ERR_INVALID_INSTRUCTION 7501 /* unknown instruction or data of the wrong length */
#define LEND_ERR_NOT_ENOUGH_ACCOUNTS 7502 /* fewer accounts than the instruction lists */
#define LEND_ERR_TOO_MANY_ACCOUNTS 7503 /* more accounts than the program reads (40) */
#define LEND_ERR_PAYER_NOT_SIGNER 7504 /* the payer did not sign */
#define LEND_ERR_PAYER_NOT_WRITABLE 7505 /* the payer is not writable */
#define LEND_ERR_WRONG_SYSTEM_PROGRAM 7506 /* the system program account is not the System program */
#define LEND_ERR_WRONG_TOKEN_PROGRAM 7507 /* the token program is not SPL Token or Token-2022, or not the mint's */
#define LEND_ERR_WRONG_ASSOCIATED_TOKEN_PROGRAM 7508 /* the associated token program account is not the Associated Token Account program */
#define LEND_ERR_LENDER_NOT_SIGNER 7509 /* the strategy's lender did not sign */
#define LEND_ERR_LENDER_MISMATCH 7510 /* the signer is not the strategy's lender */
#define LEND_ERR_WRONG_STRATEGY_ACCOUNT 7511 /* the strategy is not the PDA ["loan-strategy", lender, strategy_id] */
#define LEND_ERR_STRATEGY_NOT_WRITABLE 7512 /* the strategy is not writable */
#define LEND_ERR_STRATEGY_ALREADY_EXISTS 7513 /* the strategy already exists */
#define LEND_ERR_STRATEGY_NOT_FOUND 7514 /* the strategy does not exist */
#define LEND_ERR_STRATEGY_WRONG_OWNER 7515 /* the strategy is not owned by this program */
#define LEND_ERR_STRATEGY_INVALID 7516 /* the strategy's data is not a strategy */
#define LEND_ERR_ORACLE_NOT_EXECUTABLE 7517 /* the oracle program account is not an executable program */
#define LEND_ERR_INVALID_APY 7518 /* the APY is above 100000 basis points */
#define LEND_ERR_INVALID_RATIOS 7519 /* the ratios are not 0 < ltv_bps < liquidation_bps <= 10000 */
#define LEND_ERR_INVALID_DURATION 7520 /* the duration code is not DAYS (1) or its unit is not 1..3650 days */
#define LEND_ERR_INVALID_ROLE 7521 /* the role is neither pledge (0) nor borrow (1) */
#define LEND_ERR_MINT_INVALID 7522 /* the mint is not an initialized mint of its token program */
#define LEND_ERR_INVALID_MAX_AGE 7523 /* the maximum feed age is not 1..31622400 seconds */
#define LEND_ERR_MINT_LIST_FULL 7524 /* the strategy lists 8 pledge or 4 borrowable mints already */
#define LEND_ERR_MINT_NOT_LISTED 7525 /* the strategy does not list the mint in that role */
#define LEND_ERR_WRONG_TOKEN_ACCOUNT 7526 /* a token account is not the one the strategy or the escrow has for the mint */
#define LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE 7527 /* a token account the instruction moves tokens in or out of is not writable */
#define LEND_ERR_ZERO_AMOUNT 7528 /* the amount is zero */
#define LEND_ERR_RENT_UNAVAILABLE 7529 /* the rent sysvar cannot be read or applied */
#define LEND_ERR_BORROWER_NOT_SIGNER 7530 /* the borrower did not sign */
#define LEND_ERR_BORROWER_NOT_WRITABLE 7531 /* the borrower is not writable */
#define LEND_ERR_WRONG_ESCROW_ACCOUNT 7532 /* the escrow is not the PDA ["loan-escrow", borrower, nonce] */
#define LEND_ERR_ESCROW_NOT_WRITABLE 7533 /* the escrow is not writable */
#define LEND_ERR_ESCROW_ALREADY_EXISTS 7534 /* the escrow already exists */
#define LEND_ERR_ESCROW_NOT_FOUND 7535 /* the escrow does not exist (never created, or closed) */
#define LEND_ERR_ESCROW_WRONG_OWNER 7536 /* the escrow is not owned by this program */
#define LEND_ERR_ESCROW_INVALID 7537 /* the escrow's data is not a loan */
#define LEND_ERR_BORROWER_MISMATCH 7538 /* the account is not the loan's borrower */
#define LEND_ERR_STRATEGY_MISMATCH 7539 /* the strategy is not the loan's */
#define LEND_ERR_APY_MISMATCH 7540 /* the expected APY is not the strategy's */
#define LEND_ERR_RATIOS_MISMATCH 7541 /* the expected loan-to-value or liquidation ratio is not the strategy's */
#define LEND_ERR_LOAN_NOT_ACTIVE 7542 /* the loan is not ACTIVE */
#define LEND_ERR_MINT_NOT_ACCEPTED 7543 /* the strategy does not accept the mint as pledge */
#define LEND_ERR_MINT_NOT_BORROWABLE 7544 /* the strategy does not lend the mint */
#define LEND_ERR_PLEDGED_ITEMS_FULL 7545 /* the loan holds 6 pledged mints already */
#define LEND_ERR_BORROWED_ITEMS_FULL 7546 /* the loan holds 3 borrowed mints already */
#define LEND_ERR_ITEM_NOT_FOUND 7547 /* the loan has no item of the mint */
#define LEND_ERR_INSUFFICIENT_COLLATERAL 7548 /* the amount exceeds the pledged amount */
#define LEND_ERR_INSUFFICIENT_LIQUIDITY 7549 /* the strategy's token account holds less than the amount */
#define LEND_ERR_LOAN_OVERDUE 7550 /* the loan is past its due time */
#define LEND_ERR_LTV_EXCEEDED 7551 /* the debt would exceed the collateral's value × the loan-to-value ratio */
#define LEND_ERR_FEED_MISSING 7552 /* fewer feed accounts than the loan's items */
#define LEND_ERR_FEED_WRONG_ACCOUNT 7553 /* the feed is not the one the strategy lists for the item's mint */
#define LEND_ERR_FEED_WRONG_OWNER 7554 /* the feed is not owned by the strategy's oracle program (or no longer exists) */
#define LEND_ERR_FEED_INVALID 7555 /* the feed's data is not a price feed */
#define LEND_ERR_FEED_MINT_MISMATCH 7556 /* the feed prices another mint */
#define LEND_ERR_FEED_STALE 7557 /* the feed has no reading, or its observation is older than the strategy's maximum age */
#define LEND_ERR_FEED_NOT_POSITIVE 7558 /* the feed's value is zero or negative */
#define LEND_ERR_MATH_OVERFLOW 7559 /* a value, interest or amount does not fit */
#define LEND_ERR_REPAY_EXCEEDS_DEBT 7560 /* the amount exceeds what the loan owes in the mint */
#define LEND_ERR_REPAY_ALL_EXCEEDS_MAX 7561 /* the debt in the mint exceeds the most the repayer accepts to pay */
#define LEND_ERR_NOTHING_TO_REPAY 7562 /* the loan owes nothing in the mint */
#define LEND_ERR_INVALID_DESTINATION 7563 /* the destination is the account the tokens come from */
#define LEND_ERR_DEBT_OUTSTANDING 7564 /* the loan still owes something */
#define LEND_ERR_COLLATERAL_NOT_CLAIMED 7565 /* the liquidated loan still holds collateral (ClaimCollateral first) */
#define LEND_ERR_NOT_LIQUIDATABLE 7566 /* the loan is neither overdue nor beyond its liquidation ratio */
#define LEND_ERR_LOAN_NOT_LIQUIDATED 7567 /* the loan is not LIQUIDATED */
#define LEND_ERR_RENT_RECIPIENT_NOT_WRITABLE 7568 /* the rent recipient is not writable */
#define LEND_ERR_INVALID_RENT_RECIPIENT 7569 /* the rent recipient is the escrow or one of its token accounts */
#define LEND_ERR_ITEM_ACCOUNTS_MISMATCH 7570 /* the accounts after the fixed ones do not match the loan's items */

#endif /* LEND_ABI_H */
