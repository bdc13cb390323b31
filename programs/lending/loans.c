/*
 * loans.c: the loan instructions (docs/programs.md, "lending"). A loan is built in one
 * transaction from CreateLoan, DepositCollateral per pledged mint and Borrow per borrowed
 * mint; each instruction that adds risk (Borrow, WithdrawCollateral, Refinance) checks the
 * loan-to-value ratio against fresh feeds in the instruction that moves the tokens.
 */
#include "lending.h"

/* The loan in ``escrow`` and, when ``strategy`` is given, that it is the loan's strategy
 * (loaded into ``*s`` when ``s`` is not NULL). */
static u64 load_loan(const SolParameters *p, const SolAccountInfo *escrow, const SolAccountInfo *strategy, LoanEscrow **e, StrategyState **s) {
  u64 r = load_escrow(p, escrow, e);
  if (r) return r;
  if (strategy == NULL) return SUCCESS;
  if (!pubkey_eq(strategy->key, &(*e)->strategy)) return LEND_ERR_STRATEGY_MISMATCH;
  return s ? load_strategy(p, strategy, s) : SUCCESS;
}

static u64 check_borrower(const LoanEscrow *e, const SolAccountInfo *borrower, bool writable) {
  if (!pubkey_eq(borrower->key, &e->borrower)) return LEND_ERR_BORROWER_MISMATCH;
  if (!borrower->is_signer) return LEND_ERR_BORROWER_NOT_SIGNER;
  if (writable && !borrower->is_writable) return LEND_ERR_BORROWER_NOT_WRITABLE;
  return SUCCESS;
}

static u64 check_expected(const StrategyState *s, u32 apy, u32 ltv, u32 liquidation) {
  if (apy != s->apy_bps) return LEND_ERR_APY_MISMATCH;
  if (ltv != s->ltv_bps || liquidation != s->liquidation_bps) return LEND_ERR_RATIOS_MISMATCH;
  return SUCCESS;
}

/* The strategy's terms become the loan's, from ``now``. */
static void take_terms(LoanEscrow *e, const StrategyState *s, const SolPubkey *strategy, i64 now) {
  pubkey_copy(&e->strategy, strategy);
  e->apy_bps = s->apy_bps;
  e->ltv_bps = s->ltv_bps;
  e->liquidation_bps = s->liquidation_bps;
  e->duration_code = s->duration_code;
  e->duration_unit = s->duration_unit;
  e->start_time = now;
  e->due_time = now + (i64)s->duration_unit * (i64)LEND_SECONDS_PER_DAY;
  e->last_interest_update_time = now;
}

/* --- CreateLoan -------------------------------------------------------------------------- */
u64 create_loan(const SolParameters *p) {
  if (p->data_len != sizeof(CreateLoanArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_CREATE_LOAN_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const CreateLoanArgs *args = (const CreateLoanArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *borrower = &ka[LEND_CREATE_LOAN_BORROWER];
  const SolAccountInfo *escrow = &ka[LEND_CREATE_LOAN_ESCROW];
  const SolAccountInfo *strategy = &ka[LEND_CREATE_LOAN_STRATEGY];
  if (!borrower->is_signer) return LEND_ERR_BORROWER_NOT_SIGNER;
  if (!borrower->is_writable) return LEND_ERR_BORROWER_NOT_WRITABLE;
  if (!pubkey_eq(ka[LEND_CREATE_LOAN_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return LEND_ERR_WRONG_SYSTEM_PROGRAM;
  StrategyState *s;
  u64 r = load_strategy(p, strategy, &s);
  if (r) return r;
  r = check_expected(s, args->expected_apy_bps, args->expected_ltv_bps, args->expected_liquidation_bps);
  if (r) return r;

  u8 bump = 0;
  SolPubkey expected;
  SolSignerSeed seeds[4] = {{LEND_SEED_ESCROW, LEND_SEED_ESCROW_LEN}, {borrower->key->x, PUBKEY_SIZE}, {(const u8 *)&args->nonce, sizeof(u64)}, {&bump, 1}};
  if (!pda_find(seeds, 3, p->program_id, &expected, &bump) || !pubkey_eq(&expected, escrow->key)) return LEND_ERR_WRONG_ESCROW_ACCOUNT;
  if (!escrow->is_writable) return LEND_ERR_ESCROW_NOT_WRITABLE;
  if (escrow->data_len != 0 || !pubkey_eq(escrow->owner, &SYSTEM_PROGRAM_ID)) return LEND_ERR_ESCROW_ALREADY_EXISTS;
  i64 now;
  r = now_unix(&now);
  if (r) return r;
  u64 rent = 0;
  if (!rent_minimum_balance(LEND_ESCROW_SIZE, &rent)) return LEND_ERR_RENT_UNAVAILABLE;
  CpiContext c = {ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds signer = {seeds, 4};
  CreateAccountArgs create = {borrower, escrow, &signer, p->program_id, LEND_ESCROW_SIZE, rent};
  r = create_pda_account(&c, &create);
  if (r) return r;

  LoanEscrow *e = (LoanEscrow *)escrow->data;
  e->kind = LEND_ESCROW_KIND;
  e->version = LEND_LAYOUT_VERSION;
  e->bump = bump;
  e->status = LEND_STATUS_ACTIVE;
  e->nonce = args->nonce;
  pubkey_copy(&e->borrower, borrower->key);
  take_terms(e, s, strategy->key, now);
  sol_log("loan created");
  return SUCCESS;
}

/* --- DepositCollateral ------------------------------------------------------------------- */
u64 deposit_collateral(const SolParameters *p) {
  if (p->data_len != sizeof(DepositCollateralArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_DEPOSIT_COLLATERAL_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const DepositCollateralArgs *args = (const DepositCollateralArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *escrow = &ka[LEND_DEPOSIT_COLLATERAL_ESCROW];
  const SolAccountInfo *borrower = &ka[LEND_DEPOSIT_COLLATERAL_BORROWER];
  const SolAccountInfo *mint = &ka[LEND_DEPOSIT_COLLATERAL_MINT];
  const SolAccountInfo *escrow_token = &ka[LEND_DEPOSIT_COLLATERAL_ESCROW_TOKEN];
  const SolAccountInfo *token_program = &ka[LEND_DEPOSIT_COLLATERAL_TOKEN_PROGRAM];
  LoanEscrow *e;
  StrategyState *s;
  u64 r = load_loan(p, escrow, &ka[LEND_DEPOSIT_COLLATERAL_STRATEGY], &e, &s);
  if (r) return r;
  r = check_borrower(e, borrower, true);
  if (r) return r;
  if (e->status != LEND_STATUS_ACTIVE) return LEND_ERR_LOAN_NOT_ACTIVE;
  if (!pubkey_eq(ka[LEND_DEPOSIT_COLLATERAL_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return LEND_ERR_WRONG_SYSTEM_PROGRAM;
  if (!pubkey_eq(ka[LEND_DEPOSIT_COLLATERAL_ASSOCIATED_TOKEN_PROGRAM].key, &ASSOCIATED_TOKEN_PROGRAM_ID)) return LEND_ERR_WRONG_ASSOCIATED_TOKEN_PROGRAM;
  r = check_mint(mint, token_program);
  if (r) return r;
  if (strategy_mint(s, LEND_ROLE_PLEDGE, mint->key) == NULL) return LEND_ERR_MINT_NOT_ACCEPTED;
  if (args->amount == 0) return LEND_ERR_ZERO_AMOUNT;

  PledgedItem *item = find_pledged(e, mint->key);
  if (item == NULL) {
    if (e->pledged_count >= LEND_MAX_PLEDGED_ITEMS) return LEND_ERR_PLEDGED_ITEMS_FULL;
    if (!is_associated(escrow_token, escrow->key, token_program->key, mint->key)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
    if (!escrow_token->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
    /* Idempotent: the account may exist already (created, and thawed for a frozen-by-
     * default mint, by earlier instructions of the transaction). */
    r = create_associated(p, borrower, escrow_token, escrow->key, mint);
    if (r) return r;
    item = &pledged_items(e)[e->pledged_count];
    e->pledged_count += 1;
    pubkey_copy(&item->mint, mint->key);
    pubkey_copy(&item->token_account, escrow_token->key);
    item->decimals = mint->data[TOKEN_MINT_DECIMALS];
    item->amount = 0;
  } else {
    if (!pubkey_eq(escrow_token->key, &item->token_account)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
    if (!escrow_token->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  }
  /* What arrives is recorded (a Token-2022 transfer fee keeps part of it). */
  u64 before = token_balance(escrow_token);
  PdaSigner owner = {borrower->key, NULL};
  Move m = {p, mint, token_program, ka[LEND_DEPOSIT_COLLATERAL_SOURCE].key, escrow_token->key, &owner, args->amount};
  r = move_tokens(&m);
  if (r) return r;
  u64 received = token_balance(escrow_token) - before;
  u64 total = item->amount + received;
  if (total < received) return LEND_ERR_MATH_OVERFLOW;
  item->amount = total;
  return SUCCESS;
}

/* --- Borrow ------------------------------------------------------------------------------- */
u64 borrow(const SolParameters *p) {
  if (p->data_len != sizeof(BorrowArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_BORROW_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const BorrowArgs *args = (const BorrowArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *strategy = &ka[LEND_BORROW_STRATEGY];
  const SolAccountInfo *mint = &ka[LEND_BORROW_MINT];
  const SolAccountInfo *liquidity = &ka[LEND_BORROW_LIQUIDITY_TOKEN];
  const SolAccountInfo *destination = &ka[LEND_BORROW_DESTINATION];
  const SolAccountInfo *token_program = &ka[LEND_BORROW_TOKEN_PROGRAM];
  LoanEscrow *e;
  StrategyState *s;
  u64 r = load_loan(p, &ka[LEND_BORROW_ESCROW], strategy, &e, &s);
  if (r) return r;
  r = check_borrower(e, &ka[LEND_BORROW_BORROWER], false);
  if (r) return r;
  if (e->status != LEND_STATUS_ACTIVE) return LEND_ERR_LOAN_NOT_ACTIVE;
  i64 now;
  r = now_unix(&now);
  if (r) return r;
  if (now >= e->due_time) return LEND_ERR_LOAN_OVERDUE;
  r = check_mint(mint, token_program);
  if (r) return r;
  StrategyMint *entry = strategy_mint(s, LEND_ROLE_BORROW, mint->key);
  if (entry == NULL) return LEND_ERR_MINT_NOT_BORROWABLE;
  if (!pubkey_eq(liquidity->key, &entry->token_account)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!liquidity->is_writable || !destination->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  if (pubkey_eq(destination->key, liquidity->key)) return LEND_ERR_INVALID_DESTINATION;
  if (args->amount == 0) return LEND_ERR_ZERO_AMOUNT;
  if (token_balance(liquidity) < args->amount) return LEND_ERR_INSUFFICIENT_LIQUIDITY;

  r = accrue_interest(e, now);
  if (r) return r;
  BorrowedItem *item = find_borrowed(e, mint->key);
  if (item == NULL) {
    if (e->borrowed_count >= LEND_MAX_BORROWED_ITEMS) return LEND_ERR_BORROWED_ITEMS_FULL;
    item = &borrowed_items(e)[e->borrowed_count];
    e->borrowed_count += 1;
    sol_memset_(item, 0, sizeof(BorrowedItem));
    pubkey_copy(&item->mint, mint->key);
    item->decimals = mint->data[TOKEN_MINT_DECIMALS];
  }
  u64 principal = item->principal + args->amount;
  if (principal < args->amount) return LEND_ERR_MATH_OVERFLOW;
  item->principal = principal;
  Valuation v = {p, e, s, LEND_BORROW_ACCOUNTS, now};
  r = check_ltv(&v);
  if (r) return r;

  PdaSeeds seeds;
  strategy_signer(s, strategy->key, &seeds);
  Move m = {p, mint, token_program, liquidity->key, destination->key, &seeds.pda, args->amount};
  return move_tokens(&m);
}

/* Every token of an escrow token account to ``destination``, then the account closed (its
 * rent to ``rent_to``), signed by the escrow. */
typedef struct {
  const SolParameters *p;
  LoanEscrow *e;
  const SolAccountInfo *escrow;
  const SolAccountInfo *mint;
  const SolAccountInfo *token_program;
  const SolAccountInfo *escrow_token;
  SolPubkey *destination;
  SolPubkey *rent_to;
} Empty;

static u64 empty_escrow_token(const Empty *x) {
  PdaSeeds seeds;
  escrow_signer(x->e, x->escrow->key, &seeds);
  Move m = {x->p, x->mint, x->token_program, x->escrow_token->key, x->destination, &seeds.pda, token_balance(x->escrow_token)};
  u64 r = move_tokens(&m);
  if (r) return r;
  return close_token_account(x->p, x->token_program, x->escrow_token->key, x->rent_to, &seeds.pda);
}

/* --- WithdrawCollateral -------------------------------------------------------------------- */
u64 withdraw_collateral(const SolParameters *p) {
  if (p->data_len != sizeof(WithdrawCollateralArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_WITHDRAW_COLLATERAL_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const WithdrawCollateralArgs *args = (const WithdrawCollateralArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *escrow = &ka[LEND_WITHDRAW_COLLATERAL_ESCROW];
  const SolAccountInfo *strategy = &ka[LEND_WITHDRAW_COLLATERAL_STRATEGY];
  const SolAccountInfo *borrower = &ka[LEND_WITHDRAW_COLLATERAL_BORROWER];
  const SolAccountInfo *mint = &ka[LEND_WITHDRAW_COLLATERAL_MINT];
  const SolAccountInfo *escrow_token = &ka[LEND_WITHDRAW_COLLATERAL_ESCROW_TOKEN];
  const SolAccountInfo *destination = &ka[LEND_WITHDRAW_COLLATERAL_DESTINATION];
  const SolAccountInfo *token_program = &ka[LEND_WITHDRAW_COLLATERAL_TOKEN_PROGRAM];
  LoanEscrow *e;
  u64 r = load_loan(p, escrow, strategy, &e, NULL);
  if (r) return r;
  r = check_borrower(e, borrower, true);
  if (r) return r;
  if (e->status != LEND_STATUS_ACTIVE && e->status != LEND_STATUS_REPAID) return LEND_ERR_LOAN_NOT_ACTIVE;
  r = check_mint(mint, token_program);
  if (r) return r;
  PledgedItem *item = find_pledged(e, mint->key);
  if (item == NULL) return LEND_ERR_ITEM_NOT_FOUND;
  if (!pubkey_eq(escrow_token->key, &item->token_account)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!escrow_token->is_writable || !destination->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  if (pubkey_eq(destination->key, escrow_token->key)) return LEND_ERR_INVALID_DESTINATION;
  if (args->amount == 0) return LEND_ERR_ZERO_AMOUNT;
  if (args->amount > item->amount) return LEND_ERR_INSUFFICIENT_COLLATERAL;

  i64 now;
  r = now_unix(&now);
  if (r) return r;
  if (e->status == LEND_STATUS_ACTIVE) {
    r = accrue_interest(e, now);
    if (r) return r;
  }
  /* Withdrawn in full, the item goes (the feeds are those of the loan as it will be). */
  item->amount -= args->amount;
  bool emptied = item->amount == 0;
  if (emptied) remove_pledged(e, item);
  bool owes;
  r = owes_anything(e, &owes);
  if (r) return r;
  if (owes) {
    StrategyState *s;
    r = load_strategy(p, strategy, &s);
    if (r) return r;
    Valuation v = {p, e, s, LEND_WITHDRAW_COLLATERAL_ACCOUNTS, now};
    r = check_ltv(&v);
    if (r) return r;
  }
  if (!emptied) {
    PdaSeeds seeds;
    escrow_signer(e, escrow->key, &seeds);
    Move m = {p, mint, token_program, escrow_token->key, destination->key, &seeds.pda, args->amount};
    return move_tokens(&m);
  }
  /* Its token account closes (everything in it to the destination, rent to the borrower). */
  Empty x = {p, e, escrow, mint, token_program, escrow_token, destination->key, borrower->key};
  return empty_escrow_token(&x);
}

/* --- Repay -------------------------------------------------------------------------------- */
u64 repay(const SolParameters *p) {
  if (p->data_len != sizeof(RepayArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_REPAY_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const RepayArgs *args = (const RepayArgs *)p->data;
  if (args->repay_all > 1) return LEND_ERR_INVALID_INSTRUCTION;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *repayer = &ka[LEND_REPAY_REPAYER];
  const SolAccountInfo *mint = &ka[LEND_REPAY_MINT];
  const SolAccountInfo *source = &ka[LEND_REPAY_SOURCE];
  const SolAccountInfo *liquidity = &ka[LEND_REPAY_LIQUIDITY_TOKEN];
  const SolAccountInfo *token_program = &ka[LEND_REPAY_TOKEN_PROGRAM];
  LoanEscrow *e;
  u64 r = load_loan(p, &ka[LEND_REPAY_ESCROW], NULL, &e, NULL);
  if (r) return r;
  if (!repayer->is_signer) return LEND_ERR_PAYER_NOT_SIGNER;
  if (e->status != LEND_STATUS_ACTIVE) return LEND_ERR_LOAN_NOT_ACTIVE;
  r = check_mint(mint, token_program);
  if (r) return r;
  BorrowedItem *item = find_borrowed(e, mint->key);
  if (item == NULL) return LEND_ERR_ITEM_NOT_FOUND;
  /* Repayments go to the loan's strategy, whatever it lists today. */
  if (!is_associated(liquidity, &e->strategy, token_program->key, mint->key)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!liquidity->is_writable || !source->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  if (pubkey_eq(source->key, liquidity->key)) return LEND_ERR_INVALID_DESTINATION;

  i64 now;
  r = now_unix(&now);
  if (r) return r;
  r = accrue_interest(e, now);
  if (r) return r;
  u64 owed;
  r = item_debt(item, &owed);
  if (r) return r;
  if (owed == 0) return LEND_ERR_NOTHING_TO_REPAY;
  u64 pay = args->amount;
  if (args->repay_all) {
    if (owed > args->amount) return LEND_ERR_REPAY_ALL_EXCEEDS_MAX;
    pay = owed;
  } else {
    if (pay == 0) return LEND_ERR_ZERO_AMOUNT;
    if (pay > owed) return LEND_ERR_REPAY_EXCEEDS_DEBT;
  }
  u64 before = token_balance(liquidity);
  PdaSigner owner = {repayer->key, NULL};
  Move m = {p, mint, token_program, source->key, liquidity->key, &owner, pay};
  r = move_tokens(&m);
  if (r) return r;
  /* What the strategy received pays interest first (the rounding unit of a non-zero
   * remainder included once it is all paid), then principal. */
  u64 received = token_balance(liquidity) - before;
  u64 due = interest_due(item);
  u64 to_interest = received < due ? received : due;
  if (to_interest == due && item->interest_remainder != 0) {
    item->interest_accrued += 1;
    item->interest_remainder = 0;
  }
  item->interest_repaid += to_interest;
  item->principal_repaid += received - to_interest;
  bool owes;
  r = owes_anything(e, &owes);
  if (r) return r;
  if (!owes) {
    e->status = LEND_STATUS_REPAID;
    sol_log("loan repaid");
  }
  return SUCCESS;
}

/* --- Refinance ---------------------------------------------------------------------------- */
#define REFINANCE_GROUP 4
u64 refinance(const SolParameters *p) {
  if (p->data_len != sizeof(RefinanceArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_REFINANCE_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const RefinanceArgs *args = (const RefinanceArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *strategy = &ka[LEND_REFINANCE_STRATEGY];
  const SolAccountInfo *new_strategy = &ka[LEND_REFINANCE_NEW_STRATEGY];
  LoanEscrow *e;
  u64 r = load_loan(p, &ka[LEND_REFINANCE_ESCROW], strategy, &e, NULL);
  if (r) return r;
  r = check_borrower(e, &ka[LEND_REFINANCE_BORROWER], false);
  if (r) return r;
  if (e->status != LEND_STATUS_ACTIVE) return LEND_ERR_LOAN_NOT_ACTIVE;
  StrategyState *ns;
  r = load_strategy(p, new_strategy, &ns);
  if (r) return r;
  r = check_expected(ns, args->expected_apy_bps, args->expected_ltv_bps, args->expected_liquidation_bps);
  if (r) return r;
  u64 groups = LEND_REFINANCE_ACCOUNTS + REFINANCE_GROUP * (u64)e->borrowed_count;
  if (p->ka_num < groups) return LEND_ERR_ITEM_ACCOUNTS_MISMATCH;
  bool renewal = pubkey_eq(strategy->key, new_strategy->key);

  i64 now;
  r = now_unix(&now);
  if (r) return r;
  r = accrue_interest(e, now);
  if (r) return r;
  /* Everything owed in each mint becomes principal owed to the new strategy. */
  u64 owed[LEND_MAX_BORROWED_ITEMS];
  BorrowedItem *items = borrowed_items(e);
  for (u64 i = 0; i < e->borrowed_count; i++) {
    const SolAccountInfo *g = &ka[LEND_REFINANCE_ACCOUNTS + REFINANCE_GROUP * i];
    const SolAccountInfo *mint = &g[0], *to_old = &g[2], *token_program = &g[3];
    if (!pubkey_eq(mint->key, &items[i].mint)) return LEND_ERR_ITEM_ACCOUNTS_MISMATCH;
    r = check_mint(mint, token_program);
    if (r) return r;
    StrategyMint *entry = strategy_mint(ns, LEND_ROLE_BORROW, mint->key);
    if (entry == NULL) return LEND_ERR_MINT_NOT_BORROWABLE;
    if (!pubkey_eq(g[1].key, &entry->token_account) || !is_associated(to_old, strategy->key, token_program->key, mint->key))
      return LEND_ERR_WRONG_TOKEN_ACCOUNT;
    if (!g[1].is_writable || !to_old->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
    r = item_debt(&items[i], &owed[i]);
    if (r) return r;
    if (!renewal && token_balance(&g[1]) < owed[i]) return LEND_ERR_INSUFFICIENT_LIQUIDITY;
    items[i].principal = owed[i];
    items[i].principal_repaid = 0;
    items[i].interest_accrued = 0;
    items[i].interest_remainder = 0;
    items[i].interest_repaid = 0;
  }
  take_terms(e, ns, new_strategy->key, now);
  Valuation v = {p, e, ns, groups, now};
  r = check_ltv(&v);
  if (r) return r;
  if (renewal) return SUCCESS;

  PdaSeeds seeds;
  strategy_signer(ns, new_strategy->key, &seeds);
  for (u64 i = 0; i < e->borrowed_count; i++) {
    const SolAccountInfo *g = &ka[LEND_REFINANCE_ACCOUNTS + REFINANCE_GROUP * i];
    Move m = {p, &g[0], &g[3], g[1].key, g[2].key, &seeds.pda, owed[i]};
    r = move_tokens(&m);
    if (r) return r;
  }
  sol_log("loan refinanced");
  return SUCCESS;
}

/* --- Liquidate ----------------------------------------------------------------------------- */
u64 liquidate(const SolParameters *p) {
  if (p->data_len != sizeof(LiquidateArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_LIQUIDATE_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const SolAccountInfo *strategy = &p->ka[LEND_LIQUIDATE_STRATEGY];
  LoanEscrow *e;
  u64 r = load_loan(p, &p->ka[LEND_LIQUIDATE_ESCROW], strategy, &e, NULL);
  if (r) return r;
  if (e->status != LEND_STATUS_ACTIVE) return LEND_ERR_LOAN_NOT_ACTIVE;
  i64 now;
  r = now_unix(&now);
  if (r) return r;
  r = accrue_interest(e, now);
  if (r) return r;
  bool owes;
  r = owes_anything(e, &owes);
  if (r) return r;
  if (!owes) return LEND_ERR_NOT_LIQUIDATABLE;
  /* Overdue: whatever the prices (the feeds may be gone). Otherwise the debt must exceed
   * the collateral × the liquidation ratio. */
  if (now < e->due_time) {
    StrategyState *s;
    r = load_strategy(p, strategy, &s);
    if (r) return r;
    Valuation v = {p, e, s, LEND_LIQUIDATE_ACCOUNTS, now};
    U128 collateral, debt;
    r = valuate(&v, &collateral, &debt);
    if (r) return r;
    if (!mul128(&debt, LEND_BPS) || !mul128(&collateral, e->liquidation_bps)) return LEND_ERR_MATH_OVERFLOW;
    if (cmp128(&debt, &collateral) <= 0) return LEND_ERR_NOT_LIQUIDATABLE;
  }
  e->status = LEND_STATUS_LIQUIDATED;
  sol_log("loan liquidated");
  return SUCCESS;
}

/* --- ClaimCollateral ------------------------------------------------------------------------ */
u64 claim_collateral(const SolParameters *p) {
  if (p->data_len != sizeof(ClaimCollateralArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_CLAIM_COLLATERAL_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *escrow = &ka[LEND_CLAIM_COLLATERAL_ESCROW];
  const SolAccountInfo *borrower = &ka[LEND_CLAIM_COLLATERAL_BORROWER];
  const SolAccountInfo *mint = &ka[LEND_CLAIM_COLLATERAL_MINT];
  const SolAccountInfo *escrow_token = &ka[LEND_CLAIM_COLLATERAL_ESCROW_TOKEN];
  const SolAccountInfo *strategy_token = &ka[LEND_CLAIM_COLLATERAL_STRATEGY_TOKEN];
  const SolAccountInfo *token_program = &ka[LEND_CLAIM_COLLATERAL_TOKEN_PROGRAM];
  LoanEscrow *e;
  u64 r = load_loan(p, escrow, NULL, &e, NULL);
  if (r) return r;
  if (e->status != LEND_STATUS_LIQUIDATED) return LEND_ERR_LOAN_NOT_LIQUIDATED;
  if (!pubkey_eq(borrower->key, &e->borrower)) return LEND_ERR_BORROWER_MISMATCH;
  if (!borrower->is_writable) return LEND_ERR_BORROWER_NOT_WRITABLE;
  r = check_mint(mint, token_program);
  if (r) return r;
  PledgedItem *item = find_pledged(e, mint->key);
  if (item == NULL) return LEND_ERR_ITEM_NOT_FOUND;
  if (!pubkey_eq(escrow_token->key, &item->token_account) || !is_associated(strategy_token, &e->strategy, token_program->key, mint->key))
    return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!escrow_token->is_writable || !strategy_token->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  remove_pledged(e, item);
  Empty x = {p, e, escrow, mint, token_program, escrow_token, strategy_token->key, borrower->key};
  return empty_escrow_token(&x);
}

/* --- CloseLoan ------------------------------------------------------------------------------ */
#define CLOSE_GROUP 4
u64 close_loan(const SolParameters *p) {
  if (p->data_len != sizeof(CloseLoanArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_CLOSE_LOAN_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *escrow = &ka[LEND_CLOSE_LOAN_ESCROW];
  const SolAccountInfo *recipient = &ka[LEND_CLOSE_LOAN_RENT_RECIPIENT];
  LoanEscrow *e;
  u64 r = load_loan(p, escrow, NULL, &e, NULL);
  if (r) return r;
  r = check_borrower(e, &ka[LEND_CLOSE_LOAN_BORROWER], false);
  if (r) return r;
  if (!recipient->is_writable) return LEND_ERR_RENT_RECIPIENT_NOT_WRITABLE;
  if (pubkey_eq(recipient->key, escrow->key)) return LEND_ERR_INVALID_RENT_RECIPIENT;
  PledgedItem *items = pledged_items(e);
  for (u64 i = 0; i < e->pledged_count; i++) {
    if (pubkey_eq(recipient->key, &items[i].token_account)) return LEND_ERR_INVALID_RENT_RECIPIENT;
  }
  if (e->status == LEND_STATUS_LIQUIDATED) {
    if (e->pledged_count != 0) return LEND_ERR_COLLATERAL_NOT_CLAIMED;
  } else {
    i64 now;
    r = now_unix(&now);
    if (r) return r;
    r = accrue_interest(e, now);
    if (r) return r;
    bool owes;
    r = owes_anything(e, &owes);
    if (r) return r;
    if (owes) return LEND_ERR_DEBT_OUTSTANDING;
  }
  if (p->ka_num != LEND_CLOSE_LOAN_ACCOUNTS + CLOSE_GROUP * (u64)e->pledged_count) return LEND_ERR_ITEM_ACCOUNTS_MISMATCH;
  for (u64 i = 0; i < e->pledged_count; i++) {
    const SolAccountInfo *g = &ka[LEND_CLOSE_LOAN_ACCOUNTS + CLOSE_GROUP * i];
    const SolAccountInfo *mint = &g[0], *escrow_token = &g[1], *destination = &g[2], *token_program = &g[3];
    if (!pubkey_eq(mint->key, &items[i].mint) || !pubkey_eq(escrow_token->key, &items[i].token_account)) return LEND_ERR_ITEM_ACCOUNTS_MISMATCH;
    r = check_mint(mint, token_program);
    if (r) return r;
    if (!escrow_token->is_writable || !destination->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
    if (pubkey_eq(destination->key, escrow_token->key)) return LEND_ERR_INVALID_DESTINATION;
    Empty x = {p, e, escrow, mint, token_program, escrow_token, destination->key, recipient->key};
    r = empty_escrow_token(&x);
    if (r) return r;
  }
  /* The escrow: data zeroed first (a closed loan cannot be read back, even if lamports
   * return within the transaction), then every lamport to the recipient; the runtime
   * deletes the account at the end of the transaction. */
  sol_memset_(escrow->data, 0, escrow->data_len);
  *recipient->lamports += *escrow->lamports;
  *escrow->lamports = 0;
  sol_log("loan closed");
  return SUCCESS;
}
