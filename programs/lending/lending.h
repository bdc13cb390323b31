/*
 * lending.h: what the lending program's files share (docs/programs.md, "lending"). Layouts,
 * instructions and error codes come from abi.h, generated from abi.py.
 *
 *   lending.c   the entrypoint
 *   common.c    accounts (strategy, escrow, mints, token accounts), 128-bit arithmetic,
 *               interest, feeds and valuation, token CPIs
 *   strategy.c  the lender's instructions
 *   loans.c     the borrower's (and liquidators') instructions
 */
#ifndef LEND_LENDING_H
#define LEND_LENDING_H
/* sbf.h's input deserializer is static: only lending.c calls it. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-function"
#include "abi.h"
#pragma clang diagnostic pop

#define MAX_ACCOUNTS LEND_MAX_ACCOUNTS

typedef struct {
  SolAccountInfo ka[MAX_ACCOUNTS];
  CpiScratch scratch;
} Heap;
#define HEAP ((Heap *)HEAP_START)

/* --- 128-bit unsigned integers (clang's BPF backend has no usable __int128) ------------ */
typedef struct {
  u64 lo;
  u64 hi;
} U128;

void mul64(u64 a, u64 b, U128 *out);
bool add128(U128 *a, const U128 *b);
bool mul128(U128 *a, u64 m);
u64 div128_small(U128 *a, u32 d);
int cmp128(const U128 *a, const U128 *b);

/* --- accounts ----------------------------------------------------------------------------- */
static inline StrategyMint *pledge_mints(StrategyState *s) { return (StrategyMint *)(s + 1); }
static inline StrategyMint *borrow_mints(StrategyState *s) { return pledge_mints(s) + LEND_MAX_PLEDGE_MINTS; }
static inline PledgedItem *pledged_items(LoanEscrow *e) { return (PledgedItem *)(e + 1); }
static inline BorrowedItem *borrowed_items(LoanEscrow *e) { return (BorrowedItem *)(pledged_items(e) + LEND_MAX_PLEDGED_ITEMS); }

u64 load_strategy(const SolParameters *p, const SolAccountInfo *account, StrategyState **out);
u64 load_escrow(const SolParameters *p, const SolAccountInfo *account, LoanEscrow **out);
u64 check_lender(const StrategyState *s, const SolAccountInfo *lender);
/* The strategy's entry of ``mint`` in ``role``, or NULL. */
StrategyMint *strategy_mint(StrategyState *s, u8 role, const SolPubkey *mint);
PledgedItem *find_pledged(LoanEscrow *e, const SolPubkey *mint);
BorrowedItem *find_borrowed(LoanEscrow *e, const SolPubkey *mint);
void remove_pledged(LoanEscrow *e, PledgedItem *item);

/* The mint is an initialized mint of the token program passed with it, which is SPL Token
 * or Token-2022. */
u64 check_mint(const SolAccountInfo *mint, const SolAccountInfo *token_program);
/* The token amount of a token account of either token program (0 when it is not one). */
u64 token_balance(const SolAccountInfo *account);
/* ``account`` is the associated token account of (owner, token program, mint). */
bool is_associated(const SolAccountInfo *account, const SolPubkey *owner, const SolPubkey *token_program, const SolPubkey *mint);
u64 now_unix(i64 *out);

/* --- signing PDAs ------------------------------------------------------------------------ */
typedef struct {
  SolSignerSeed seeds[4];
  SolSignerSeeds signer;
  PdaSigner pda;
} PdaSeeds;
void strategy_signer(StrategyState *s, SolPubkey *key, PdaSeeds *out);
void escrow_signer(LoanEscrow *e, SolPubkey *key, PdaSeeds *out);

/* --- token CPIs -------------------------------------------------------------------------- */
typedef struct {
  const SolParameters *p;
  const SolAccountInfo *mint;
  const SolAccountInfo *token_program;
  SolPubkey *source;
  SolPubkey *destination;
  const PdaSigner *authority; /* seeds NULL: a signer of the transaction */
  u64 amount;
} Move;
u64 move_tokens(const Move *m);
u64 close_token_account(const SolParameters *p, const SolAccountInfo *token_program, SolPubkey *account, SolPubkey *destination, const PdaSigner *authority);
u64 create_associated(const SolParameters *p, const SolAccountInfo *payer, const SolAccountInfo *account, const SolPubkey *owner, const SolAccountInfo *mint);

/* --- interest and value ------------------------------------------------------------------- */
/* Accrues every borrowed item's interest up to ``now`` (an ACTIVE loan). */
u64 accrue_interest(LoanEscrow *e, i64 now);
/* Interest owed in an item, rounded up; everything owed in it; everything the loan owes
 * (in base units summed over mints: only its being zero matters). */
u64 interest_due(const BorrowedItem *b);
u64 item_debt(const BorrowedItem *b, u64 *out);
u64 owes_anything(LoanEscrow *e, bool *out);

typedef struct {
  const SolParameters *p;
  LoanEscrow *escrow;
  StrategyState *strategy;
  u64 first_feed; /* index of the first feed account */
  i64 now;
} Valuation;
/* The loan's collateral (rounded down) and debt (rounded up) in value units, from fresh
 * feeds of ``strategy`` (every refusal a Feed* error). */
u64 valuate(const Valuation *v, U128 *collateral, U128 *debt);
/* debt × 10000 <= collateral × ltv_bps, else LtvExceeded. */
u64 check_ltv(const Valuation *v);
/* A feed account of the strategy's oracle program for ``entry``'s mint, fresh at ``now``. */
u64 check_feed(const StrategyState *s, const StrategyMint *entry, const SolAccountInfo *feed, i64 now, const FeedState **out);

/* --- instructions -------------------------------------------------------------------------- */
u64 initialize_strategy(const SolParameters *p);
u64 set_terms(const SolParameters *p);
u64 set_mint(const SolParameters *p);
u64 remove_mint(const SolParameters *p);
u64 deposit_liquidity(const SolParameters *p);
u64 withdraw_liquidity(const SolParameters *p);
u64 create_loan(const SolParameters *p);
u64 deposit_collateral(const SolParameters *p);
u64 borrow(const SolParameters *p);
u64 withdraw_collateral(const SolParameters *p);
u64 repay(const SolParameters *p);
u64 refinance(const SolParameters *p);
u64 liquidate(const SolParameters *p);
u64 claim_collateral(const SolParameters *p);
u64 close_loan(const SolParameters *p);

#endif
