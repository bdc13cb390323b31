/*
 * strategy.c: the lender's instructions (docs/programs.md, "lending"): create a strategy,
 * change its terms, list and unlist mints with their feeds, move liquidity in and out.
 */
#include "lending.h"

typedef struct {
  u8 duration_code;
  u32 apy_bps;
  u32 ltv_bps;
  u32 liquidation_bps;
  u32 duration_unit;
} Terms;

static u64 check_terms(const Terms *t) {
  if (t->apy_bps > LEND_MAX_APY_BPS) return LEND_ERR_INVALID_APY;
  if (t->ltv_bps == 0 || t->ltv_bps >= t->liquidation_bps || t->liquidation_bps > LEND_BPS) return LEND_ERR_INVALID_RATIOS;
  if (t->duration_code != LEND_DURATION_DAYS || t->duration_unit == 0 || t->duration_unit > LEND_MAX_DURATION_DAYS) return LEND_ERR_INVALID_DURATION;
  return SUCCESS;
}

static void store_terms(StrategyState *s, const Terms *t) {
  s->duration_code = t->duration_code;
  s->apy_bps = t->apy_bps;
  s->ltv_bps = t->ltv_bps;
  s->liquidation_bps = t->liquidation_bps;
  s->duration_unit = t->duration_unit;
}

/* The strategy in ``account``, writable, its lender signing. */
static u64 load_for_lender(const SolParameters *p, const SolAccountInfo *account, const SolAccountInfo *lender, bool writable, StrategyState **out) {
  u64 r = load_strategy(p, account, out);
  if (r) return r;
  if (writable && !account->is_writable) return LEND_ERR_STRATEGY_NOT_WRITABLE;
  return check_lender(*out, lender);
}

/* --- InitializeStrategy ---------------------------------------------------------------------- */
u64 initialize_strategy(const SolParameters *p) {
  if (p->data_len != sizeof(InitializeStrategyArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_INITIALIZE_STRATEGY_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const InitializeStrategyArgs *args = (const InitializeStrategyArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *payer = &ka[LEND_INITIALIZE_STRATEGY_PAYER];
  const SolAccountInfo *lender = &ka[LEND_INITIALIZE_STRATEGY_LENDER];
  const SolAccountInfo *strategy = &ka[LEND_INITIALIZE_STRATEGY_STRATEGY];
  const SolAccountInfo *oracle = &ka[LEND_INITIALIZE_STRATEGY_ORACLE_PROGRAM];

  if (!payer->is_signer) return LEND_ERR_PAYER_NOT_SIGNER;
  if (!payer->is_writable) return LEND_ERR_PAYER_NOT_WRITABLE;
  if (!lender->is_signer) return LEND_ERR_LENDER_NOT_SIGNER;
  if (!pubkey_eq(ka[LEND_INITIALIZE_STRATEGY_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return LEND_ERR_WRONG_SYSTEM_PROGRAM;
  if (!oracle->executable) return LEND_ERR_ORACLE_NOT_EXECUTABLE;
  Terms terms = {args->duration_code, args->apy_bps, args->ltv_bps, args->liquidation_bps, args->duration_unit};
  u64 r = check_terms(&terms);
  if (r) return r;

  u8 bump = 0;
  SolPubkey expected;
  SolSignerSeed seeds[4] = {{LEND_SEED_STRATEGY, LEND_SEED_STRATEGY_LEN}, {lender->key->x, PUBKEY_SIZE}, {(const u8 *)&args->strategy_id, sizeof(u64)}, {&bump, 1}};
  if (!pda_find(seeds, 3, p->program_id, &expected, &bump) || !pubkey_eq(&expected, strategy->key)) return LEND_ERR_WRONG_STRATEGY_ACCOUNT;
  if (!strategy->is_writable) return LEND_ERR_STRATEGY_NOT_WRITABLE;
  if (strategy->data_len != 0 || !pubkey_eq(strategy->owner, &SYSTEM_PROGRAM_ID)) return LEND_ERR_STRATEGY_ALREADY_EXISTS;
  u64 rent = 0;
  if (!rent_minimum_balance(LEND_STRATEGY_SIZE, &rent)) return LEND_ERR_RENT_UNAVAILABLE;

  CpiContext c = {ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds signer = {seeds, 4};
  CreateAccountArgs create = {payer, strategy, &signer, p->program_id, LEND_STRATEGY_SIZE, rent};
  r = create_pda_account(&c, &create);
  if (r) return r;

  StrategyState *s = (StrategyState *)strategy->data;
  s->kind = LEND_STRATEGY_KIND;
  s->version = LEND_LAYOUT_VERSION;
  s->bump = bump;
  s->strategy_id = args->strategy_id;
  pubkey_copy(&s->lender, lender->key);
  pubkey_copy(&s->oracle_program, oracle->key);
  store_terms(s, &terms);
  sol_log("strategy created");
  return SUCCESS;
}

/* --- SetTerms ------------------------------------------------------------------------------- */
u64 set_terms(const SolParameters *p) {
  if (p->data_len != sizeof(SetTermsArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_SET_TERMS_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const SetTermsArgs *args = (const SetTermsArgs *)p->data;
  StrategyState *s;
  u64 r = load_for_lender(p, &p->ka[LEND_SET_TERMS_STRATEGY], &p->ka[LEND_SET_TERMS_LENDER], true, &s);
  if (r) return r;
  Terms terms = {args->duration_code, args->apy_bps, args->ltv_bps, args->liquidation_bps, args->duration_unit};
  r = check_terms(&terms);
  if (r) return r;
  store_terms(s, &terms);
  return SUCCESS;
}

/* --- SetMint -------------------------------------------------------------------------------- */
u64 set_mint(const SolParameters *p) {
  if (p->data_len != sizeof(SetMintArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_SET_MINT_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const SetMintArgs *args = (const SetMintArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *strategy = &ka[LEND_SET_MINT_STRATEGY];
  const SolAccountInfo *lender = &ka[LEND_SET_MINT_LENDER];
  const SolAccountInfo *mint = &ka[LEND_SET_MINT_MINT];
  const SolAccountInfo *feed = &ka[LEND_SET_MINT_FEED];
  const SolAccountInfo *token_account = &ka[LEND_SET_MINT_TOKEN_ACCOUNT];
  const SolAccountInfo *token_program = &ka[LEND_SET_MINT_TOKEN_PROGRAM];
  StrategyState *s;
  u64 r = load_for_lender(p, strategy, lender, true, &s);
  if (r) return r;
  if (!lender->is_writable) return LEND_ERR_PAYER_NOT_WRITABLE;
  if (args->role != LEND_ROLE_PLEDGE && args->role != LEND_ROLE_BORROW) return LEND_ERR_INVALID_ROLE;
  if (!pubkey_eq(ka[LEND_SET_MINT_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return LEND_ERR_WRONG_SYSTEM_PROGRAM;
  if (!pubkey_eq(ka[LEND_SET_MINT_ASSOCIATED_TOKEN_PROGRAM].key, &ASSOCIATED_TOKEN_PROGRAM_ID)) return LEND_ERR_WRONG_ASSOCIATED_TOKEN_PROGRAM;
  r = check_mint(mint, token_program);
  if (r) return r;
  if (args->max_age == 0 || args->max_age > LEND_MAX_FEED_AGE) return LEND_ERR_INVALID_MAX_AGE;
  /* The feed: the oracle program's, a feed, of this mint (freshness is checked when used). */
  if (*feed->lamports == 0 || !pubkey_eq(feed->owner, &s->oracle_program)) return LEND_ERR_FEED_WRONG_OWNER;
  if (feed->data_len != LEND_FEED_SIZE) return LEND_ERR_FEED_INVALID;
  const FeedState *f = (const FeedState *)feed->data;
  if (f->kind != LEND_FEED_KIND || f->version != LEND_FEED_LAYOUT_VERSION) return LEND_ERR_FEED_INVALID;
  if (!pubkey_eq(&f->mint, mint->key)) return LEND_ERR_FEED_MINT_MISMATCH;
  if (!is_associated(token_account, strategy->key, token_program->key, mint->key)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!token_account->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;

  StrategyMint *entry = strategy_mint(s, args->role, mint->key);
  if (entry == NULL) {
    u8 *count = args->role == LEND_ROLE_PLEDGE ? &s->pledge_count : &s->borrow_count;
    u64 capacity = args->role == LEND_ROLE_PLEDGE ? LEND_MAX_PLEDGE_MINTS : LEND_MAX_BORROW_MINTS;
    if (*count >= capacity) return LEND_ERR_MINT_LIST_FULL;
    r = create_associated(p, lender, token_account, strategy->key, mint);
    if (r) return r;
    entry = (args->role == LEND_ROLE_PLEDGE ? pledge_mints(s) : borrow_mints(s)) + *count;
    *count += 1;
    pubkey_copy(&entry->mint, mint->key);
    pubkey_copy(&entry->token_account, token_account->key);
    pubkey_copy(&entry->token_program, token_program->key);
    entry->decimals = mint->data[TOKEN_MINT_DECIMALS];
  }
  pubkey_copy(&entry->feed, feed->key);
  entry->max_age = args->max_age;
  return SUCCESS;
}

/* --- RemoveMint ----------------------------------------------------------------------------- */
u64 remove_mint(const SolParameters *p) {
  if (p->data_len != sizeof(RemoveMintArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_REMOVE_MINT_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const RemoveMintArgs *args = (const RemoveMintArgs *)p->data;
  StrategyState *s;
  u64 r = load_for_lender(p, &p->ka[LEND_REMOVE_MINT_STRATEGY], &p->ka[LEND_REMOVE_MINT_LENDER], true, &s);
  if (r) return r;
  if (args->role != LEND_ROLE_PLEDGE && args->role != LEND_ROLE_BORROW) return LEND_ERR_INVALID_ROLE;
  StrategyMint *entry = strategy_mint(s, args->role, p->ka[LEND_REMOVE_MINT_MINT].key);
  if (entry == NULL) return LEND_ERR_MINT_NOT_LISTED;
  StrategyMint *entries = args->role == LEND_ROLE_PLEDGE ? pledge_mints(s) : borrow_mints(s);
  u8 *count = args->role == LEND_ROLE_PLEDGE ? &s->pledge_count : &s->borrow_count;
  for (u64 i = ((u64)entry - (u64)entries) / sizeof(StrategyMint); i + 1 < *count; i++) entries[i] = entries[i + 1];
  *count -= 1;
  sol_memset_(&entries[*count], 0, sizeof(StrategyMint));
  return SUCCESS;
}

/* --- DepositLiquidity ----------------------------------------------------------------------- */
u64 deposit_liquidity(const SolParameters *p) {
  if (p->data_len != sizeof(DepositLiquidityArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_DEPOSIT_LIQUIDITY_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const DepositLiquidityArgs *args = (const DepositLiquidityArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *lender = &ka[LEND_DEPOSIT_LIQUIDITY_LENDER];
  const SolAccountInfo *mint = &ka[LEND_DEPOSIT_LIQUIDITY_MINT];
  const SolAccountInfo *token_account = &ka[LEND_DEPOSIT_LIQUIDITY_TOKEN_ACCOUNT];
  const SolAccountInfo *token_program = &ka[LEND_DEPOSIT_LIQUIDITY_TOKEN_PROGRAM];
  StrategyState *s;
  u64 r = load_for_lender(p, &ka[LEND_DEPOSIT_LIQUIDITY_STRATEGY], lender, false, &s);
  if (r) return r;
  r = check_mint(mint, token_program);
  if (r) return r;
  StrategyMint *entry = strategy_mint(s, LEND_ROLE_BORROW, mint->key);
  if (entry == NULL) entry = strategy_mint(s, LEND_ROLE_PLEDGE, mint->key);
  if (entry == NULL) return LEND_ERR_MINT_NOT_LISTED;
  if (!pubkey_eq(token_account->key, &entry->token_account)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!token_account->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  if (args->amount == 0) return LEND_ERR_ZERO_AMOUNT;
  PdaSigner owner = {lender->key, NULL};
  Move m = {p, mint, token_program, ka[LEND_DEPOSIT_LIQUIDITY_SOURCE].key, token_account->key, &owner, args->amount};
  return move_tokens(&m);
}

/* --- WithdrawLiquidity ---------------------------------------------------------------------- */
u64 withdraw_liquidity(const SolParameters *p) {
  if (p->data_len != sizeof(WithdrawLiquidityArgs)) return LEND_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < LEND_WITHDRAW_LIQUIDITY_ACCOUNTS) return LEND_ERR_NOT_ENOUGH_ACCOUNTS;
  const WithdrawLiquidityArgs *args = (const WithdrawLiquidityArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *strategy = &ka[LEND_WITHDRAW_LIQUIDITY_STRATEGY];
  const SolAccountInfo *token_account = &ka[LEND_WITHDRAW_LIQUIDITY_TOKEN_ACCOUNT];
  const SolAccountInfo *mint = &ka[LEND_WITHDRAW_LIQUIDITY_MINT];
  const SolAccountInfo *destination = &ka[LEND_WITHDRAW_LIQUIDITY_DESTINATION];
  const SolAccountInfo *token_program = &ka[LEND_WITHDRAW_LIQUIDITY_TOKEN_PROGRAM];
  StrategyState *s;
  u64 r = load_for_lender(p, strategy, &ka[LEND_WITHDRAW_LIQUIDITY_LENDER], false, &s);
  if (r) return r;
  r = check_mint(mint, token_program);
  if (r) return r;
  /* Any mint the strategy holds: liquidity, repayments, liquidated collateral. */
  if (!is_associated(token_account, strategy->key, token_program->key, mint->key)) return LEND_ERR_WRONG_TOKEN_ACCOUNT;
  if (!token_account->is_writable || !destination->is_writable) return LEND_ERR_TOKEN_ACCOUNT_NOT_WRITABLE;
  if (pubkey_eq(destination->key, token_account->key)) return LEND_ERR_INVALID_DESTINATION;
  if (args->amount == 0) return LEND_ERR_ZERO_AMOUNT;
  if (token_balance(token_account) < args->amount) return LEND_ERR_INSUFFICIENT_LIQUIDITY;
  PdaSeeds seeds;
  strategy_signer(s, strategy->key, &seeds);
  Move m = {p, mint, token_program, token_account->key, destination->key, &seeds.pda, args->amount};
  return move_tokens(&m);
}
