"""Program ids, extension types (TLV numbering) and their fixed sizes."""

from __future__ import annotations

from enum import IntEnum

from solders.pubkey import Pubkey

TOKEN_PROGRAM_ID = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
TOKEN_2022_PROGRAM_ID = Pubkey.from_string("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")

MINT_SIZE = 82  # base mint (both programs)
ACCOUNT_SIZE = 165  # base token account; extended accounts pad mints to it
ACCOUNT_TYPE_MINT = 1
ACCOUNT_TYPE_ACCOUNT = 2
TLV_HEADER = 4  # u16 type + u16 length


class ExtensionType(IntEnum):
    """spl-token-2022 ExtensionType: the u16 tag of each TLV entry."""

    UNINITIALIZED = 0
    TRANSFER_FEE_CONFIG = 1
    TRANSFER_FEE_AMOUNT = 2
    MINT_CLOSE_AUTHORITY = 3
    CONFIDENTIAL_TRANSFER_MINT = 4
    CONFIDENTIAL_TRANSFER_ACCOUNT = 5
    DEFAULT_ACCOUNT_STATE = 6
    IMMUTABLE_OWNER = 7
    MEMO_TRANSFER = 8
    NON_TRANSFERABLE = 9
    INTEREST_BEARING_CONFIG = 10
    CPI_GUARD = 11
    PERMANENT_DELEGATE = 12
    NON_TRANSFERABLE_ACCOUNT = 13
    TRANSFER_HOOK = 14
    TRANSFER_HOOK_ACCOUNT = 15
    CONFIDENTIAL_TRANSFER_FEE_CONFIG = 16
    CONFIDENTIAL_TRANSFER_FEE_AMOUNT = 17
    METADATA_POINTER = 18
    TOKEN_METADATA = 19
    GROUP_POINTER = 20
    TOKEN_GROUP = 21
    GROUP_MEMBER_POINTER = 22
    TOKEN_GROUP_MEMBER = 23
    CONFIDENTIAL_MINT_BURN = 24
    SCALED_UI_AMOUNT = 25
    PAUSABLE = 26
    PAUSABLE_ACCOUNT = 27


#: Fixed value sizes (bytes) of the mint extensions this service creates.
FIXED_SIZES: dict[ExtensionType, int] = {
    ExtensionType.MINT_CLOSE_AUTHORITY: 32,
    ExtensionType.CONFIDENTIAL_TRANSFER_MINT: 65,  # authority, auto-approve flag, auditor ElGamal key
    ExtensionType.DEFAULT_ACCOUNT_STATE: 1,
    ExtensionType.PERMANENT_DELEGATE: 32,
    ExtensionType.TRANSFER_HOOK: 64,  # authority, program id
    ExtensionType.METADATA_POINTER: 64,  # authority, metadata address
    ExtensionType.CONFIDENTIAL_MINT_BURN: 196,  # supply ciphertext, decryptable supply, supply ElGamal key, pending burn
    ExtensionType.SCALED_UI_AMOUNT: 56,  # authority, multiplier, effective timestamp, new multiplier
    ExtensionType.PAUSABLE: 33,  # authority, paused flag
}

#: API identifiers (spec form, e.g. PERMANENT_DELEGATE) → TLV type.
API_EXTENSIONS: dict[str, ExtensionType] = {
    "METADATA_POINTER": ExtensionType.METADATA_POINTER,
    "TOKEN_METADATA": ExtensionType.TOKEN_METADATA,
    "DEFAULT_ACCOUNT_STATE": ExtensionType.DEFAULT_ACCOUNT_STATE,
    "PERMANENT_DELEGATE": ExtensionType.PERMANENT_DELEGATE,
    "MINT_CLOSE_AUTHORITY": ExtensionType.MINT_CLOSE_AUTHORITY,
    "PAUSABLE": ExtensionType.PAUSABLE,
    "SCALED_UI_AMOUNT": ExtensionType.SCALED_UI_AMOUNT,
    "CONFIDENTIAL_TRANSFER": ExtensionType.CONFIDENTIAL_TRANSFER_MINT,
    "CONFIDENTIAL_MINT_BURN": ExtensionType.CONFIDENTIAL_MINT_BURN,
    "TRANSFER_HOOK": ExtensionType.TRANSFER_HOOK,
}


class AuthorityType(IntEnum):
    """SetAuthority's authority types."""

    MINT_TOKENS = 0
    FREEZE_ACCOUNT = 1
    ACCOUNT_OWNER = 2
    CLOSE_ACCOUNT = 3
    TRANSFER_FEE_CONFIG = 4
    WITHHELD_WITHDRAW = 5
    CLOSE_MINT = 6
    INTEREST_RATE = 7
    PERMANENT_DELEGATE = 8
    CONFIDENTIAL_TRANSFER_MINT = 9
    TRANSFER_HOOK_PROGRAM_ID = 10
    CONFIDENTIAL_TRANSFER_FEE_CONFIG = 11
    METADATA_POINTER = 12
    GROUP_POINTER = 13
    GROUP_MEMBER_POINTER = 14
    SCALED_UI_AMOUNT = 15
    PAUSE = 16


class AccountState(IntEnum):
    UNINITIALIZED = 0
    INITIALIZED = 1
    FROZEN = 2
