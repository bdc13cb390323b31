"""ABI of the allow-list transfer-hook program (docs/programs.md, "allowlist_hook"): the
one definition of its accounts, instructions and errors; ``abi.h`` is generated from it.

A Token-2022 mint whose TransferHook extension names this program lets a transfer through
only when the destination token account's owner is on the mint's allow-list. The program
implements the spl-transfer-hook-interface's Execute instruction (8-byte discriminator
``sha256("spl-transfer-hook-interface:execute")[:8]``, then the amount, u64) and keeps,
per mint:

- the validation account, PDA ``["extra-account-metas", mint]``: the interface's
  ExtraAccountMetaList TLV (8-byte type = the Execute discriminator, u32 length, then a
  u32 count and 35-byte ExtraAccountMeta entries) naming one extra account, the
  allow-list (a PDA of this program from the literal seed and the mint, account index 1);
- the allow-list account, PDA ``["allow-list", mint]``: a header and up to ``capacity``
  owners. It does not depend on the destination's data, so a transfer that creates the
  destination's token account on the way still resolves its extra accounts.
"""

from __future__ import annotations

import hashlib
import struct

from programs.toolchain.abi import Account, Error, Instruction, ProgramAbi, Struct

EXECUTE_DISCRIMINATOR = hashlib.sha256(b"spl-transfer-hook-interface:execute").digest()[:8]
SEED_VALIDATION = b"extra-account-metas"
SEED_ALLOW_LIST = b"allow-list"
ALLOW_LIST_KIND = 1
LAYOUT_VERSION = 1
#: A program may grow an account by at most 10 KiB per instruction (the runtime's
#: MAX_PERMITTED_DATA_INCREASE), so the allow-list is created at its full size, ≤ 10 KiB.
MAX_CAPACITY = 256
ERROR_BASE = 7000

# ExtraAccountMeta discriminator 1: a PDA of the hook program; seeds packed into the
# 32-byte address_config: Literal (1, length, bytes), AccountKey (3, index); 0 ends them.
_EXTRA_META_PDA = 1
_SEED_LITERAL = 1
_SEED_ACCOUNT_KEY = 3
_MINT_INDEX = 1  # Execute's accounts: source, mint, destination, authority, validation


def _validation_data() -> bytes:
    config = bytes([_SEED_LITERAL, len(SEED_ALLOW_LIST)]) + SEED_ALLOW_LIST + bytes([_SEED_ACCOUNT_KEY, _MINT_INDEX])
    meta = bytes([_EXTRA_META_PDA]) + config.ljust(32, b"\0") + bytes([0, 0])  # not signer, read-only
    value = struct.pack("<I", 1) + meta
    return EXECUTE_DISCRIMINATOR + struct.pack("<I", len(value)) + value


#: The validation account's whole data, written once at initialization.
VALIDATION_DATA = _validation_data()

ALLOW_LIST = Struct("HookAllowList", [
    ("kind", "u8"),
    ("version", "u8"),
    ("bump", "u8"),
    ("validation_bump", "u8"),
    ("count", "u32"),
    ("capacity", "u32"),
    ("_pad", "u32"),
    ("mint", "pubkey"),
    ("authority", "pubkey"),
    ("validation", "pubkey"),
], doc="Allow-list account header; `capacity` owner keys (32 bytes each) follow it, the first `count` in use.")
OWNER_SIZE = 32


def allow_list_size(capacity: int) -> int:
    return ALLOW_LIST.size + OWNER_SIZE * capacity


_OWNER_ARGS = [("tag", "u8"), ("_pad", "u8[7]"), ("owner", "pubkey")]
_MANAGE = (Account("allow_list", writable=True, doc="the mint's allow-list"), Account("authority", signer=True, doc="the allow-list's authority"))

INSTRUCTIONS = [
    Instruction(
        "InitializeAllowList", 0,
        Struct("HookInitializeArgs", [("tag", "u8"), ("_pad", "u8[3]"), ("capacity", "u32"), ("authority", "pubkey")]),
        (
            Account("payer", writable=True, signer=True, doc="pays the rent of both accounts"),
            Account("validation", writable=True, doc='PDA ["extra-account-metas", mint]'),
            Account("allow_list", writable=True, doc='PDA ["allow-list", mint]'),
            Account("mint", doc="a Token-2022 mint whose TransferHook names this program"),
            Account("mint_authority", signer=True, doc="the mint's mint authority"),
            Account("system_program"),
        ),
        doc="Creates the mint's validation account (ExtraAccountMetaList) and its empty allow-list, managed by `authority`.",
    ),
    Instruction("AddOwner", 1, Struct("HookAddOwnerArgs", _OWNER_ARGS), _MANAGE, doc="Allows transfers to token accounts owned by `owner`."),
    Instruction("RemoveOwner", 2, Struct("HookRemoveOwnerArgs", _OWNER_ARGS), _MANAGE, doc="Stops allowing `owner`."),
    Instruction(
        "SetAuthority", 3,
        Struct("HookSetAuthorityArgs", [("tag", "u8"), ("_pad", "u8[7]"), ("new_authority", "pubkey")]),
        _MANAGE, doc="Hands the allow-list to a new authority.",
    ),
    Instruction(
        "Execute", EXECUTE_DISCRIMINATOR,
        Struct("HookExecuteArgs", [("discriminator", "u8[8]"), ("amount", "u64")]),
        (
            Account("source", doc="source token account (transferring)"),
            Account("mint"),
            Account("destination", doc="destination token account (transferring)"),
            Account("owner", doc="the source's owner or delegate"),
            Account("validation", doc="the mint's validation account"),
            Account("allow_list", doc="the extra account the validation account names"),
        ),
        doc="The transfer hook: Token-2022 calls it inside TransferChecked; fails unless the destination's owner is allowed.",
    ),
]

_ERRORS = [
    ("InvalidInstruction", "unknown instruction or data of the wrong length"),
    ("NotEnoughAccounts", "fewer accounts than the instruction lists"),
    ("TooManyAccounts", "more accounts than the program reads (16)"),
    ("PayerNotSigner", "the payer did not sign"),
    ("PayerNotWritable", "the payer is not writable"),
    ("WrongSystemProgram", "the system program account is not the System program"),
    ("MintNotToken2022", "the mint is not owned by Token-2022"),
    ("MintNotInitialized", "the mint is not an initialized Token-2022 mint"),
    ("MintHookNotThisProgram", "the mint's TransferHook extension does not name this program"),
    ("MintAuthorityMismatch", "the signer is not the mint's mint authority (or the mint has none)"),
    ("MintAuthorityNotSigner", "the mint authority did not sign"),
    ("InvalidCapacity", "capacity is 0 or above the maximum"),
    ("WrongValidationAccount", 'the validation account is not the PDA ["extra-account-metas", mint]'),
    ("ValidationNotWritable", "the validation account is not writable"),
    ("WrongAllowListAccount", 'the allow-list is not the PDA ["allow-list", mint]'),
    ("AllowListNotWritable", "the allow-list is not writable"),
    ("AlreadyInitialized", "the validation account or the allow-list already exists"),
    ("RentUnavailable", "the rent sysvar cannot be read or applied"),
    ("AllowListWrongOwner", "the allow-list is not owned by this program"),
    ("AllowListInvalid", "the allow-list's data is not an allow-list"),
    ("AuthorityMismatch", "the signer is not the allow-list's authority"),
    ("AuthorityNotSigner", "the allow-list's authority did not sign"),
    ("OwnerAlreadyAllowed", "the owner is already on the allow-list"),
    ("OwnerNotListed", "the owner is not on the allow-list"),
    ("AllowListFull", "the allow-list holds `capacity` owners"),
    ("AllowListMintMismatch", "the allow-list belongs to another mint"),
    ("TokenAccountNotToken2022", "the source or destination is not a Token-2022 account"),
    ("NotTransferring", "the source or destination is not mid-transfer (Execute called outside a transfer)"),
    ("TokenAccountMintMismatch", "the destination holds another mint"),
    ("DestinationOwnerNotAllowed", "the destination's owner is not on the allow-list"),
    ("ZeroOwner", "the owner or new authority is the all-zero key"),
]
ERRORS = [Error(name, ERROR_BASE + i, message) for i, (name, message) in enumerate(_ERRORS, start=1)]

ABI = ProgramAbi(
    name="allowlist_hook",
    prefix="HOOK",
    doc="Allow-list transfer hook for Token-2022 mints.",
    constants={
        "SEED_VALIDATION": SEED_VALIDATION,
        "SEED_ALLOW_LIST": SEED_ALLOW_LIST,
        "VALIDATION_DATA": VALIDATION_DATA,
        "ALLOW_LIST_KIND": ALLOW_LIST_KIND,
        "LAYOUT_VERSION": LAYOUT_VERSION,
        "MAX_CAPACITY": MAX_CAPACITY,
        "OWNER_SIZE": OWNER_SIZE,
    },
    structs=[ALLOW_LIST],
    instructions=INSTRUCTIONS,
    errors=ERRORS,
)
