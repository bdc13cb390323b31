/*
 * common.c: the lending program's shared pieces (lending.h): account loading, 128-bit
 * arithmetic, interest, feeds and valuation, token CPIs.
 */
#include "lending.h"

_Static_assert(sizeof(Heap) <= HEAP_SIZE, "heap layout");

/* --- 128-bit arithmetic ---------------------------------------------------------------- */
#define LOW32 0xffffffffULL

void mul64(u64 a, u64 b, U128 *out) {
  u64 a0 = a & LOW32, a1 = a >> 32, b0 = b & LOW32, b1 = b >> 32;
  u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  u64 mid = (p00 >> 32) + (p01 & LOW32) + (p10 & LOW32);
  out->lo = (p00 & LOW32) | (mid << 32);
  out->hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* a += b; false on overflow (a unchanged). */
bool add128(U128 *a, const U128 *b) {
  u64 lo = a->lo + b->lo;
  u64 carry = lo < a->lo;
  u64 hi = a->hi + b->hi;
  if (hi < a->hi) return false;
  u64 hi2 = hi + carry;
  if (hi2 < hi) return false;
  a->lo = lo;
  a->hi = hi2;
  return true;
}

/* a *= m; false on overflow (a unchanged). */
bool mul128(U128 *a, u64 m) {
  U128 low, high;
  mul64(a->lo, m, &low);
  mul64(a->hi, m, &high);
  if (high.hi != 0) return false;
  u64 hi = low.hi + high.lo;
  if (hi < low.hi) return false;
  a->lo = low.lo;
  a->hi = hi;
  return true;
}

/* a /= d (0 < d < 2^32), 32 bits at a time; the remainder. */
u64 div128_small(U128 *a, u32 d) {
  u64 parts[4] = {a->hi >> 32, a->hi & LOW32, a->lo >> 32, a->lo & LOW32};
  u64 r = 0;
  for (int i = 0; i < 4; i++) {
    u64 cur = (r << 32) | parts[i];
    parts[i] = cur / d;
    r = cur % d;
  }
  a->hi = (parts[0] << 32) | parts[1];
  a->lo = (parts[2] << 32) | parts[3];
  return r;
}

int cmp128(const U128 *a, const U128 *b) {
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return 0;
}

static const u64 POW10[10] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL};

/* v × 10^k: multiplied when k >= 0 (false on overflow), else divided, rounded up when
 * ``round_up`` and inexact. */
static bool scale10(U128 *v, i64 k, bool round_up) {
  while (k > 0) {
    i64 step = k > 9 ? 9 : k;
    if (!mul128(v, POW10[step])) return false;
    k -= step;
  }
  bool inexact = false;
  while (k < 0 && (v->lo | v->hi) != 0) {
    i64 step = -k > 9 ? 9 : -k;
    if (div128_small(v, (u32)POW10[step]) != 0) inexact = true;
    k += step;
  }
  if (round_up && inexact) {
    U128 one = {1, 0};
    return add128(v, &one);
  }
  return true;
}

/* --- accounts ---------------------------------------------------------------------------- */
u64 load_strategy(const SolParameters *p, const SolAccountInfo *account, StrategyState **out) {
  if (*account->lamports == 0 || account->data_len == 0) return LEND_ERR_STRATEGY_NOT_FOUND;
  if (!pubkey_eq(account->owner, p->program_id)) return LEND_ERR_STRATEGY_WRONG_OWNER;
  if (account->data_len != LEND_STRATEGY_SIZE) return LEND_ERR_STRATEGY_INVALID;
  StrategyState *s = (StrategyState *)account->data;
  if (s->kind != LEND_STRATEGY_KIND || s->version != LEND_LAYOUT_VERSION || s->pledge_count > LEND_MAX_PLEDGE_MINTS ||
      s->borrow_count > LEND_MAX_BORROW_MINTS)
    return LEND_ERR_STRATEGY_INVALID;
  *out = s;
  return SUCCESS;
}

u64 load_escrow(const SolParameters *p, const SolAccountInfo *account, LoanEscrow **out) {
  if (*account->lamports == 0 || account->data_len == 0) return LEND_ERR_ESCROW_NOT_FOUND;
  if (!pubkey_eq(account->owner, p->program_id)) return LEND_ERR_ESCROW_WRONG_OWNER;
  if (account->data_len != LEND_ESCROW_SIZE) return LEND_ERR_ESCROW_INVALID;
  LoanEscrow *e = (LoanEscrow *)account->data;
  if (e->kind != LEND_ESCROW_KIND || e->version != LEND_LAYOUT_VERSION || e->pledged_count > LEND_MAX_PLEDGED_ITEMS ||
      e->borrowed_count > LEND_MAX_BORROWED_ITEMS)
    return LEND_ERR_ESCROW_INVALID;
  if (!account->is_writable) return LEND_ERR_ESCROW_NOT_WRITABLE; /* every loan instruction writes it */
  *out = e;
  return SUCCESS;
}

u64 check_lender(const StrategyState *s, const SolAccountInfo *lender) {
  if (!pubkey_eq(&s->lender, lender->key)) return LEND_ERR_LENDER_MISMATCH;
  if (!lender->is_signer) return LEND_ERR_LENDER_NOT_SIGNER;
  return SUCCESS;
}

StrategyMint *strategy_mint(StrategyState *s, u8 role, const SolPubkey *mint) {
  StrategyMint *entries = role == LEND_ROLE_PLEDGE ? pledge_mints(s) : borrow_mints(s);
  u64 count = role == LEND_ROLE_PLEDGE ? s->pledge_count : s->borrow_count;
  for (u64 i = 0; i < count; i++) {
    if (pubkey_eq(&entries[i].mint, mint)) return &entries[i];
  }
  return NULL;
}

PledgedItem *find_pledged(LoanEscrow *e, const SolPubkey *mint) {
  PledgedItem *items = pledged_items(e);
  for (u64 i = 0; i < e->pledged_count; i++) {
    if (pubkey_eq(&items[i].mint, mint)) return &items[i];
  }
  return NULL;
}

BorrowedItem *find_borrowed(LoanEscrow *e, const SolPubkey *mint) {
  BorrowedItem *items = borrowed_items(e);
  for (u64 i = 0; i < e->borrowed_count; i++) {
    if (pubkey_eq(&items[i].mint, mint)) return &items[i];
  }
  return NULL;
}

/* Removes an item, keeping the others' order (feeds are passed in that order). */
void remove_pledged(LoanEscrow *e, PledgedItem *item) {
  PledgedItem *items = pledged_items(e);
  u64 at = ((u64)item - (u64)items) / sizeof(PledgedItem); /* unsigned: BPF has no signed division */
  for (u64 i = at; i + 1 < e->pledged_count; i++) items[i] = items[i + 1];
  e->pledged_count -= 1;
  sol_memset_(&items[e->pledged_count], 0, sizeof(PledgedItem));
}

u64 check_mint(const SolAccountInfo *mint, const SolAccountInfo *token_program) {
  if (!is_token_program(token_program->key) || !pubkey_eq(mint->owner, token_program->key)) {
    /* A mint owned by a token program passed with another token program is the wrong
     * token program; anything else is not a mint. */
    if (is_token_program(mint->owner)) return LEND_ERR_WRONG_TOKEN_PROGRAM;
    return LEND_ERR_MINT_INVALID;
  }
  if (mint->data_len < TOKEN_MINT_SIZE || mint->data[TOKEN_MINT_INITIALIZED] != 1) return LEND_ERR_MINT_INVALID;
  if (mint->data_len != TOKEN_MINT_SIZE && (mint->data_len <= TOKEN_ACCOUNT_TYPE_OFFSET || mint->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 1))
    return LEND_ERR_MINT_INVALID;
  return SUCCESS;
}

u64 token_balance(const SolAccountInfo *account) {
  if (!is_token_program(account->owner) || account->data_len < TOKEN_ACCOUNT_SIZE) return 0;
  return load_u64(account->data + TOKEN_ACCOUNT_AMOUNT);
}

bool is_associated(const SolAccountInfo *account, const SolPubkey *owner, const SolPubkey *token_program, const SolPubkey *mint) {
  SolSignerSeed seeds[3] = {{owner->x, PUBKEY_SIZE}, {token_program->x, PUBKEY_SIZE}, {mint->x, PUBKEY_SIZE}};
  SolPubkey expected;
  u8 bump;
  return pda_find(seeds, 3, &ASSOCIATED_TOKEN_PROGRAM_ID, &expected, &bump) && pubkey_eq(&expected, account->key);
}

u64 now_unix(i64 *out) {
  SolClock clock;
  /* The syscall aborts the program rather than fail; a failure here is a runtime's. */
  if (sol_get_clock_sysvar(&clock) != 0) return ERROR_INVALID_ARGUMENT;
  *out = clock.unix_timestamp;
  return SUCCESS;
}

void strategy_signer(StrategyState *s, SolPubkey *key, PdaSeeds *out) {
  out->seeds[0] = (SolSignerSeed){LEND_SEED_STRATEGY, LEND_SEED_STRATEGY_LEN};
  out->seeds[1] = (SolSignerSeed){s->lender.x, PUBKEY_SIZE};
  out->seeds[2] = (SolSignerSeed){(const u8 *)&s->strategy_id, sizeof(u64)};
  out->seeds[3] = (SolSignerSeed){&s->bump, 1};
  out->signer = (SolSignerSeeds){out->seeds, 4};
  out->pda = (PdaSigner){key, &out->signer};
}

void escrow_signer(LoanEscrow *e, SolPubkey *key, PdaSeeds *out) {
  out->seeds[0] = (SolSignerSeed){LEND_SEED_ESCROW, LEND_SEED_ESCROW_LEN};
  out->seeds[1] = (SolSignerSeed){e->borrower.x, PUBKEY_SIZE};
  out->seeds[2] = (SolSignerSeed){(const u8 *)&e->nonce, sizeof(u64)};
  out->seeds[3] = (SolSignerSeed){&e->bump, 1};
  out->signer = (SolSignerSeeds){out->seeds, 4};
  out->pda = (PdaSigner){key, &out->signer};
}

/* --- token CPIs ---------------------------------------------------------------------------- */
u64 move_tokens(const Move *m) {
  if (m->amount == 0) return SUCCESS;
  CpiContext c = {m->p->ka, m->p->ka_num, &HEAP->scratch};
  TransferCheckedArgs t = {
      .token_program = m->token_program->key,
      .source = m->source,
      .mint = m->mint->key,
      .destination = m->destination,
      .authority = m->authority,
      .extra = NULL,
      .extra_count = 0,
      .amount = m->amount,
      .decimals = m->mint->data[TOKEN_MINT_DECIMALS],
  };
  return token_transfer_checked(&c, &t);
}

u64 close_token_account(const SolParameters *p, const SolAccountInfo *token_program, SolPubkey *account, SolPubkey *destination, const PdaSigner *authority) {
  CpiContext c = {p->ka, p->ka_num, &HEAP->scratch};
  return token_close_account(&c, token_program->key, account, destination, authority);
}

u64 create_associated(const SolParameters *p, const SolAccountInfo *payer, const SolAccountInfo *account, const SolPubkey *owner, const SolAccountInfo *mint) {
  CpiContext c = {p->ka, p->ka_num, &HEAP->scratch};
  AssociatedAccountArgs a = {payer->key, account->key, (SolPubkey *)owner, mint->key, mint->owner};
  return associated_token_create(&c, &a);
}

/* --- interest ------------------------------------------------------------------------------ */
/* outstanding × apy_bps × seconds / (10000 × SECONDS_PER_YEAR), the remainder carried:
 * divided by SECONDS_PER_YEAR, then by 10000 (both below 2^32), the remainder rebuilt. */
u64 accrue_interest(LoanEscrow *e, i64 now) {
  if (now <= e->last_interest_update_time) return SUCCESS;
  u64 seconds = (u64)(now - e->last_interest_update_time);
  BorrowedItem *items = borrowed_items(e);
  for (u64 i = 0; i < e->borrowed_count; i++) {
    BorrowedItem *b = &items[i];
    u64 outstanding = b->principal - b->principal_repaid;
    if (outstanding == 0 || e->apy_bps == 0) continue;
    U128 t;
    mul64(outstanding, e->apy_bps, &t);
    U128 carry = {b->interest_remainder, 0};
    if (!mul128(&t, seconds) || !add128(&t, &carry)) return LEND_ERR_MATH_OVERFLOW;
    u64 r1 = div128_small(&t, LEND_SECONDS_PER_YEAR);
    u64 r2 = div128_small(&t, LEND_BPS);
    u64 accrued = b->interest_accrued + t.lo;
    if (t.hi != 0 || accrued < t.lo) return LEND_ERR_MATH_OVERFLOW;
    b->interest_accrued = accrued;
    b->interest_remainder = r2 * LEND_SECONDS_PER_YEAR + r1;
  }
  e->last_interest_update_time = now;
  return SUCCESS;
}

u64 interest_due(const BorrowedItem *b) {
  return b->interest_accrued - b->interest_repaid + (b->interest_remainder != 0 ? 1 : 0);
}

u64 item_debt(const BorrowedItem *b, u64 *out) {
  u64 principal = b->principal - b->principal_repaid;
  u64 total = principal + interest_due(b);
  if (total < principal) return LEND_ERR_MATH_OVERFLOW;
  *out = total;
  return SUCCESS;
}

u64 owes_anything(LoanEscrow *e, bool *out) {
  BorrowedItem *items = borrowed_items(e);
  *out = false;
  for (u64 i = 0; i < e->borrowed_count; i++) {
    u64 debt;
    u64 r = item_debt(&items[i], &debt);
    if (r) return r;
    if (debt != 0) *out = true;
  }
  return SUCCESS;
}

/* --- feeds and value ----------------------------------------------------------------------- */
u64 check_feed(const StrategyState *s, const StrategyMint *entry, const SolAccountInfo *feed, i64 now, const FeedState **out) {
  if (!pubkey_eq(feed->key, &entry->feed)) return LEND_ERR_FEED_WRONG_ACCOUNT;
  if (*feed->lamports == 0 || !pubkey_eq(feed->owner, &s->oracle_program)) return LEND_ERR_FEED_WRONG_OWNER;
  if (feed->data_len != LEND_FEED_SIZE) return LEND_ERR_FEED_INVALID;
  const FeedState *f = (const FeedState *)feed->data;
  if (f->kind != LEND_FEED_KIND || f->version != LEND_FEED_LAYOUT_VERSION) return LEND_ERR_FEED_INVALID;
  if (!pubkey_eq(&f->mint, &entry->mint)) return LEND_ERR_FEED_MINT_MISMATCH;
  /* No reading yet, or older than the strategy allows (a reading ahead of the clock is
   * the feed program's to bound: it refuses more than a minute). */
  if (f->round == 0 || (now > f->observed_at && (u64)(now - f->observed_at) > entry->max_age)) return LEND_ERR_FEED_STALE;
  if (f->value <= 0) return LEND_ERR_FEED_NOT_POSITIVE;
  *out = f;
  return SUCCESS;
}

/* amount × value × 10^(exponent - decimals + VALUE_DECIMALS), added to ``sum``. */
static u64 add_value(u64 amount, u8 decimals, const FeedState *f, bool round_up, U128 *sum) {
  U128 v;
  mul64(amount, (u64)f->value, &v);
  i64 k = (i64)f->exponent - (i64)decimals + (i64)LEND_VALUE_DECIMALS;
  if (!scale10(&v, k, round_up) || !add128(sum, &v)) return LEND_ERR_MATH_OVERFLOW;
  return SUCCESS;
}

u64 valuate(const Valuation *v, U128 *collateral, U128 *debt) {
  LoanEscrow *e = v->escrow;
  const SolParameters *p = v->p;
  *collateral = (U128){0, 0};
  *debt = (U128){0, 0};
  if (p->ka_num < v->first_feed + e->pledged_count + e->borrowed_count) return LEND_ERR_FEED_MISSING;
  const SolAccountInfo *feeds = &p->ka[v->first_feed];
  PledgedItem *pledged = pledged_items(e);
  for (u64 i = 0; i < e->pledged_count; i++) {
    StrategyMint *entry = strategy_mint(v->strategy, LEND_ROLE_PLEDGE, &pledged[i].mint);
    if (entry == NULL) return LEND_ERR_MINT_NOT_ACCEPTED;
    const FeedState *f;
    u64 r = check_feed(v->strategy, entry, &feeds[i], v->now, &f);
    if (r) return r;
    r = add_value(pledged[i].amount, pledged[i].decimals, f, false, collateral);
    if (r) return r;
  }
  BorrowedItem *borrowed = borrowed_items(e);
  for (u64 i = 0; i < e->borrowed_count; i++) {
    StrategyMint *entry = strategy_mint(v->strategy, LEND_ROLE_BORROW, &borrowed[i].mint);
    if (entry == NULL) return LEND_ERR_MINT_NOT_BORROWABLE;
    const FeedState *f;
    u64 r = check_feed(v->strategy, entry, &feeds[e->pledged_count + i], v->now, &f);
    if (r) return r;
    u64 owed;
    r = item_debt(&borrowed[i], &owed);
    if (r) return r;
    r = add_value(owed, borrowed[i].decimals, f, true, debt);
    if (r) return r;
  }
  return SUCCESS;
}

u64 check_ltv(const Valuation *v) {
  U128 collateral, debt;
  u64 r = valuate(v, &collateral, &debt);
  if (r) return r;
  if (!mul128(&debt, LEND_BPS) || !mul128(&collateral, v->escrow->ltv_bps)) return LEND_ERR_MATH_OVERFLOW;
  return cmp128(&debt, &collateral) <= 0 ? SUCCESS : LEND_ERR_LTV_EXCEEDED;
}
