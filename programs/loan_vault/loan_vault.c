/*
 * loan_vault: loan remittance vaults (docs/programs.md). A vault authority PDA owns the
 * vault's token account of the payment mint and pays repayments out of it, by
 * TransferChecked it signs, only to destinations on the vault's whitelist, only when the
 * recorded admin signs. Layouts, instructions and error codes: abi.py (abi.h is
 * generated from it).
 *
 * Every account is checked by hand: owners, signers, writability, PDAs and mints, each
 * failing with its own error code.
 */
#include "abi.h"

#define MAX_ACCOUNTS 16

typedef struct {
  SolAccountInfo ka[MAX_ACCOUNTS];
  CpiScratch scratch;
} Heap;
#define HEAP ((Heap *)HEAP_START)
_Static_assert(sizeof(Heap) <= HEAP_SIZE, "heap layout");

static inline SolPubkey *destinations(VaultState *state) { return (SolPubkey *)(state + 1); }

/* Index of ``key`` in the whitelist, or ``count`` when it is not there. */
static u64 find_destination(VaultState *state, const SolPubkey *key) {
  SolPubkey *entries = destinations(state);
  u64 count = state->count;
  for (u64 i = 0; i < count; i++) {
    if (pubkey_eq(&entries[i], key)) return i;
  }
  return count;
}

/* An initialized mint owned by ``program`` (both token programs share the base layout). */
static bool is_mint(const SolAccountInfo *mint, const SolPubkey *program) {
  if (!pubkey_eq(mint->owner, program)) return false;
  if (mint->data_len < TOKEN_MINT_SIZE || mint->data[TOKEN_MINT_INITIALIZED] != 1) return false;
  /* Token-2022 mints with extensions say so in their account-type byte. */
  if (mint->data_len > TOKEN_ACCOUNT_TYPE_OFFSET && mint->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 1) return false;
  return mint->data_len == TOKEN_MINT_SIZE || mint->data_len > TOKEN_ACCOUNT_TYPE_OFFSET;
}

/* The vault state in ``account``: it exists, is owned by this program and is a vault of
 * the current layout sized for its capacity. */
static u64 load_state(const SolParameters *p, const SolAccountInfo *account, VaultState **out) {
  if (*account->lamports == 0 || account->data_len == 0) return VAULT_ERR_VAULT_NOT_FOUND;
  if (!pubkey_eq(account->owner, p->program_id)) return VAULT_ERR_STATE_WRONG_OWNER;
  if (account->data_len < sizeof(VaultState)) return VAULT_ERR_STATE_INVALID;
  VaultState *state = (VaultState *)account->data;
  if (state->kind != VAULT_KIND || state->version != VAULT_LAYOUT_VERSION || state->capacity > VAULT_MAX_CAPACITY ||
      state->count > state->capacity || account->data_len < sizeof(VaultState) + (u64)state->capacity * VAULT_DESTINATION_SIZE)
    return VAULT_ERR_STATE_INVALID;
  *out = state;
  return SUCCESS;
}

/* The admin recorded in the vault signed. */
static u64 check_admin(const VaultState *state, const SolAccountInfo *admin) {
  if (!pubkey_eq(&state->admin, admin->key)) return VAULT_ERR_ADMIN_MISMATCH;
  if (!admin->is_signer) return VAULT_ERR_ADMIN_NOT_SIGNER;
  return SUCCESS;
}

/* The vault authority's seeds (with its recorded bump) and a check that ``authority`` is
 * that PDA. ``seeds`` must have room for 4 entries. */
static u64 authority_seeds(const SolParameters *p, VaultState *state, const SolAccountInfo *authority, SolSignerSeed *seeds) {
  seeds[0] = (SolSignerSeed){VAULT_SEED_AUTHORITY, VAULT_SEED_AUTHORITY_LEN};
  seeds[1] = (SolSignerSeed){state->loan_mint.x, PUBKEY_SIZE};
  seeds[2] = (SolSignerSeed){state->payment_mint.x, PUBKEY_SIZE};
  seeds[3] = (SolSignerSeed){&state->authority_bump, 1};
  SolPubkey expected;
  if (!pda_create(seeds, 4, p->program_id, &expected) || !pubkey_eq(&expected, authority->key)) return VAULT_ERR_WRONG_VAULT_AUTHORITY;
  return SUCCESS;
}

/* The vault's own token account and token program, as recorded. */
static u64 check_vault_token(const VaultState *state, const SolAccountInfo *vault_token, const SolAccountInfo *token_program) {
  if (!pubkey_eq(&state->vault_token, vault_token->key)) return VAULT_ERR_WRONG_VAULT_TOKEN_ACCOUNT;
  if (!vault_token->is_writable) return VAULT_ERR_VAULT_TOKEN_NOT_WRITABLE;
  if (!pubkey_eq(&state->token_program, token_program->key)) return VAULT_ERR_WRONG_TOKEN_PROGRAM;
  return SUCCESS;
}

/* --- CreateVault ------------------------------------------------------------------------ */
static u64 create_vault(const SolParameters *p) {
  if (p->data_len != sizeof(VaultCreateArgs)) return VAULT_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < VAULT_CREATE_VAULT_ACCOUNTS) return VAULT_ERR_NOT_ENOUGH_ACCOUNTS;
  const VaultCreateArgs *args = (const VaultCreateArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *payer = &ka[VAULT_CREATE_VAULT_PAYER];
  const SolAccountInfo *state_info = &ka[VAULT_CREATE_VAULT_STATE];
  const SolAccountInfo *authority = &ka[VAULT_CREATE_VAULT_AUTHORITY];
  const SolAccountInfo *vault_token = &ka[VAULT_CREATE_VAULT_VAULT_TOKEN];
  const SolAccountInfo *loan_mint = &ka[VAULT_CREATE_VAULT_LOAN_MINT];
  const SolAccountInfo *payment_mint = &ka[VAULT_CREATE_VAULT_PAYMENT_MINT];
  const SolAccountInfo *issuer = &ka[VAULT_CREATE_VAULT_LOAN_MINT_AUTHORITY];
  const SolAccountInfo *admin = &ka[VAULT_CREATE_VAULT_ADMIN];
  const SolAccountInfo *token_program = &ka[VAULT_CREATE_VAULT_TOKEN_PROGRAM];

  if (!payer->is_signer) return VAULT_ERR_PAYER_NOT_SIGNER;
  if (!payer->is_writable) return VAULT_ERR_PAYER_NOT_WRITABLE;
  if (!pubkey_eq(ka[VAULT_CREATE_VAULT_SYSTEM_PROGRAM].key, &SYSTEM_PROGRAM_ID)) return VAULT_ERR_WRONG_SYSTEM_PROGRAM;
  if (!is_token_program(token_program->key)) return VAULT_ERR_WRONG_TOKEN_PROGRAM;
  if (!pubkey_eq(ka[VAULT_CREATE_VAULT_ASSOCIATED_TOKEN_PROGRAM].key, &ASSOCIATED_TOKEN_PROGRAM_ID)) return VAULT_ERR_WRONG_ASSOCIATED_TOKEN_PROGRAM;

  /* The mints: the loan's under either token program, the payment's under token_program. */
  if (!is_mint(loan_mint, &TOKEN_PROGRAM_ID) && !is_mint(loan_mint, &TOKEN_2022_PROGRAM_ID)) return VAULT_ERR_LOAN_MINT_INVALID;
  if (!is_mint(payment_mint, token_program->key)) return VAULT_ERR_PAYMENT_MINT_INVALID;
  if (pubkey_eq(loan_mint->key, payment_mint->key)) return VAULT_ERR_SAME_MINT;
  /* Only the loan's issuer (its mint authority, COption<Pubkey>: u32 tag then the key)
   * opens its vault: nobody else can take the pair's addresses first. */
  if (load_u32(loan_mint->data + TOKEN_MINT_AUTHORITY_OPTION) != 1 || !bytes_eq(loan_mint->data + 4, issuer->key, PUBKEY_SIZE))
    return VAULT_ERR_LOAN_MINT_AUTHORITY_MISMATCH;
  if (!issuer->is_signer) return VAULT_ERR_LOAN_MINT_AUTHORITY_NOT_SIGNER;
  if (pubkey_is_zero(admin->key)) return VAULT_ERR_ZERO_ADMIN;
  if (args->capacity == 0 || args->capacity > VAULT_MAX_CAPACITY) return VAULT_ERR_INVALID_CAPACITY;

  /* The PDAs at their canonical bumps, and the authority's associated token account. */
  u8 abump = 0, sbump = 0, tbump = 0;
  SolPubkey expected;
  SolSignerSeed aseeds[4] = {{VAULT_SEED_AUTHORITY, VAULT_SEED_AUTHORITY_LEN}, {loan_mint->key->x, PUBKEY_SIZE}, {payment_mint->key->x, PUBKEY_SIZE}, {&abump, 1}};
  SolSignerSeed sseeds[4] = {{VAULT_SEED_STATE, VAULT_SEED_STATE_LEN}, {loan_mint->key->x, PUBKEY_SIZE}, {payment_mint->key->x, PUBKEY_SIZE}, {&sbump, 1}};
  if (!pda_find(aseeds, 3, p->program_id, &expected, &abump) || !pubkey_eq(&expected, authority->key)) return VAULT_ERR_WRONG_VAULT_AUTHORITY;
  if (!pda_find(sseeds, 3, p->program_id, &expected, &sbump) || !pubkey_eq(&expected, state_info->key)) return VAULT_ERR_WRONG_VAULT_STATE;
  if (!state_info->is_writable) return VAULT_ERR_STATE_NOT_WRITABLE;
  if (state_info->data_len != 0 || !pubkey_eq(state_info->owner, &SYSTEM_PROGRAM_ID)) return VAULT_ERR_VAULT_ALREADY_EXISTS;
  SolSignerSeed tseeds[3] = {{authority->key->x, PUBKEY_SIZE}, {token_program->key->x, PUBKEY_SIZE}, {payment_mint->key->x, PUBKEY_SIZE}};
  if (!pda_find(tseeds, 3, &ASSOCIATED_TOKEN_PROGRAM_ID, &expected, &tbump) || !pubkey_eq(&expected, vault_token->key)) return VAULT_ERR_WRONG_VAULT_TOKEN_ACCOUNT;
  if (!vault_token->is_writable) return VAULT_ERR_VAULT_TOKEN_NOT_WRITABLE;

  u64 space = sizeof(VaultState) + (u64)args->capacity * VAULT_DESTINATION_SIZE;
  u64 rent = 0;
  if (!rent_minimum_balance(space, &rent)) return VAULT_ERR_RENT_UNAVAILABLE;

  CpiContext c = {ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds ssigner = {sseeds, 4};
  CreateAccountArgs create = {payer, state_info, &ssigner, p->program_id, space, rent};
  u64 r = create_pda_account(&c, &create);
  if (r) return r;
  AssociatedAccountArgs ata = {payer->key, vault_token->key, authority->key, payment_mint->key, token_program->key};
  r = associated_token_create(&c, &ata);
  if (r) return r;

  VaultState *state = (VaultState *)state_info->data;
  state->kind = VAULT_KIND;
  state->version = VAULT_LAYOUT_VERSION;
  state->authority_bump = abump;
  state->state_bump = sbump;
  state->count = 0;
  state->capacity = args->capacity;
  state->last_sequence = 0;
  pubkey_copy(&state->loan_mint, loan_mint->key);
  pubkey_copy(&state->payment_mint, payment_mint->key);
  pubkey_copy(&state->admin, admin->key);
  pubkey_copy(&state->vault_token, vault_token->key);
  pubkey_copy(&state->token_program, token_program->key);
  sol_log("vault created");
  return SUCCESS;
}

/* --- UpdateWhitelist --------------------------------------------------------------------- */
static u64 update_whitelist(const SolParameters *p) {
  if (p->data_len != sizeof(VaultUpdateArgs)) return VAULT_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < VAULT_UPDATE_WHITELIST_ACCOUNTS) return VAULT_ERR_NOT_ENOUGH_ACCOUNTS;
  const VaultUpdateArgs *args = (const VaultUpdateArgs *)p->data;
  const SolAccountInfo *state_info = &p->ka[VAULT_UPDATE_WHITELIST_STATE];
  const SolAccountInfo *destination = &p->ka[VAULT_UPDATE_WHITELIST_DESTINATION];
  VaultState *state;
  u64 r = load_state(p, state_info, &state);
  if (r) return r;
  if (!state_info->is_writable) return VAULT_ERR_STATE_NOT_WRITABLE;
  r = check_admin(state, &p->ka[VAULT_UPDATE_WHITELIST_ADMIN]);
  if (r) return r;
  SolPubkey *entries = destinations(state);
  u64 at = find_destination(state, destination->key);

  if (args->action == VAULT_ACTION_ADD) {
    /* A token account of the payment mint under the vault's token program. */
    if (!pubkey_eq(destination->owner, &state->token_program) || destination->data_len < TOKEN_ACCOUNT_SIZE ||
        destination->data[TOKEN_ACCOUNT_STATE] == 0 ||
        (destination->data_len > TOKEN_ACCOUNT_SIZE && destination->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 2))
      return VAULT_ERR_DESTINATION_NOT_TOKEN_ACCOUNT;
    if (!pubkey_eq((const SolPubkey *)(destination->data + TOKEN_ACCOUNT_MINT), &state->payment_mint)) return VAULT_ERR_DESTINATION_WRONG_MINT;
    if (pubkey_eq(destination->key, &state->vault_token)) return VAULT_ERR_DESTINATION_IS_VAULT;
    if (at != state->count) return VAULT_ERR_ALREADY_WHITELISTED;
    if (state->count >= state->capacity) return VAULT_ERR_WHITELIST_FULL;
    pubkey_copy(&entries[state->count], destination->key);
    state->count += 1;
    return SUCCESS;
  }
  if (args->action == VAULT_ACTION_REMOVE) {
    /* The destination may be closed by now: only its address matters. */
    if (at == state->count) return VAULT_ERR_WHITELIST_ENTRY_MISSING;
    u64 last = state->count - 1;
    pubkey_copy(&entries[at], &entries[last]); /* order does not matter: swap in the last */
    sol_memset_(&entries[last], 0, PUBKEY_SIZE);
    state->count = (u32)last;
    return SUCCESS;
  }
  return VAULT_ERR_INVALID_ACTION;
}

/* --- Repayment --------------------------------------------------------------------------- */
static u64 repayment(const SolParameters *p) {
  if (p->data_len != sizeof(VaultRepaymentArgs)) return VAULT_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < VAULT_REPAYMENT_ACCOUNTS) return VAULT_ERR_NOT_ENOUGH_ACCOUNTS;
  if (p->ka_num - VAULT_REPAYMENT_ACCOUNTS > VAULT_MAX_EXTRA_ACCOUNTS) return VAULT_ERR_TOO_MANY_EXTRA_ACCOUNTS;
  const VaultRepaymentArgs *args = (const VaultRepaymentArgs *)p->data;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *state_info = &ka[VAULT_REPAYMENT_STATE];
  const SolAccountInfo *authority = &ka[VAULT_REPAYMENT_AUTHORITY];
  const SolAccountInfo *vault_token = &ka[VAULT_REPAYMENT_VAULT_TOKEN];
  const SolAccountInfo *mint = &ka[VAULT_REPAYMENT_PAYMENT_MINT];
  const SolAccountInfo *destination = &ka[VAULT_REPAYMENT_DESTINATION];
  VaultState *state;
  u64 r = load_state(p, state_info, &state);
  if (r) return r;
  if (!state_info->is_writable) return VAULT_ERR_STATE_NOT_WRITABLE;
  r = check_admin(state, &ka[VAULT_REPAYMENT_ADMIN]);
  if (r) return r;
  SolSignerSeed seeds[4];
  r = authority_seeds(p, state, authority, seeds);
  if (r) return r;
  r = check_vault_token(state, vault_token, &ka[VAULT_REPAYMENT_TOKEN_PROGRAM]);
  if (r) return r;
  if (!pubkey_eq(mint->key, &state->payment_mint) || mint->data_len < TOKEN_MINT_SIZE) return VAULT_ERR_WRONG_PAYMENT_MINT;
  if (!destination->is_writable) return VAULT_ERR_DESTINATION_NOT_WRITABLE;
  if (find_destination(state, destination->key) == state->count) return VAULT_ERR_DESTINATION_NOT_WHITELISTED;
  if (args->amount == 0) return VAULT_ERR_ZERO_AMOUNT;
  if (args->sequence <= state->last_sequence) return VAULT_ERR_STALE_SEQUENCE;
  state->last_sequence = args->sequence;

  CpiContext c = {ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds signer = {seeds, 4};
  PdaSigner pda = {authority->key, &signer};
  TransferCheckedArgs transfer = {
      .token_program = &state->token_program,
      .source = vault_token->key,
      .mint = mint->key,
      .destination = destination->key,
      .authority = &pda,
      .extra = &ka[VAULT_REPAYMENT_ACCOUNTS],
      .extra_count = p->ka_num - VAULT_REPAYMENT_ACCOUNTS,
      .amount = args->amount,
      .decimals = mint->data[TOKEN_MINT_DECIMALS],
  };
  return token_transfer_checked(&c, &transfer);
}

/* --- CloseVault ---------------------------------------------------------------------------- */
static u64 close_vault(const SolParameters *p) {
  if (p->data_len != sizeof(VaultCloseArgs)) return VAULT_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < VAULT_CLOSE_VAULT_ACCOUNTS) return VAULT_ERR_NOT_ENOUGH_ACCOUNTS;
  SolAccountInfo *ka = p->ka;
  const SolAccountInfo *state_info = &ka[VAULT_CLOSE_VAULT_STATE];
  const SolAccountInfo *authority = &ka[VAULT_CLOSE_VAULT_AUTHORITY];
  const SolAccountInfo *vault_token = &ka[VAULT_CLOSE_VAULT_VAULT_TOKEN];
  const SolAccountInfo *rent_destination = &ka[VAULT_CLOSE_VAULT_RENT_DESTINATION];
  VaultState *state;
  u64 r = load_state(p, state_info, &state);
  if (r) return r;
  if (!state_info->is_writable) return VAULT_ERR_STATE_NOT_WRITABLE;
  r = check_admin(state, &ka[VAULT_CLOSE_VAULT_ADMIN]);
  if (r) return r;
  SolSignerSeed seeds[4];
  r = authority_seeds(p, state, authority, seeds);
  if (r) return r;
  r = check_vault_token(state, vault_token, &ka[VAULT_CLOSE_VAULT_TOKEN_PROGRAM]);
  if (r) return r;
  if (!rent_destination->is_writable) return VAULT_ERR_RENT_DESTINATION_NOT_WRITABLE;
  if (pubkey_eq(rent_destination->key, state_info->key) || pubkey_eq(rent_destination->key, vault_token->key)) return VAULT_ERR_INVALID_RENT_DESTINATION;
  /* Preconditions: nothing left to pay out, nobody left to pay. */
  if (state->count != 0) return VAULT_ERR_WHITELIST_NOT_EMPTY;
  if (vault_token->data_len < TOKEN_ACCOUNT_SIZE || load_u64(vault_token->data + TOKEN_ACCOUNT_AMOUNT) != 0) return VAULT_ERR_VAULT_NOT_EMPTY;

  CpiContext c = {ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds signer = {seeds, 4};
  PdaSigner pda = {authority->key, &signer};
  r = token_close_account(&c, &state->token_program, vault_token->key, rent_destination->key, &pda);
  if (r) return r;

  /* The state: data zeroed first (nothing can read a closed vault back, even if lamports
   * come back within this transaction), then every lamport to the destination; the
   * runtime deletes the account at the end of the transaction. */
  sol_memset_(state_info->data, 0, state_info->data_len);
  *rent_destination->lamports += *state_info->lamports;
  *state_info->lamports = 0;
  sol_log("vault closed");
  return SUCCESS;
}

u64 entrypoint(const u8 *input) {
  SolParameters p = {.ka = HEAP->ka};
  if (!sol_deserialize(input, &p, MAX_ACCOUNTS)) return VAULT_ERR_TOO_MANY_ACCOUNTS;
  if (p.data_len < 1) return VAULT_ERR_INVALID_INSTRUCTION;
  switch (p.data[0]) {
    case VAULT_IX_CREATE_VAULT:
      return create_vault(&p);
    case VAULT_IX_UPDATE_WHITELIST:
      return update_whitelist(&p);
    case VAULT_IX_REPAYMENT:
      return repayment(&p);
    case VAULT_IX_CLOSE_VAULT:
      return close_vault(&p);
    default:
      return VAULT_ERR_INVALID_INSTRUCTION;
  }
}
