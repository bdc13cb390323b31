"""ABI of the loan remittance vault program (docs/programs.md, "loan_vault"): the one
definition of its accounts, instructions and errors; ``abi.h`` is generated from it.

A vault belongs to a (loan mint, payment mint) pair:

- the vault authority, PDA ``["vault-authority", loan_mint, payment_mint]``: owns the
  vault's token account and signs its transfers; it holds no data;
- the vault token account: the associated token account of the authority for the payment
  mint (under the payment mint's token program, SPL Token or Token-2022);
- the vault state, PDA ``["vault-whitelist", loan_mint, payment_mint]``, owned by this
  program: the admin, the recorded mints and accounts, the last repayment sequence and the
  whitelist of repayment destinations (token accounts of the payment mint).

Repayments carry a sequence number that must exceed the last one the vault recorded, so a
repayment instruction replayed in a new transaction fails with ``StaleSequence`` instead of
paying twice.
"""

from __future__ import annotations

from programs.toolchain.abi import Account, Error, Instruction, ProgramAbi, Struct

SEED_AUTHORITY = b"vault-authority"
SEED_STATE = b"vault-whitelist"
VAULT_KIND = 2
LAYOUT_VERSION = 1
#: A program may grow an account by at most 10 KiB per instruction, so the state is
#: created at its full size: 184 + 32 × 256 bytes.
MAX_CAPACITY = 256
ERROR_BASE = 7100
ACTION_ADD = 0
ACTION_REMOVE = 1
#: Accounts a repayment may forward to the token program after the fixed ones (a
#: Token-2022 transfer hook's extra accounts, its program and its validation account).
MAX_EXTRA_ACCOUNTS = 6

VAULT_STATE = Struct("VaultState", [
    ("kind", "u8"),
    ("version", "u8"),
    ("authority_bump", "u8"),
    ("state_bump", "u8"),
    ("count", "u32"),
    ("capacity", "u32"),
    ("_pad", "u32"),
    ("last_sequence", "u64"),
    ("loan_mint", "pubkey"),
    ("payment_mint", "pubkey"),
    ("admin", "pubkey"),
    ("vault_token", "pubkey"),
    ("token_program", "pubkey"),
], doc="Vault state header; `capacity` whitelisted destination token accounts (32 bytes each) follow it, the first `count` in use.")
DESTINATION_SIZE = 32


def state_size(capacity: int) -> int:
    return VAULT_STATE.size + DESTINATION_SIZE * capacity


INSTRUCTIONS = [
    Instruction(
        "CreateVault", 0,
        Struct("VaultCreateArgs", [("tag", "u8"), ("_pad", "u8[3]"), ("capacity", "u32")]),
        (
            Account("payer", writable=True, signer=True, doc="pays the rent of the state and the token account"),
            Account("state", writable=True, doc='PDA ["vault-whitelist", loan_mint, payment_mint]'),
            Account("authority", doc='PDA ["vault-authority", loan_mint, payment_mint]'),
            Account("vault_token", writable=True, doc="the authority's associated token account for the payment mint"),
            Account("loan_mint", doc="the loan's mint (SPL Token or Token-2022)"),
            Account("payment_mint", doc="the mint repayments are paid in, owned by `token_program`"),
            Account("loan_mint_authority", signer=True, doc="the loan mint's mint authority: only the loan's issuer opens its vault"),
            Account("admin", doc="recorded as the vault's admin (signs updates, repayments, closing)"),
            Account("system_program"),
            Account("token_program", doc="the payment mint's token program"),
            Account("associated_token_program"),
        ),
        doc="Creates the vault state (empty whitelist of `capacity` destinations) and the vault token account, and records the admin.",
    ),
    Instruction(
        "UpdateWhitelist", 1,
        Struct("VaultUpdateArgs", [("tag", "u8"), ("action", "u8")]),
        (
            Account("state", writable=True),
            Account("admin", signer=True),
            Account("destination", doc="the token account added or removed"),
        ),
        doc="Adds (action 0) or removes (action 1) one repayment destination: a token account of the payment mint.",
    ),
    Instruction(
        "Repayment", 2,
        Struct("VaultRepaymentArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("sequence", "u64"), ("amount", "u64")]),
        (
            Account("state", writable=True),
            Account("authority"),
            Account("vault_token", writable=True),
            Account("payment_mint"),
            Account("destination", writable=True, doc="a whitelisted token account"),
            Account("admin", signer=True),
            Account("token_program"),
        ),
        doc="Moves `amount` from the vault to a whitelisted destination (TransferChecked signed by the vault authority).",
        rest="a Token-2022 transfer hook's extra accounts, its program and validation account, forwarded to TransferChecked",
    ),
    Instruction(
        "CloseVault", 3,
        Struct("VaultCloseArgs", [("tag", "u8")]),
        (
            Account("state", writable=True),
            Account("authority"),
            Account("vault_token", writable=True),
            Account("admin", signer=True),
            Account("rent_destination", writable=True, doc="receives the rent of the token account and the state"),
            Account("token_program"),
        ),
        doc="Closes an empty vault (zero balance, empty whitelist): the token account and the state; rent to `rent_destination`.",
    ),
]

_ERRORS = [
    ("InvalidInstruction", "unknown instruction or data of the wrong length"),
    ("NotEnoughAccounts", "fewer accounts than the instruction lists"),
    ("TooManyAccounts", "more accounts than the program reads (16)"),
    ("PayerNotSigner", "the payer did not sign"),
    ("PayerNotWritable", "the payer is not writable"),
    ("WrongSystemProgram", "the system program account is not the System program"),
    ("WrongTokenProgram", "the token program is not SPL Token or Token-2022, or not the vault's"),
    ("WrongAssociatedTokenProgram", "the associated token program account is not the Associated Token Account program"),
    ("LoanMintInvalid", "the loan mint is not an initialized mint of SPL Token or Token-2022"),
    ("PaymentMintInvalid", "the payment mint is not an initialized mint of the token program"),
    ("SameMint", "the loan mint and the payment mint are the same"),
    ("LoanMintAuthorityMismatch", "the signer is not the loan mint's mint authority (or the mint has none)"),
    ("LoanMintAuthorityNotSigner", "the loan mint's mint authority did not sign"),
    ("ZeroAdmin", "the admin is the all-zero key"),
    ("InvalidCapacity", "capacity is 0 or above the maximum"),
    ("WrongVaultAuthority", 'the authority is not the PDA ["vault-authority", loan_mint, payment_mint]'),
    ("WrongVaultState", 'the state is not the PDA ["vault-whitelist", loan_mint, payment_mint]'),
    ("StateNotWritable", "the vault state is not writable"),
    ("VaultAlreadyExists", "the vault state already exists"),
    ("WrongVaultTokenAccount", "the token account is not the vault's"),
    ("VaultTokenNotWritable", "the vault token account is not writable"),
    ("RentUnavailable", "the rent sysvar cannot be read or applied"),
    ("VaultNotFound", "the vault state does not exist (never created, or closed)"),
    ("StateWrongOwner", "the vault state is not owned by this program"),
    ("StateInvalid", "the vault state's data is not a vault"),
    ("AdminMismatch", "the signer is not the vault's admin"),
    ("AdminNotSigner", "the vault's admin did not sign"),
    ("InvalidAction", "the whitelist action is neither add (0) nor remove (1)"),
    ("DestinationNotTokenAccount", "the destination is not an initialized token account of the vault's token program"),
    ("DestinationWrongMint", "the destination holds another mint than the vault's payment mint"),
    ("DestinationIsVault", "the vault's own token account cannot be a destination"),
    ("AlreadyWhitelisted", "the destination is already whitelisted"),
    ("WhitelistFull", "the whitelist holds `capacity` destinations"),
    ("WhitelistEntryMissing", "the destination to remove is not whitelisted"),
    ("WrongPaymentMint", "the mint is not the vault's payment mint"),
    ("DestinationNotWritable", "the destination is not writable"),
    ("DestinationNotWhitelisted", "the destination is not on the vault's whitelist"),
    ("ZeroAmount", "the amount is zero"),
    ("StaleSequence", "the repayment's sequence does not exceed the vault's last one (a replay)"),
    ("TooManyExtraAccounts", "more extra accounts than a repayment forwards"),
    ("WhitelistNotEmpty", "closing needs an empty whitelist"),
    ("VaultNotEmpty", "closing needs a zero balance in the vault token account"),
    ("RentDestinationNotWritable", "the rent destination is not writable"),
    ("InvalidRentDestination", "the rent destination is the vault state or the vault token account"),
]
ERRORS = [Error(name, ERROR_BASE + i, message) for i, (name, message) in enumerate(_ERRORS, start=1)]

ABI = ProgramAbi(
    name="loan_vault",
    prefix="VAULT",
    doc="Loan remittance vaults: a PDA-owned token account paying whitelisted destinations.",
    constants={
        "SEED_AUTHORITY": SEED_AUTHORITY,
        "SEED_STATE": SEED_STATE,
        "KIND": VAULT_KIND,
        "LAYOUT_VERSION": LAYOUT_VERSION,
        "MAX_CAPACITY": MAX_CAPACITY,
        "DESTINATION_SIZE": DESTINATION_SIZE,
        "ACTION_ADD": ACTION_ADD,
        "ACTION_REMOVE": ACTION_REMOVE,
        "MAX_EXTRA_ACCOUNTS": MAX_EXTRA_ACCOUNTS,
    },
    structs=[VAULT_STATE],
    instructions=INSTRUCTIONS,
    errors=ERRORS,
)
