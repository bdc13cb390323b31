"""Token-2022 instruction encoders: pure functions, Params in, solders Instruction out.

Layouts follow spl-token-2022: a one-byte TokenInstruction tag; extension instructions
add a one-byte sub-instruction; `COption<Pubkey>` in instruction data is a one-byte tag
(+32 bytes), while `OptionalNonZeroPubkey` is 32 bytes with all zeroes for "none". The
token-metadata interface uses 8-byte discriminators (first 8 bytes of SHA-256 of a
namespaced name) and borsh strings.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Sequence

from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from .constants import TOKEN_2022_PROGRAM_ID, AccountState, AuthorityType

_ZERO = bytes(32)

# TokenInstruction tags
INITIALIZE_MINT2 = 20
SET_AUTHORITY = 6
INITIALIZE_MINT_CLOSE_AUTHORITY = 25
CONFIDENTIAL_TRANSFER = 27
DEFAULT_ACCOUNT_STATE = 28
INITIALIZE_PERMANENT_DELEGATE = 35
TRANSFER_HOOK = 36
METADATA_POINTER = 39
CONFIDENTIAL_MINT_BURN = 42
SCALED_UI_AMOUNT = 43
PAUSABLE = 44


def _ix(data: bytes, accounts: Sequence[AccountMeta], program: Pubkey = TOKEN_2022_PROGRAM_ID) -> Instruction:
    return Instruction(program, data, list(accounts))


def _w(pubkey: Pubkey) -> AccountMeta:
    return AccountMeta(pubkey, is_signer=False, is_writable=True)


def _ro(pubkey: Pubkey) -> AccountMeta:
    return AccountMeta(pubkey, is_signer=False, is_writable=False)


def _signer(pubkey: Pubkey, writable: bool = False) -> AccountMeta:
    return AccountMeta(pubkey, is_signer=True, is_writable=writable)


def _coption(pubkey: Pubkey | None) -> bytes:
    return b"\x01" + bytes(pubkey) if pubkey is not None else b"\x00"


def _nonzero(pubkey: Pubkey | None) -> bytes:
    return bytes(pubkey) if pubkey is not None else _ZERO


def _borsh_str(value: str) -> bytes:
    raw = value.encode()
    return struct.pack("<I", len(raw)) + raw


def discriminator(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()[:8]


# --- base mint --------------------------------------------------------------------------


def initialize_mint2(*, mint: Pubkey, decimals: int, mint_authority: Pubkey, freeze_authority: Pubkey | None, program: Pubkey = TOKEN_2022_PROGRAM_ID) -> Instruction:
    return _ix(bytes([INITIALIZE_MINT2, decimals]) + bytes(mint_authority) + _coption(freeze_authority), [_w(mint)], program)


def set_authority(*, target: Pubkey, current: Pubkey, authority_type: AuthorityType, new_authority: Pubkey | None, program: Pubkey = TOKEN_2022_PROGRAM_ID) -> Instruction:
    return _ix(bytes([SET_AUTHORITY, int(authority_type)]) + _coption(new_authority), [_w(target), _signer(current)], program)


# --- extensions initialized before InitializeMint2 ---------------------------------------


def initialize_mint_close_authority(*, mint: Pubkey, close_authority: Pubkey | None) -> Instruction:
    return _ix(bytes([INITIALIZE_MINT_CLOSE_AUTHORITY]) + _coption(close_authority), [_w(mint)])


def initialize_permanent_delegate(*, mint: Pubkey, delegate: Pubkey) -> Instruction:
    return _ix(bytes([INITIALIZE_PERMANENT_DELEGATE]) + bytes(delegate), [_w(mint)])


def initialize_default_account_state(*, mint: Pubkey, state: AccountState) -> Instruction:
    return _ix(bytes([DEFAULT_ACCOUNT_STATE, 0, int(state)]), [_w(mint)])


def update_default_account_state(*, mint: Pubkey, freeze_authority: Pubkey, state: AccountState) -> Instruction:
    return _ix(bytes([DEFAULT_ACCOUNT_STATE, 1, int(state)]), [_w(mint), _signer(freeze_authority)])


def initialize_metadata_pointer(*, mint: Pubkey, authority: Pubkey | None, metadata_address: Pubkey | None) -> Instruction:
    return _ix(bytes([METADATA_POINTER, 0]) + _nonzero(authority) + _nonzero(metadata_address), [_w(mint)])


def update_metadata_pointer(*, mint: Pubkey, authority: Pubkey, metadata_address: Pubkey | None) -> Instruction:
    return _ix(bytes([METADATA_POINTER, 1]) + _nonzero(metadata_address), [_w(mint), _signer(authority)])


def initialize_transfer_hook(*, mint: Pubkey, authority: Pubkey | None, program_id: Pubkey | None) -> Instruction:
    return _ix(bytes([TRANSFER_HOOK, 0]) + _nonzero(authority) + _nonzero(program_id), [_w(mint)])


def update_transfer_hook(*, mint: Pubkey, authority: Pubkey, program_id: Pubkey | None) -> Instruction:
    return _ix(bytes([TRANSFER_HOOK, 1]) + _nonzero(program_id), [_w(mint), _signer(authority)])


def initialize_scaled_ui_amount(*, mint: Pubkey, authority: Pubkey | None, multiplier: float) -> Instruction:
    return _ix(bytes([SCALED_UI_AMOUNT, 0]) + _nonzero(authority) + struct.pack("<d", multiplier), [_w(mint)])


def update_scaled_ui_multiplier(*, mint: Pubkey, authority: Pubkey, multiplier: float, effective_timestamp: int) -> Instruction:
    return _ix(bytes([SCALED_UI_AMOUNT, 1]) + struct.pack("<dq", multiplier, effective_timestamp), [_w(mint), _signer(authority)])


def initialize_pausable(*, mint: Pubkey, authority: Pubkey) -> Instruction:
    return _ix(bytes([PAUSABLE, 0]) + bytes(authority), [_w(mint)])


def pause(*, mint: Pubkey, authority: Pubkey) -> Instruction:
    return _ix(bytes([PAUSABLE, 1]), [_w(mint), _signer(authority)])


def resume(*, mint: Pubkey, authority: Pubkey) -> Instruction:
    return _ix(bytes([PAUSABLE, 2]), [_w(mint), _signer(authority)])


def initialize_confidential_transfer_mint(*, mint: Pubkey, authority: Pubkey | None, auto_approve_new_accounts: bool, auditor_elgamal_pubkey: bytes | None = None) -> Instruction:
    auditor = auditor_elgamal_pubkey if auditor_elgamal_pubkey is not None else _ZERO
    return _ix(bytes([CONFIDENTIAL_TRANSFER, 0]) + _nonzero(authority) + bytes([int(auto_approve_new_accounts)]) + auditor, [_w(mint)])


def initialize_confidential_mint_burn(*, mint: Pubkey, supply_elgamal_pubkey: bytes, decryptable_supply: bytes) -> Instruction:
    if len(supply_elgamal_pubkey) != 32 or len(decryptable_supply) != 36:
        raise ValueError("supply ElGamal pubkey is 32 bytes and decryptable supply 36 bytes")
    return _ix(bytes([CONFIDENTIAL_MINT_BURN, 0]) + supply_elgamal_pubkey + decryptable_supply, [_w(mint)])


# --- token metadata interface (stored in the mint itself) -------------------------------

FIELD_NAME, FIELD_SYMBOL, FIELD_URI, FIELD_KEY = 0, 1, 2, 3


def initialize_token_metadata(*, mint: Pubkey, update_authority: Pubkey, mint_authority: Pubkey, name: str, symbol: str, uri: str) -> Instruction:
    data = discriminator("spl_token_metadata_interface:initialize_account") + _borsh_str(name) + _borsh_str(symbol) + _borsh_str(uri)
    return _ix(data, [_w(mint), _ro(update_authority), _ro(mint), _signer(mint_authority)])


def update_token_metadata_field(*, mint: Pubkey, update_authority: Pubkey, field: int | str, value: str) -> Instruction:
    """field: FIELD_NAME / FIELD_SYMBOL / FIELD_URI, or a custom key (str)."""
    encoded = _borsh_str(field) if isinstance(field, str) else b""
    tag = FIELD_KEY if isinstance(field, str) else field
    data = discriminator("spl_token_metadata_interface:updating_field") + bytes([tag]) + encoded + _borsh_str(value)
    return _ix(data, [_w(mint), _signer(update_authority)])


def remove_token_metadata_key(*, mint: Pubkey, update_authority: Pubkey, key: str, idempotent: bool = True) -> Instruction:
    data = discriminator("spl_token_metadata_interface:remove_key_ix") + bytes([int(idempotent)]) + _borsh_str(key)
    return _ix(data, [_w(mint), _signer(update_authority)])


def update_token_metadata_authority(*, mint: Pubkey, current_authority: Pubkey, new_authority: Pubkey | None) -> Instruction:
    data = discriminator("spl_token_metadata_interface:update_the_authority") + _nonzero(new_authority)
    return _ix(data, [_w(mint), _signer(current_authority)])


# --- closing ------------------------------------------------------------------------------

CLOSE_ACCOUNT = 9


def close_account(*, account: Pubkey, destination: Pubkey, authority: Pubkey, program: Pubkey = TOKEN_2022_PROGRAM_ID) -> Instruction:
    """CloseAccount: a token account, or a Token-2022 mint with MINT_CLOSE_AUTHORITY and
    supply 0 (the close authority signs); the rent goes to ``destination``."""
    return _ix(bytes([CLOSE_ACCOUNT]), [_w(account), _w(destination), _signer(authority)], program)
