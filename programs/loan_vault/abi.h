/* Generated from programs/loan_vault/abi.py by programs/toolchain/build.py: do not edit. */
/* Loan remittance vaults: a PDA-owned token account paying whitelisted destinations. */
#ifndef VAULT_ABI_H
#define VAULT_ABI_H
#include "sbf.h"

/* --- constants --- */
static const u8 VAULT_SEED_AUTHORITY[15] __attribute__((aligned(8), unused)) = {0x76, 0x61, 0x75, 0x6c, 0x74, 0x2d, 0x61, 0x75, 0x74, 0x68, 0x6f, 0x72, 0x69, 0x74, 0x79};
#define VAULT_SEED_AUTHORITY_LEN 15
static const u8 VAULT_SEED_STATE[15] __attribute__((aligned(8), unused)) = {0x76, 0x61, 0x75, 0x6c, 0x74, 0x2d, 0x77, 0x68, 0x69, 0x74, 0x65, 0x6c, 0x69, 0x73, 0x74};
#define VAULT_SEED_STATE_LEN 15
#define VAULT_KIND 2ULL
#define VAULT_LAYOUT_VERSION 1ULL
#define VAULT_MAX_CAPACITY 256ULL
#define VAULT_DESTINATION_SIZE 32ULL
#define VAULT_ACTION_ADD 0ULL
#define VAULT_ACTION_REMOVE 1ULL
#define VAULT_MAX_EXTRA_ACCOUNTS 6ULL

/* --- account layouts --- */
/* Vault state header; `capacity` whitelisted destination token accounts (32 bytes each) follow it, the first `count` in use. */
typedef struct {
  u8 kind;
  u8 version;
  u8 authority_bump;
  u8 state_bump;
  u32 count;
  u32 capacity;
  u32 _pad;
  u64 last_sequence;
  SolPubkey loan_mint;
  SolPubkey payment_mint;
  SolPubkey admin;
  SolPubkey vault_token;
  SolPubkey token_program;
} VaultState;
_Static_assert(sizeof(VaultState) == 184, "VaultState size");
_Static_assert(offsetof(VaultState, kind) == 0, "VaultState.kind");
_Static_assert(offsetof(VaultState, version) == 1, "VaultState.version");
_Static_assert(offsetof(VaultState, authority_bump) == 2, "VaultState.authority_bump");
_Static_assert(offsetof(VaultState, state_bump) == 3, "VaultState.state_bump");
_Static_assert(offsetof(VaultState, count) == 4, "VaultState.count");
_Static_assert(offsetof(VaultState, capacity) == 8, "VaultState.capacity");
_Static_assert(offsetof(VaultState, _pad) == 12, "VaultState._pad");
_Static_assert(offsetof(VaultState, last_sequence) == 16, "VaultState.last_sequence");
_Static_assert(offsetof(VaultState, loan_mint) == 24, "VaultState.loan_mint");
_Static_assert(offsetof(VaultState, payment_mint) == 56, "VaultState.payment_mint");
_Static_assert(offsetof(VaultState, admin) == 88, "VaultState.admin");
_Static_assert(offsetof(VaultState, vault_token) == 120, "VaultState.vault_token");
_Static_assert(offsetof(VaultState, token_program) == 152, "VaultState.token_program");

/* --- instructions: selector, data layout, accounts in order --- */
#define VAULT_IX_CREATE_VAULT 0
typedef struct {
  u8 tag;
  u8 _pad[3];
  u32 capacity;
} VaultCreateArgs;
_Static_assert(sizeof(VaultCreateArgs) == 8, "VaultCreateArgs size");
_Static_assert(offsetof(VaultCreateArgs, tag) == 0, "VaultCreateArgs.tag");
_Static_assert(offsetof(VaultCreateArgs, _pad) == 1, "VaultCreateArgs._pad");
_Static_assert(offsetof(VaultCreateArgs, capacity) == 4, "VaultCreateArgs.capacity");
enum {
  VAULT_CREATE_VAULT_PAYER = 0,
  VAULT_CREATE_VAULT_STATE = 1,
  VAULT_CREATE_VAULT_AUTHORITY = 2,
  VAULT_CREATE_VAULT_VAULT_TOKEN = 3,
  VAULT_CREATE_VAULT_LOAN_MINT = 4,
  VAULT_CREATE_VAULT_PAYMENT_MINT = 5,
  VAULT_CREATE_VAULT_LOAN_MINT_AUTHORITY = 6,
  VAULT_CREATE_VAULT_ADMIN = 7,
  VAULT_CREATE_VAULT_SYSTEM_PROGRAM = 8,
  VAULT_CREATE_VAULT_TOKEN_PROGRAM = 9,
  VAULT_CREATE_VAULT_ASSOCIATED_TOKEN_PROGRAM = 10,
  VAULT_CREATE_VAULT_ACCOUNTS = 11,
};

#define VAULT_IX_UPDATE_WHITELIST 1
typedef struct {
  u8 tag;
  u8 action;
} VaultUpdateArgs;
_Static_assert(sizeof(VaultUpdateArgs) == 2, "VaultUpdateArgs size");
_Static_assert(offsetof(VaultUpdateArgs, tag) == 0, "VaultUpdateArgs.tag");
_Static_assert(offsetof(VaultUpdateArgs, action) == 1, "VaultUpdateArgs.action");
enum {
  VAULT_UPDATE_WHITELIST_STATE = 0,
  VAULT_UPDATE_WHITELIST_ADMIN = 1,
  VAULT_UPDATE_WHITELIST_DESTINATION = 2,
  VAULT_UPDATE_WHITELIST_ACCOUNTS = 3,
};

#define VAULT_IX_REPAYMENT 2
typedef struct {
  u8 tag;
  u8 _pad[7];
  u64 sequence;
  u64 amount;
} VaultRepaymentArgs;
_Static_assert(sizeof(VaultRepaymentArgs) == 24, "VaultRepaymentArgs size");
_Static_assert(offsetof(VaultRepaymentArgs, tag) == 0, "VaultRepaymentArgs.tag");
_Static_assert(offsetof(VaultRepaymentArgs, _pad) == 1, "VaultRepaymentArgs._pad");
_Static_assert(offsetof(VaultRepaymentArgs, sequence) == 8, "VaultRepaymentArgs.sequence");
_Static_assert(offsetof(VaultRepaymentArgs, amount) == 16, "VaultRepaymentArgs.amount");
enum {
  VAULT_REPAYMENT_STATE = 0,
  VAULT_REPAYMENT_AUTHORITY = 1,
  VAULT_REPAYMENT_VAULT_TOKEN = 2,
  VAULT_REPAYMENT_PAYMENT_MINT = 3,
  VAULT_REPAYMENT_DESTINATION = 4,
  VAULT_REPAYMENT_ADMIN = 5,
  VAULT_REPAYMENT_TOKEN_PROGRAM = 6,
  VAULT_REPAYMENT_ACCOUNTS = 7,
};

#define VAULT_IX_CLOSE_VAULT 3
typedef struct {
  u8 tag;
} VaultCloseArgs;
_Static_assert(sizeof(VaultCloseArgs) == 1, "VaultCloseArgs size");
_Static_assert(offsetof(VaultCloseArgs, tag) == 0, "VaultCloseArgs.tag");
enum {
  VAULT_CLOSE_VAULT_STATE = 0,
  VAULT_CLOSE_VAULT_AUTHORITY = 1,
  VAULT_CLOSE_VAULT_VAULT_TOKEN = 2,
  VAULT_CLOSE_VAULT_ADMIN = 3,
  VAULT_CLOSE_VAULT_RENT_DESTINATION = 4,
  VAULT_CLOSE_VAULT_TOKEN_PROGRAM = 5,
  VAULT_CLOSE_VAULT_ACCOUNTS = 6,
};

/* --- custom errors (Custom(code)) --- */
#define VAULT_ERR_INVALID_INSTRUCTION 7101 /* unknown instruction or data of the wrong length */
#define VAULT_ERR_NOT_ENOUGH_ACCOUNTS 7102 /* fewer accounts than the instruction lists */
#define VAULT_ERR_TOO_MANY_ACCOUNTS 7103 /* more accounts than the program reads (16) */
#define VAULT_ERR_PAYER_NOT_SIGNER 7104 /* the payer did not sign */
#define VAULT_ERR_PAYER_NOT_WRITABLE 7105 /* the payer is not writable */
#define VAULT_ERR_WRONG_SYSTEM_PROGRAM 7106 /* the system program account is not the System program */
#define VAULT_ERR_WRONG_TOKEN_PROGRAM 7107 /* the token program is not SPL Token or Token-2022, or not the vault's */
#define VAULT_ERR_WRONG_ASSOCIATED_TOKEN_PROGRAM 7108 /* the associated token program account is not the Associated Token Account program */
#define VAULT_ERR_LOAN_MINT_INVALID 7109 /* the loan mint is not an initialized mint of SPL Token or Token-2022 */
#define VAULT_ERR_PAYMENT_MINT_INVALID 7110 /* the payment mint is not an initialized mint of the token program */
#define VAULT_ERR_SAME_MINT 7111 /* the loan mint and the payment mint are the same */
#define VAULT_ERR_LOAN_MINT_AUTHORITY_MISMATCH 7112 /* the signer is not the loan mint's mint authority (or the mint has none) */
#define VAULT_ERR_LOAN_MINT_AUTHORITY_NOT_SIGNER 7113 /* the loan mint's mint authority did not sign */
#define VAULT_ERR_ZERO_ADMIN 7114 /* the admin is the all-zero key */
#define VAULT_ERR_INVALID_CAPACITY 7115 /* capacity is 0 or above the maximum */
#define VAULT_ERR_WRONG_VAULT_AUTHORITY 7116 /* the authority is not the PDA ["vault-authority", loan_mint, payment_mint] */
#define VAULT_ERR_WRONG_VAULT_STATE 7117 /* the state is not the PDA ["vault-whitelist", loan_mint, payment_mint] */
#define VAULT_ERR_STATE_NOT_WRITABLE 7118 /* the vault state is not writable */
#define VAULT_ERR_VAULT_ALREADY_EXISTS 7119 /* the vault state already exists */
#define VAULT_ERR_WRONG_VAULT_TOKEN_ACCOUNT 7120 /* the token account is not the vault's */
#define VAULT_ERR_VAULT_TOKEN_NOT_WRITABLE 7121 /* the vault token account is not writable */
#define VAULT_ERR_RENT_UNAVAILABLE 7122 /* the rent sysvar cannot be read or applied */
#define VAULT_ERR_VAULT_NOT_FOUND 7123 /* the vault state does not exist (never created, or closed) */
#define VAULT_ERR_STATE_WRONG_OWNER 7124 /* the vault state is not owned by this program */
#define VAULT_ERR_STATE_INVALID 7125 /* the vault state's data is not a vault */
#define VAULT_ERR_ADMIN_MISMATCH 7126 /* the signer is not the vault's admin */
#define VAULT_ERR_ADMIN_NOT_SIGNER 7127 /* the vault's admin did not sign */
#define VAULT_ERR_INVALID_ACTION 7128 /* the whitelist action is neither add (0) nor remove (1) */
#define VAULT_ERR_DESTINATION_NOT_TOKEN_ACCOUNT 7129 /* the destination is not an initialized token account of the vault's token program */
#define VAULT_ERR_DESTINATION_WRONG_MINT 7130 /* the destination holds another mint than the vault's payment mint */
#define VAULT_ERR_DESTINATION_IS_VAULT 7131 /* the vault's own token account cannot be a destination */
#define VAULT_ERR_ALREADY_WHITELISTED 7132 /* the destination is already whitelisted */
#define VAULT_ERR_WHITELIST_FULL 7133 /* the whitelist holds `capacity` destinations */
#define VAULT_ERR_WHITELIST_ENTRY_MISSING 7134 /* the destination to remove is not whitelisted */
#define VAULT_ERR_WRONG_PAYMENT_MINT 7135 /* the mint is not the vault's payment mint */
#define VAULT_ERR_DESTINATION_NOT_WRITABLE 7136 /* the destination is not writable */
#define VAULT_ERR_DESTINATION_NOT_WHITELISTED 7137 /* the destination is not on the vault's whitelist */
#define VAULT_ERR_ZERO_AMOUNT 7138 /* the amount is zero */
#define VAULT_ERR_STALE_SEQUENCE 7139 /* the repayment's sequence does not exceed the vault's last one (a replay) */
#define VAULT_ERR_TOO_MANY_EXTRA_ACCOUNTS 7140 /* more extra accounts than a repayment forwards */
#define VAULT_ERR_WHITELIST_NOT_EMPTY 7141 /* closing needs an empty whitelist */
#define VAULT_ERR_VAULT_NOT_EMPTY 7142 /* closing needs a zero balance in the vault token account */
#define VAULT_ERR_RENT_DESTINATION_NOT_WRITABLE 7143 /* the rent destination is not writable */
#define VAULT_ERR_INVALID_RENT_DESTINATION 7144 /* the rent destination is the vault state or the vault token account */

#endif /* VAULT_ABI_H */
