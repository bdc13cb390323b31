/*
 * sbf.h: the project's own runtime header for onchain programs written in C and built
 * with Debian's clang for SBPF v0 (docs/programs.md). Types, the loader v2/v3 aligned
 * input deserializer, syscall prototypes, CPI and PDA helpers, weak memcpy/memset.
 *
 * Compiler limits this header works within: stack frames of at most 512 bytes (large
 * arrays live on the heap, HEAP_START), at most 5 arguments per call, no struct return
 * by value, unsigned division only, and no mutable globals or statics at all (the loader
 * accepts no writable data).
 */
#ifndef LEDGER_SBF_H
#define LEDGER_SBF_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed int i32;
typedef signed long long i64;
typedef unsigned long size_t;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

_Static_assert(sizeof(void *) == 8, "SBF pointers are 64-bit");
_Static_assert(sizeof(u64) == 8 && sizeof(u32) == 4 && sizeof(u16) == 2, "fixed-width types");

#define offsetof(type, member) __builtin_offsetof(type, member)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* --- results ------------------------------------------------------------------------
 * A program returns 0 for success, a custom error n (1..2^32-1, shown as Custom(n)), or a
 * builtin ProgramError (its number shifted left by 32). */
#define SUCCESS 0
#define BUILTIN(n) ((u64)(n) << 32)
#define ERROR_INVALID_ARGUMENT BUILTIN(2)
#define ERROR_INVALID_INSTRUCTION_DATA BUILTIN(3)
#define ERROR_NOT_ENOUGH_ACCOUNT_KEYS BUILTIN(11)

/* --- accounts and parameters --------------------------------------------------------- */
#define PUBKEY_SIZE 32
typedef struct {
  u8 x[PUBKEY_SIZE];
} SolPubkey;

/* The C ABI account view sol_invoke_signed_c reads: keep this exact layout. */
typedef struct {
  SolPubkey *key;
  u64 *lamports;
  u64 data_len;
  u8 *data;
  SolPubkey *owner;
  u64 rent_epoch;
  bool is_signer;
  bool is_writable;
  bool executable;
} SolAccountInfo;

typedef struct {
  SolAccountInfo *ka; /* accounts, in instruction order (duplicates repeat the original) */
  u64 ka_num;
  const u8 *data; /* instruction data */
  u64 data_len;
  const SolPubkey *program_id;
} SolParameters;

/* The program heap (32 KiB by default): where account views and CPI buffers live, since
 * a stack frame holds at most 512 bytes. Each program carves it up statically. */
#define HEAP_START ((u8 *)0x300000000ULL)
#define HEAP_SIZE (32 * 1024)

/* Loader v2/v3 aligned serialization: u64 account count; per account either a duplicate
 * marker (index u8 + 7 bytes padding) or 0xff, is_signer, is_writable, executable, 4 bytes
 * (original data length), key[32], owner[32], lamports u64, data_len u64, data, 10 KiB of
 * realloc room, padding to 8, rent_epoch u64; then u64 instruction data length, the data,
 * and the program id. */
#define MAX_PERMITTED_DATA_INCREASE (10 * 1024)
#define NON_DUP_MARKER 0xff

/* Fills ``params`` (its ``ka`` must point at room for ``ka_max`` views). False when the
 * instruction has more than ``ka_max`` accounts. */
static bool sol_deserialize(const u8 *input, SolParameters *params, u64 ka_max) {
  u64 count = *(const u64 *)input;
  input += sizeof(u64);
  if (count > ka_max) return false;
  params->ka_num = count;
  for (u64 i = 0; i < count; i++) {
    u8 dup = *input;
    input += 1;
    if (dup != NON_DUP_MARKER) {
      if (dup >= i) return false;
      input += 7;
      params->ka[i] = params->ka[dup];
      continue;
    }
    SolAccountInfo *a = &params->ka[i];
    a->is_signer = *input++ != 0;
    a->is_writable = *input++ != 0;
    a->executable = *input++ != 0;
    input += 4;
    a->key = (SolPubkey *)input;
    input += PUBKEY_SIZE;
    a->owner = (SolPubkey *)input;
    input += PUBKEY_SIZE;
    a->lamports = (u64 *)input;
    input += sizeof(u64);
    a->data_len = *(const u64 *)input;
    input += sizeof(u64);
    a->data = (u8 *)input;
    input += a->data_len + MAX_PERMITTED_DATA_INCREASE;
    input = (const u8 *)(((u64)input + 7) & ~7ULL);
    a->rent_epoch = *(const u64 *)input;
    input += sizeof(u64);
  }
  params->data_len = *(const u64 *)input;
  input += sizeof(u64);
  params->data = input;
  input += params->data_len;
  params->program_id = (const SolPubkey *)input;
  return true;
}

/* --- syscalls (names the runtime registers; the linker refuses any other) ------------ */
void sol_log_(const char *message, u64 len);
void sol_log_64_(u64 a, u64 b, u64 c, u64 d, u64 e);
void sol_log_pubkey(const SolPubkey *key);
void sol_log_compute_units_(void);
void sol_panic_(const char *file, u64 len, u64 line, u64 column);
void sol_memcpy_(void *dst, const void *src, u64 n);
void sol_memmove_(void *dst, const void *src, u64 n);
void sol_memset_(void *dst, u8 value, u64 n);
void sol_memcmp_(const void *a, const void *b, u64 n, i32 *result);
void sol_set_return_data(const u8 *data, u64 len);
u64 sol_sha256(const void *slices, u64 count, u8 *out);

typedef struct {
  const u8 *addr;
  u64 len;
} SolSignerSeed;

typedef struct {
  const SolSignerSeed *addr;
  u64 len;
} SolSignerSeeds;

u64 sol_create_program_address(const SolSignerSeed *seeds, u64 count, const SolPubkey *program_id, SolPubkey *out);
u64 sol_try_find_program_address(const SolSignerSeed *seeds, u64 count, const SolPubkey *program_id, SolPubkey *out, u8 *bump);

typedef struct {
  SolPubkey *pubkey;
  bool is_writable;
  bool is_signer;
} SolAccountMeta;

typedef struct {
  SolPubkey *program_id;
  SolAccountMeta *accounts;
  u64 account_len;
  u8 *data;
  u64 data_len;
} SolInstruction;

u64 sol_invoke_signed_c(const SolInstruction *instruction, const SolAccountInfo *infos, u64 info_count, const SolSignerSeeds *seeds, u64 seeds_count);

/* Rent: exemption_threshold is an IEEE-754 double, kept as its bits (no floating point
 * in SBPF v0). */
typedef struct {
  u64 lamports_per_byte_year;
  u64 exemption_threshold_bits;
  u8 burn_percent;
} SolRent;
u64 sol_get_rent_sysvar(SolRent *out);

typedef struct {
  u64 slot;
  i64 epoch_start_timestamp;
  u64 epoch;
  u64 leader_schedule_epoch;
  i64 unix_timestamp;
} SolClock;
u64 sol_get_clock_sysvar(SolClock *out);

/* clang may emit calls to these for struct copies; the syscalls do the work. */
__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
  sol_memcpy_(dst, src, n);
  return dst;
}
__attribute__((weak)) void *memset(void *dst, int value, size_t n) {
  sol_memset_(dst, (u8)value, n);
  return dst;
}

/* --- small helpers ------------------------------------------------------------------- */
#define sol_log(literal) sol_log_(literal, sizeof(literal) - 1)
#define sol_panic() sol_panic_(__FILE__, sizeof(__FILE__) - 1, __LINE__, 0)

/* Pubkeys in the input, in the layouts this project defines and in read-only data are
 * 8-byte aligned: four 64-bit compares. */
static inline bool pubkey_eq(const SolPubkey *a, const SolPubkey *b) {
  const u64 *x = (const u64 *)a, *y = (const u64 *)b;
  return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* Any alignment (fields of other programs' accounts, e.g. Token-2022 extensions). */
static inline bool bytes_eq(const void *a, const void *b, u64 n) {
  i32 result = 1;
  sol_memcmp_(a, b, n, &result);
  return result == 0;
}

static inline bool pubkey_is_zero(const SolPubkey *a) {
  const u64 *x = (const u64 *)a;
  return (x[0] | x[1] | x[2] | x[3]) == 0;
}

static inline void pubkey_copy(SolPubkey *dst, const SolPubkey *src) {
  u64 *d = (u64 *)dst;
  const u64 *s = (const u64 *)src;
  d[0] = s[0];
  d[1] = s[1];
  d[2] = s[2];
  d[3] = s[3];
}

/* Little-endian loads and stores at any alignment (instruction data, foreign layouts). */
static inline u64 load_u64(const u8 *p) {
  u64 v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline u32 load_u32(const u8 *p) {
  return (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) | ((u32)p[3] << 24);
}
static inline void store_u64(u8 *p, u64 v) {
  for (int i = 0; i < 8; i++) p[i] = (u8)(v >> (8 * i));
}
static inline void store_u32(u8 *p, u32 v) {
  for (int i = 0; i < 4; i++) p[i] = (u8)(v >> (8 * i));
}

/* --- program derived addresses ------------------------------------------------------- */
static inline bool pda_create(const SolSignerSeed *seeds, u64 count, const SolPubkey *program_id, SolPubkey *out) {
  return sol_create_program_address(seeds, count, program_id, out) == 0;
}
static inline bool pda_find(const SolSignerSeed *seeds, u64 count, const SolPubkey *program_id, SolPubkey *out, u8 *bump) {
  return sol_try_find_program_address(seeds, count, program_id, out, bump) == 0;
}

/* --- well-known programs --------------------------------------------------------------- */
/* 11111111111111111111111111111111 */
static const SolPubkey SYSTEM_PROGRAM_ID __attribute__((aligned(8), unused)) = {{0}};
/* TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA */
static const SolPubkey TOKEN_PROGRAM_ID __attribute__((aligned(8), unused)) = {{
    0x06, 0xdd, 0xf6, 0xe1, 0xd7, 0x65, 0xa1, 0x93, 0xd9, 0xcb, 0xe1, 0x46, 0xce, 0xeb, 0x79, 0xac,
    0x1c, 0xb4, 0x85, 0xed, 0x5f, 0x5b, 0x37, 0x91, 0x3a, 0x8c, 0xf5, 0x85, 0x7e, 0xff, 0x00, 0xa9}};
/* TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb */
static const SolPubkey TOKEN_2022_PROGRAM_ID __attribute__((aligned(8), unused)) = {{
    0x06, 0xdd, 0xf6, 0xe1, 0xee, 0x75, 0x8f, 0xde, 0x18, 0x42, 0x5d, 0xbc, 0xe4, 0x6c, 0xcd, 0xda,
    0xb6, 0x1a, 0xfc, 0x4d, 0x83, 0xb9, 0x0d, 0x27, 0xfe, 0xbd, 0xf9, 0x28, 0xd8, 0xa1, 0x8b, 0xfc}};
/* ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL */
static const SolPubkey ASSOCIATED_TOKEN_PROGRAM_ID __attribute__((aligned(8), unused)) = {{
    0x8c, 0x97, 0x25, 0x8f, 0x4e, 0x24, 0x89, 0xf1, 0xbb, 0x3d, 0x10, 0x29, 0x14, 0x8e, 0x0d, 0x83,
    0x0b, 0x5a, 0x13, 0x99, 0xda, 0xff, 0x10, 0x84, 0x04, 0x8e, 0x7b, 0xd8, 0xdb, 0xe9, 0xf8, 0x59}};

static inline bool is_token_program(const SolPubkey *key) {
  return pubkey_eq(key, &TOKEN_PROGRAM_ID) || pubkey_eq(key, &TOKEN_2022_PROGRAM_ID);
}

/* --- rent ---------------------------------------------------------------------------- */
#define ACCOUNT_STORAGE_OVERHEAD 128

/* Minimum balance for rent exemption of ``space`` bytes, as the runtime computes it
 * ((128 + space) * lamports_per_byte_year * threshold, truncated) with the threshold's
 * double decoded in integers. False when the threshold cannot be applied exactly. */
static inline bool rent_minimum_balance(u64 space, u64 *out) {
  SolRent rent;
  if (sol_get_rent_sysvar(&rent) != 0) return false;
  u64 bits = rent.exemption_threshold_bits;
  u64 exponent = (bits >> 52) & 0x7ff;
  u64 mantissa = bits & ((1ULL << 52) - 1);
  if (bits >> 63) return false; /* negative */
  if (exponent == 0 && mantissa == 0) {
    *out = 0;
    return true;
  }
  if (exponent == 0 || exponent == 0x7ff) return false; /* subnormal, infinite, NaN */
  /* threshold = mantissa * 2^shift exactly; drop the mantissa's trailing zero bits. */
  mantissa |= 1ULL << 52;
  i64 shift = (i64)exponent - 1075;
  while ((mantissa & 1) == 0) {
    mantissa >>= 1;
    shift++;
  }
  if (mantissa >> 20) return false; /* more precision than an exact product can hold */
  u64 bytes = ACCOUNT_STORAGE_OVERHEAD + space;
  if (rent.lamports_per_byte_year > (1ULL << 42) / bytes) return false;
  u64 product = bytes * rent.lamports_per_byte_year * mantissa; /* < 2^62 */
  if (shift >= 0) {
    if (shift > 62 || (product >> (62 - shift)) != 0) return false;
    *out = product << shift;
  } else {
    *out = shift <= -63 ? 0 : product >> (u64)(-shift);
  }
  return true;
}

/* --- CPI: the System, Token and Associated Token Account programs -------------------- */

/* Instruction data and metas for one CPI (keep it on the heap: it outgrows a frame). */
typedef struct {
  SolAccountMeta metas[10];
  u8 data[64];
} CpiScratch;

typedef struct {
  const SolAccountInfo *infos; /* every account of the instruction, for the runtime to match */
  u64 count;
  CpiScratch *scratch;
} CpiContext;

/* A PDA of the calling program that signs a CPI: its key and seeds (bump included). */
typedef struct {
  SolPubkey *key;
  const SolSignerSeeds *seeds;
} PdaSigner;

static inline u64 cpi(const CpiContext *c, const SolPubkey *program, u64 meta_count, u64 data_len, const SolSignerSeeds *signer) {
  SolInstruction ix = {(SolPubkey *)program, c->scratch->metas, meta_count, c->scratch->data, data_len};
  return sol_invoke_signed_c(&ix, c->infos, c->count, signer, signer ? 1 : 0);
}

/* System Transfer (2) from ``from`` (a signer of the transaction, or a PDA with ``signer``). */
static inline u64 system_transfer(const CpiContext *c, SolPubkey *from, SolPubkey *to, u64 lamports, const SolSignerSeeds *signer) {
  CpiScratch *s = c->scratch;
  s->metas[0] = (SolAccountMeta){from, true, true};
  s->metas[1] = (SolAccountMeta){to, true, false};
  store_u32(s->data, 2);
  store_u64(s->data + 4, lamports);
  return cpi(c, &SYSTEM_PROGRAM_ID, 2, 12, signer);
}

typedef struct {
  const SolAccountInfo *payer;   /* pays the rent; signs the transaction */
  const SolAccountInfo *account; /* the new account: a PDA of the calling program */
  const SolSignerSeeds *seeds;   /* its seeds, bump included */
  const SolPubkey *owner;        /* the program that will own it */
  u64 space;
  u64 rent;                      /* lamports it must hold */
} CreateAccountArgs;

/* Creates a PDA account with System Transfer (the rent it lacks), Allocate and Assign:
 * unlike CreateAccount, this also works when someone funded the address beforehand to
 * block the creation. */
static inline u64 create_pda_account(const CpiContext *c, const CreateAccountArgs *a) {
  u64 have = *a->account->lamports;
  u64 r;
  if (have < a->rent) {
    r = system_transfer(c, a->payer->key, a->account->key, a->rent - have, NULL);
    if (r) return r;
  }
  CpiScratch *s = c->scratch;
  s->metas[0] = (SolAccountMeta){a->account->key, true, true};
  store_u32(s->data, 8);
  store_u64(s->data + 4, a->space);
  r = cpi(c, &SYSTEM_PROGRAM_ID, 1, 12, a->seeds);
  if (r) return r;
  store_u32(s->data, 1);
  sol_memcpy_(s->data + 4, a->owner, PUBKEY_SIZE);
  return cpi(c, &SYSTEM_PROGRAM_ID, 1, 36, a->seeds);
}

typedef struct {
  const SolPubkey *token_program;
  SolPubkey *source;
  SolPubkey *mint;
  SolPubkey *destination;
  const PdaSigner *authority;
  const SolAccountInfo *extra; /* accounts appended for a transfer hook */
  u64 extra_count;
  u64 amount;
  u8 decimals;
} TransferCheckedArgs;

/* Token TransferChecked (12); both token programs share the layout. */
static inline u64 token_transfer_checked(const CpiContext *c, const TransferCheckedArgs *a) {
  CpiScratch *s = c->scratch;
  if (a->extra_count > ARRAY_LEN(s->metas) - 4) return ERROR_INVALID_ARGUMENT;
  s->metas[0] = (SolAccountMeta){a->source, true, false};
  s->metas[1] = (SolAccountMeta){a->mint, false, false};
  s->metas[2] = (SolAccountMeta){a->destination, true, false};
  s->metas[3] = (SolAccountMeta){a->authority->key, false, true};
  for (u64 i = 0; i < a->extra_count; i++) s->metas[4 + i] = (SolAccountMeta){a->extra[i].key, a->extra[i].is_writable, false};
  s->data[0] = 12;
  store_u64(s->data + 1, a->amount);
  s->data[9] = a->decimals;
  return cpi(c, a->token_program, 4 + a->extra_count, 10, a->authority->seeds);
}

/* Token CloseAccount (9): the account's lamports go to ``destination``. */
static inline u64 token_close_account(const CpiContext *c, const SolPubkey *token_program, SolPubkey *account, SolPubkey *destination, const PdaSigner *authority) {
  CpiScratch *s = c->scratch;
  s->metas[0] = (SolAccountMeta){account, true, false};
  s->metas[1] = (SolAccountMeta){destination, true, false};
  s->metas[2] = (SolAccountMeta){authority->key, false, true};
  s->data[0] = 9;
  return cpi(c, token_program, 3, 1, authority->seeds);
}

typedef struct {
  SolPubkey *payer;
  SolPubkey *account; /* the associated address of (owner, token program, mint) */
  SolPubkey *owner;
  SolPubkey *mint;
  SolPubkey *token_program;
} AssociatedAccountArgs;

/* Associated Token Account CreateIdempotent (1): succeeds when the account already
 * exists for that owner and mint (anyone may create an associated account for anyone). */
static inline u64 associated_token_create(const CpiContext *c, const AssociatedAccountArgs *a) {
  CpiScratch *s = c->scratch;
  s->metas[0] = (SolAccountMeta){a->payer, true, true};
  s->metas[1] = (SolAccountMeta){a->account, true, false};
  s->metas[2] = (SolAccountMeta){a->owner, false, false};
  s->metas[3] = (SolAccountMeta){a->mint, false, false};
  s->metas[4] = (SolAccountMeta){(SolPubkey *)&SYSTEM_PROGRAM_ID, false, false};
  s->metas[5] = (SolAccountMeta){a->token_program, false, false};
  s->data[0] = 1;
  return cpi(c, &ASSOCIATED_TOKEN_PROGRAM_ID, 6, 1, NULL);
}

/* --- SPL token account and mint fields (both programs; Token-2022 adds extensions) ------ */
#define TOKEN_MINT_SIZE 82
#define TOKEN_ACCOUNT_SIZE 165
#define TOKEN_ACCOUNT_TYPE_OFFSET 165 /* Token-2022: 1 mint, 2 account */
#define TOKEN_TLV_START 166
#define TOKEN_MINT_AUTHORITY_OPTION 0 /* u32 COption tag, then the key at 4 */
#define TOKEN_MINT_DECIMALS 44
#define TOKEN_MINT_INITIALIZED 45
#define TOKEN_ACCOUNT_MINT 0
#define TOKEN_ACCOUNT_OWNER 32
#define TOKEN_ACCOUNT_AMOUNT 64
#define TOKEN_ACCOUNT_STATE 108

/* Token-2022 extension ``type`` of a mint or account, or NULL: the TLV entries (u16 type,
 * u16 length, value) after the account-type byte. ``*len`` receives the value length. */
static inline const u8 *token2022_extension(const u8 *data, u64 data_len, u16 type, u64 *len) {
  if (data_len <= TOKEN_TLV_START) return NULL;
  u64 at = TOKEN_TLV_START;
  while (at + 4 <= data_len) {
    u16 t = (u16)(data[at] | (data[at + 1] << 8));
    u64 l = (u64)(data[at + 2] | (data[at + 3] << 8));
    if (t == 0) return NULL;
    if (at + 4 + l > data_len) return NULL;
    if (t == type) {
      *len = l;
      return data + at + 4;
    }
    at += 4 + l;
  }
  return NULL;
}

#endif
