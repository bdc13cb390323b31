/* Generated from programs/allowlist_hook/abi.py by programs/toolchain/build.py: do not edit. */
/* Allow-list transfer hook for Token-2022 mints. */
#ifndef HOOK_ABI_H
#define HOOK_ABI_H
#include "sbf.h"

/* --- constants --- */
static const u8 HOOK_SEED_VALIDATION[19] __attribute__((aligned(8), unused)) = {0x65, 0x78, 0x74, 0x72, 0x61, 0x2d, 0x61, 0x63, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x2d, 0x6d, 0x65, 0x74, 0x61, 0x73};
#define HOOK_SEED_VALIDATION_LEN 19
static const u8 HOOK_SEED_ALLOW_LIST[10] __attribute__((aligned(8), unused)) = {0x61, 0x6c, 0x6c, 0x6f, 0x77, 0x2d, 0x6c, 0x69, 0x73, 0x74};
#define HOOK_SEED_ALLOW_LIST_LEN 10
static const u8 HOOK_VALIDATION_DATA[51] __attribute__((aligned(8), unused)) = {0x69, 0x25, 0x65, 0xc5, 0x4b, 0xfb, 0x66, 0x1a, 0x27, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x01, 0x0a, 0x61, 0x6c, 0x6c, 0x6f, 0x77, 0x2d, 0x6c, 0x69, 0x73, 0x74, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
#define HOOK_VALIDATION_DATA_LEN 51
#define HOOK_ALLOW_LIST_KIND 1ULL
#define HOOK_LAYOUT_VERSION 1ULL
#define HOOK_MAX_CAPACITY 256ULL
#define HOOK_OWNER_SIZE 32ULL

/* --- account layouts --- */
/* Allow-list account header; `capacity` owner keys (32 bytes each) follow it, the first `count` in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 bump;
  u8 validation_bump;
  u32 count;
  u32 capacity;
  u32 _pad;
  SolPubkey mint;
  SolPubkey authority;
  SolPubkey validation;
} HookAllowList;
_Static_assert(sizeof(HookAllowList) == 112, "HookAllowList size");
_Static_assert(offsetof(HookAllowList, kind) == 0, "HookAllowList.kind");
_Static_assert(offsetof(HookAllowList, version) == 1, "HookAllowList.version");
_Static_assert(offsetof(HookAllowList, bump) == 2, "HookAllowList.bump");
_Static_assert(offsetof(HookAllowList, validation_bump) == 3, "HookAllowList.validation_bump");
_Static_assert(offsetof(HookAllowList, count) == 4, "HookAllowList.count");
_Static_assert(offsetof(HookAllowList, capacity) == 8, "HookAllowList.capacity");
_Static_assert(offsetof(HookAllowList, _pad) == 12, "HookAllowList._pad");
_Static_assert(offsetof(HookAllowList, mint) == 16, "HookAllowList.mint");
_Static_assert(offsetof(HookAllowList, authority) == 48, "HookAllowList.authority");
_Static_assert(offsetof(HookAllowList, validation) == 80, "HookAllowList.validation");

/* --- instructions: selector, data layout, accounts in order --- */
#define HOOK_IX_INITIALIZE_ALLOW_LIST 0
typedef struct {
  u8 tag;
  u8 _pad[3];
  u32 capacity;
  SolPubkey authority;
} HookInitializeArgs;
_Static_assert(sizeof(HookInitializeArgs) == 40, "HookInitializeArgs size");
_Static_assert(offsetof(HookInitializeArgs, tag) == 0, "HookInitializeArgs.tag");
_Static_assert(offsetof(HookInitializeArgs, _pad) == 1, "HookInitializeArgs._pad");
_Static_assert(offsetof(HookInitializeArgs, capacity) == 4, "HookInitializeArgs.capacity");
_Static_assert(offsetof(HookInitializeArgs, authority) == 8, "HookInitializeArgs.authority");
enum {
  HOOK_INITIALIZE_ALLOW_LIST_PAYER = 0,
  HOOK_INITIALIZE_ALLOW_LIST_VALIDATION = 1,
  HOOK_INITIALIZE_ALLOW_LIST_ALLOW_LIST = 2,
  HOOK_INITIALIZE_ALLOW_LIST_MINT = 3,
  HOOK_INITIALIZE_ALLOW_LIST_MINT_AUTHORITY = 4,
  HOOK_INITIALIZE_ALLOW_LIST_SYSTEM_PROGRAM = 5,
  HOOK_INITIALIZE_ALLOW_LIST_ACCOUNTS = 6,
};

#define HOOK_IX_ADD_OWNER 1
typedef struct {
  u8 tag;
  u8 _pad[7];
  SolPubkey owner;
} HookAddOwnerArgs;
_Static_assert(sizeof(HookAddOwnerArgs) == 40, "HookAddOwnerArgs size");
_Static_assert(offsetof(HookAddOwnerArgs, tag) == 0, "HookAddOwnerArgs.tag");
_Static_assert(offsetof(HookAddOwnerArgs, _pad) == 1, "HookAddOwnerArgs._pad");
_Static_assert(offsetof(HookAddOwnerArgs, owner) == 8, "HookAddOwnerArgs.owner");
enum {
  HOOK_ADD_OWNER_ALLOW_LIST = 0,
  HOOK_ADD_OWNER_AUTHORITY = 1,
  HOOK_ADD_OWNER_ACCOUNTS = 2,
};

#define HOOK_IX_REMOVE_OWNER 2
typedef struct {
  u8 tag;
  u8 _pad[7];
  SolPubkey owner;
} HookRemoveOwnerArgs;
_Static_assert(sizeof(HookRemoveOwnerArgs) == 40, "HookRemoveOwnerArgs size");
_Static_assert(offsetof(HookRemoveOwnerArgs, tag) == 0, "HookRemoveOwnerArgs.tag");
_Static_assert(offsetof(HookRemoveOwnerArgs, _pad) == 1, "HookRemoveOwnerArgs._pad");
_Static_assert(offsetof(HookRemoveOwnerArgs, owner) == 8, "HookRemoveOwnerArgs.owner");
enum {
  HOOK_REMOVE_OWNER_ALLOW_LIST = 0,
  HOOK_REMOVE_OWNER_AUTHORITY = 1,
  HOOK_REMOVE_OWNER_ACCOUNTS = 2,
};

#define HOOK_IX_SET_AUTHORITY 3
typedef struct {
  u8 tag;
  u8 _pad[7];
  SolPubkey new_authority;
} HookSetAuthorityArgs;
_Static_assert(sizeof(HookSetAuthorityArgs) == 40, "HookSetAuthorityArgs size");
_Static_assert(offsetof(HookSetAuthorityArgs, tag) == 0, "HookSetAuthorityArgs.tag");
_Static_assert(offsetof(HookSetAuthorityArgs, _pad) == 1, "HookSetAuthorityArgs._pad");
_Static_assert(offsetof(HookSetAuthorityArgs, new_authority) == 8, "HookSetAuthorityArgs.new_authority");
enum {
  HOOK_SET_AUTHORITY_ALLOW_LIST = 0,
  HOOK_SET_AUTHORITY_AUTHORITY = 1,
  HOOK_SET_AUTHORITY_ACCOUNTS = 2,
};

static const u8 HOOK_IX_EXECUTE[8] __attribute__((aligned(8), unused)) = {0x69, 0x25, 0x65, 0xc5, 0x4b, 0xfb, 0x66, 0x1a};
typedef struct {
  u8 discriminator[8];
  u64 amount;
} HookExecuteArgs;
_Static_assert(sizeof(HookExecuteArgs) == 16, "HookExecuteArgs size");
_Static_assert(offsetof(HookExecuteArgs, discriminator) == 0, "HookExecuteArgs.discriminator");
_Static_assert(offsetof(HookExecuteArgs, amount) == 8, "HookExecuteArgs.amount");
enum {
  HOOK_EXECUTE_SOURCE = 0,
  HOOK_EXECUTE_MINT = 1,
  HOOK_EXECUTE_DESTINATION = 2,
  HOOK_EXECUTE_OWNER = 3,
  HOOK_EXECUTE_VALIDATION = 4,
  HOOK_EXECUTE_ALLOW_LIST = 5,
  HOOK_EXECUTE_ACCOUNTS = 6,
};

/* --- custom errors (Custom(code)) --- */
#define HOOK_ERR_INVALID_INSTRUCTION 7001 /* unknown instruction or data of the wrong length */
#define HOOK_ERR_NOT_ENOUGH_ACCOUNTS 7002 /* fewer accounts than the instruction lists */
#define HOOK_ERR_TOO_MANY_ACCOUNTS 7003 /* more accounts than the program reads (16) */
#define HOOK_ERR_PAYER_NOT_SIGNER 7004 /* the payer did not sign */
#define HOOK_ERR_PAYER_NOT_WRITABLE 7005 /* the payer is not writable */
#define HOOK_ERR_WRONG_SYSTEM_PROGRAM 7006 /* the system program account is not the System program */
#define HOOK_ERR_MINT_NOT_TOKEN2022 7007 /* the mint is not owned by Token-2022 */
#define HOOK_ERR_MINT_NOT_INITIALIZED 7008 /* the mint is not an initialized Token-2022 mint */
#define HOOK_ERR_MINT_HOOK_NOT_THIS_PROGRAM 7009 /* the mint's TransferHook extension does not name this program */
#define HOOK_ERR_MINT_AUTHORITY_MISMATCH 7010 /* the signer is not the mint's mint authority (or the mint has none) */
#define HOOK_ERR_MINT_AUTHORITY_NOT_SIGNER 7011 /* the mint authority did not sign */
#define HOOK_ERR_INVALID_CAPACITY 7012 /* capacity is 0 or above the maximum */
#define HOOK_ERR_WRONG_VALIDATION_ACCOUNT 7013 /* the validation account is not the PDA ["extra-account-metas", mint] */
#define HOOK_ERR_VALIDATION_NOT_WRITABLE 7014 /* the validation account is not writable */
#define HOOK_ERR_WRONG_ALLOW_LIST_ACCOUNT 7015 /* the allow-list is not the PDA ["allow-list", mint] */
#define HOOK_ERR_ALLOW_LIST_NOT_WRITABLE 7016 /* the allow-list is not writable */
#define HOOK_ERR_ALREADY_INITIALIZED 7017 /* the validation account or the allow-list already exists */
#define HOOK_ERR_RENT_UNAVAILABLE 7018 /* the rent sysvar cannot be read or applied */
#define HOOK_ERR_ALLOW_LIST_WRONG_OWNER 7019 /* the allow-list is not owned by this program */
#define HOOK_ERR_ALLOW_LIST_INVALID 7020 /* the allow-list's data is not an allow-list */
#define HOOK_ERR_AUTHORITY_MISMATCH 7021 /* the signer is not the allow-list's authority */
#define HOOK_ERR_AUTHORITY_NOT_SIGNER 7022 /* the allow-list's authority did not sign */
#define HOOK_ERR_OWNER_ALREADY_ALLOWED 7023 /* the owner is already on the allow-list */
#define HOOK_ERR_OWNER_NOT_LISTED 7024 /* the owner is not on the allow-list */
#define HOOK_ERR_ALLOW_LIST_FULL 7025 /* the allow-list holds `capacity` owners */
#define HOOK_ERR_ALLOW_LIST_MINT_MISMATCH 7026 /* the allow-list belongs to another mint */
#define HOOK_ERR_TOKEN_ACCOUNT_NOT_TOKEN2022 7027 /* the source or destination is not a Token-2022 account */
#define HOOK_ERR_NOT_TRANSFERRING 7028 /* the source or destination is not mid-transfer (Execute called outside a transfer) */
#define HOOK_ERR_TOKEN_ACCOUNT_MINT_MISMATCH 7029 /* the destination holds another mint */
#define HOOK_ERR_DESTINATION_OWNER_NOT_ALLOWED 7030 /* the destination's owner is not on the allow-list */
#define HOOK_ERR_ZERO_OWNER 7031 /* the owner or new authority is the all-zero key */

#endif /* HOOK_ABI_H */
