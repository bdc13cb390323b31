/*
 * allowlist_hook: a Token-2022 transfer hook that lets a transfer through only when the
 * destination token account's owner is on the mint's allow-list (docs/programs.md).
 * Layouts, instructions and error codes: abi.py (abi.h is generated from it).
 *
 * Every account is checked by hand: owners, signers, writability, PDAs and mints, each
 * failing with its own error code.
 */
#include "abi.h"

#define MAX_ACCOUNTS 16
#define EXT_TRANSFER_HOOK 14         /* mint extension: authority[32], program_id[32] */
#define EXT_TRANSFER_HOOK_ACCOUNT 15 /* account extension: transferring (u8) */

typedef struct {
  SolAccountInfo ka[MAX_ACCOUNTS];
  CpiScratch scratch;
} Heap;
#define HEAP ((Heap *)HEAP_START)
_Static_assert(sizeof(Heap) <= HEAP_SIZE, "heap layout");

static inline SolPubkey *owners(HookAllowList *list) { return (SolPubkey *)(list + 1); }

/* Index of ``owner`` in the allow-list, or ``count`` when it is not there. */
static u64 find_owner(HookAllowList *list, const SolPubkey *owner) {
  SolPubkey *entries = owners(list);
  u64 count = list->count;
  for (u64 i = 0; i < count; i++) {
    if (pubkey_eq(&entries[i], owner)) return i;
  }
  return count;
}

/* The allow-list in ``account``: owned by this program, of the current layout, sized for
 * its capacity. */
static u64 load_allow_list(const SolParameters *p, const SolAccountInfo *account, HookAllowList **out) {
  if (!pubkey_eq(account->owner, p->program_id)) return HOOK_ERR_ALLOW_LIST_WRONG_OWNER;
  if (account->data_len < sizeof(HookAllowList)) return HOOK_ERR_ALLOW_LIST_INVALID;
  HookAllowList *list = (HookAllowList *)account->data;
  if (list->kind != HOOK_ALLOW_LIST_KIND || list->version != HOOK_LAYOUT_VERSION || list->capacity > HOOK_MAX_CAPACITY ||
      list->count > list->capacity || account->data_len < sizeof(HookAllowList) + (u64)list->capacity * HOOK_OWNER_SIZE)
    return HOOK_ERR_ALLOW_LIST_INVALID;
  *out = list;
  return SUCCESS;
}

/* --- InitializeAllowList --------------------------------------------------------------- */
static u64 initialize(const SolParameters *p) {
  if (p->data_len != sizeof(HookInitializeArgs)) return HOOK_ERR_INVALID_INSTRUCTION;
  if (p->ka_num < HOOK_INITIALIZE_ALLOW_LIST_ACCOUNTS) return HOOK_ERR_NOT_ENOUGH_ACCOUNTS;
  const HookInitializeArgs *args = (const HookInitializeArgs *)p->data;
  const SolAccountInfo *payer = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_PAYER];
  const SolAccountInfo *validation = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_VALIDATION];
  const SolAccountInfo *allow = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_ALLOW_LIST];
  const SolAccountInfo *mint = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_MINT];
  const SolAccountInfo *authority = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_MINT_AUTHORITY];
  const SolAccountInfo *system = &p->ka[HOOK_INITIALIZE_ALLOW_LIST_SYSTEM_PROGRAM];

  if (!payer->is_signer) return HOOK_ERR_PAYER_NOT_SIGNER;
  if (!payer->is_writable) return HOOK_ERR_PAYER_NOT_WRITABLE;
  if (!pubkey_eq(system->key, &SYSTEM_PROGRAM_ID)) return HOOK_ERR_WRONG_SYSTEM_PROGRAM;

  /* The mint: Token-2022, initialized, its TransferHook naming this program. */
  if (!pubkey_eq(mint->owner, &TOKEN_2022_PROGRAM_ID)) return HOOK_ERR_MINT_NOT_TOKEN2022;
  if (mint->data_len < TOKEN_MINT_SIZE || mint->data[TOKEN_MINT_INITIALIZED] != 1) return HOOK_ERR_MINT_NOT_INITIALIZED;
  if (mint->data_len > TOKEN_ACCOUNT_TYPE_OFFSET && mint->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 1) return HOOK_ERR_MINT_NOT_INITIALIZED;
  u64 ext_len = 0;
  const u8 *hook = token2022_extension(mint->data, mint->data_len, EXT_TRANSFER_HOOK, &ext_len);
  if (hook == NULL || ext_len != 64 || !bytes_eq(hook + 32, p->program_id, PUBKEY_SIZE)) return HOOK_ERR_MINT_HOOK_NOT_THIS_PROGRAM;
  /* The mint authority (COption<Pubkey>: u32 tag, key) signs. */
  if (load_u32(mint->data + TOKEN_MINT_AUTHORITY_OPTION) != 1 || !bytes_eq(mint->data + 4, authority->key, PUBKEY_SIZE))
    return HOOK_ERR_MINT_AUTHORITY_MISMATCH;
  if (!authority->is_signer) return HOOK_ERR_MINT_AUTHORITY_NOT_SIGNER;

  if (args->capacity == 0 || args->capacity > HOOK_MAX_CAPACITY) return HOOK_ERR_INVALID_CAPACITY;
  if (pubkey_is_zero(&args->authority)) return HOOK_ERR_ZERO_OWNER;

  /* The two PDAs, at their canonical bumps, not created yet. */
  u8 vbump = 0, abump = 0;
  SolPubkey expected;
  SolSignerSeed vseeds[3] = {{HOOK_SEED_VALIDATION, HOOK_SEED_VALIDATION_LEN}, {mint->key->x, PUBKEY_SIZE}, {&vbump, 1}};
  SolSignerSeed aseeds[3] = {{HOOK_SEED_ALLOW_LIST, HOOK_SEED_ALLOW_LIST_LEN}, {mint->key->x, PUBKEY_SIZE}, {&abump, 1}};
  if (!pda_find(vseeds, 2, p->program_id, &expected, &vbump) || !pubkey_eq(&expected, validation->key)) return HOOK_ERR_WRONG_VALIDATION_ACCOUNT;
  if (!validation->is_writable) return HOOK_ERR_VALIDATION_NOT_WRITABLE;
  if (!pda_find(aseeds, 2, p->program_id, &expected, &abump) || !pubkey_eq(&expected, allow->key)) return HOOK_ERR_WRONG_ALLOW_LIST_ACCOUNT;
  if (!allow->is_writable) return HOOK_ERR_ALLOW_LIST_NOT_WRITABLE;
  if (validation->data_len != 0 || !pubkey_eq(validation->owner, &SYSTEM_PROGRAM_ID)) return HOOK_ERR_ALREADY_INITIALIZED;
  if (allow->data_len != 0 || !pubkey_eq(allow->owner, &SYSTEM_PROGRAM_ID)) return HOOK_ERR_ALREADY_INITIALIZED;

  u64 space = sizeof(HookAllowList) + (u64)args->capacity * HOOK_OWNER_SIZE;
  u64 vrent = 0, arent = 0;
  if (!rent_minimum_balance(HOOK_VALIDATION_DATA_LEN, &vrent) || !rent_minimum_balance(space, &arent)) return HOOK_ERR_RENT_UNAVAILABLE;

  CpiContext c = {p->ka, p->ka_num, &HEAP->scratch};
  SolSignerSeeds vsigner = {vseeds, 3}, asigner = {aseeds, 3};
  CreateAccountArgs create = {payer, validation, &vsigner, p->program_id, HOOK_VALIDATION_DATA_LEN, vrent};
  u64 r = create_pda_account(&c, &create);
  if (r) return r;
  create = (CreateAccountArgs){payer, allow, &asigner, p->program_id, space, arent};
  r = create_pda_account(&c, &create);
  if (r) return r;

  sol_memcpy_(validation->data, HOOK_VALIDATION_DATA, HOOK_VALIDATION_DATA_LEN);
  HookAllowList *list = (HookAllowList *)allow->data;
  list->kind = HOOK_ALLOW_LIST_KIND;
  list->version = HOOK_LAYOUT_VERSION;
  list->bump = abump;
  list->validation_bump = vbump;
  list->count = 0;
  list->capacity = args->capacity;
  pubkey_copy(&list->mint, mint->key);
  pubkey_copy(&list->authority, &args->authority);
  pubkey_copy(&list->validation, validation->key);
  sol_log("allow-list initialized");
  return SUCCESS;
}

/* --- AddOwner / RemoveOwner / SetAuthority --------------------------------------------- */
/* All three: the allow-list (writable, this program's) and its authority's signature. */
static u64 load_managed(const SolParameters *p, HookAllowList **list) {
  if (p->ka_num < HOOK_ADD_OWNER_ACCOUNTS) return HOOK_ERR_NOT_ENOUGH_ACCOUNTS;
  const SolAccountInfo *allow = &p->ka[HOOK_ADD_OWNER_ALLOW_LIST];
  const SolAccountInfo *authority = &p->ka[HOOK_ADD_OWNER_AUTHORITY];
  u64 r = load_allow_list(p, allow, list);
  if (r) return r;
  if (!allow->is_writable) return HOOK_ERR_ALLOW_LIST_NOT_WRITABLE;
  if (!pubkey_eq(&(*list)->authority, authority->key)) return HOOK_ERR_AUTHORITY_MISMATCH;
  if (!authority->is_signer) return HOOK_ERR_AUTHORITY_NOT_SIGNER;
  return SUCCESS;
}

static u64 add_owner(const SolParameters *p) {
  if (p->data_len != sizeof(HookAddOwnerArgs)) return HOOK_ERR_INVALID_INSTRUCTION;
  const HookAddOwnerArgs *args = (const HookAddOwnerArgs *)p->data;
  HookAllowList *list;
  u64 r = load_managed(p, &list);
  if (r) return r;
  if (pubkey_is_zero(&args->owner)) return HOOK_ERR_ZERO_OWNER;
  if (find_owner(list, &args->owner) != list->count) return HOOK_ERR_OWNER_ALREADY_ALLOWED;
  if (list->count >= list->capacity) return HOOK_ERR_ALLOW_LIST_FULL;
  pubkey_copy(&owners(list)[list->count], &args->owner);
  list->count += 1;
  return SUCCESS;
}

static u64 remove_owner(const SolParameters *p) {
  if (p->data_len != sizeof(HookRemoveOwnerArgs)) return HOOK_ERR_INVALID_INSTRUCTION;
  const HookRemoveOwnerArgs *args = (const HookRemoveOwnerArgs *)p->data;
  HookAllowList *list;
  u64 r = load_managed(p, &list);
  if (r) return r;
  u64 at = find_owner(list, &args->owner);
  if (at == list->count) return HOOK_ERR_OWNER_NOT_LISTED;
  SolPubkey *entries = owners(list);
  u64 last = list->count - 1;
  pubkey_copy(&entries[at], &entries[last]); /* order does not matter: swap in the last */
  sol_memset_(&entries[last], 0, PUBKEY_SIZE);
  list->count = (u32)last;
  return SUCCESS;
}

static u64 set_authority(const SolParameters *p) {
  if (p->data_len != sizeof(HookSetAuthorityArgs)) return HOOK_ERR_INVALID_INSTRUCTION;
  const HookSetAuthorityArgs *args = (const HookSetAuthorityArgs *)p->data;
  HookAllowList *list;
  u64 r = load_managed(p, &list);
  if (r) return r;
  if (pubkey_is_zero(&args->new_authority)) return HOOK_ERR_ZERO_OWNER;
  pubkey_copy(&list->authority, &args->new_authority);
  return SUCCESS;
}

/* --- Execute (called by Token-2022 inside TransferChecked) ------------------------------ */
/* A Token-2022 account of ``mint`` whose TransferHookAccount says it is mid-transfer. */
static u64 check_transferring(const SolAccountInfo *account) {
  if (!pubkey_eq(account->owner, &TOKEN_2022_PROGRAM_ID)) return HOOK_ERR_TOKEN_ACCOUNT_NOT_TOKEN2022;
  if (account->data_len <= TOKEN_ACCOUNT_TYPE_OFFSET || account->data[TOKEN_ACCOUNT_TYPE_OFFSET] != 2) return HOOK_ERR_TOKEN_ACCOUNT_NOT_TOKEN2022;
  u64 len = 0;
  const u8 *ext = token2022_extension(account->data, account->data_len, EXT_TRANSFER_HOOK_ACCOUNT, &len);
  if (ext == NULL || len < 1 || ext[0] != 1) return HOOK_ERR_NOT_TRANSFERRING;
  return SUCCESS;
}

static u64 execute(const SolParameters *p) {
  if (p->ka_num < HOOK_EXECUTE_ACCOUNTS) return HOOK_ERR_NOT_ENOUGH_ACCOUNTS;
  const SolAccountInfo *source = &p->ka[HOOK_EXECUTE_SOURCE];
  const SolAccountInfo *mint = &p->ka[HOOK_EXECUTE_MINT];
  const SolAccountInfo *destination = &p->ka[HOOK_EXECUTE_DESTINATION];
  const SolAccountInfo *validation = &p->ka[HOOK_EXECUTE_VALIDATION];
  HookAllowList *list;
  u64 r = load_allow_list(p, &p->ka[HOOK_EXECUTE_ALLOW_LIST], &list);
  if (r) return r;
  if (!pubkey_eq(&list->mint, mint->key)) return HOOK_ERR_ALLOW_LIST_MINT_MISMATCH;
  if (!pubkey_eq(&list->validation, validation->key)) return HOOK_ERR_WRONG_VALIDATION_ACCOUNT;
  r = check_transferring(source);
  if (r) return r;
  r = check_transferring(destination);
  if (r) return r;
  if (!pubkey_eq((const SolPubkey *)(destination->data + TOKEN_ACCOUNT_MINT), mint->key)) return HOOK_ERR_TOKEN_ACCOUNT_MINT_MISMATCH;
  const SolPubkey *owner = (const SolPubkey *)(destination->data + TOKEN_ACCOUNT_OWNER);
  if (find_owner(list, owner) == list->count) {
    sol_log("destination owner not on the allow-list");
    sol_log_pubkey(owner);
    return HOOK_ERR_DESTINATION_OWNER_NOT_ALLOWED;
  }
  return SUCCESS;
}

u64 entrypoint(const u8 *input) {
  SolParameters p = {.ka = HEAP->ka};
  if (!sol_deserialize(input, &p, MAX_ACCOUNTS)) return HOOK_ERR_TOO_MANY_ACCOUNTS;
  if (p.data_len == sizeof(HookExecuteArgs) && load_u64(p.data) == load_u64(HOOK_IX_EXECUTE)) return execute(&p);
  if (p.data_len < 1) return HOOK_ERR_INVALID_INSTRUCTION;
  switch (p.data[0]) {
    case HOOK_IX_INITIALIZE_ALLOW_LIST:
      return initialize(&p);
    case HOOK_IX_ADD_OWNER:
      return add_owner(&p);
    case HOOK_IX_REMOVE_OWNER:
      return remove_owner(&p);
    case HOOK_IX_SET_AUTHORITY:
      return set_authority(&p);
    default:
      return HOOK_ERR_INVALID_INSTRUCTION;
  }
}
