"""Transfer-hook extra accounts: decoding a hook program's ExtraAccountMetaList account
and resolving it into the accounts a TransferChecked of a transfer-hook mint must carry.

Written from the published layouts of the SPL transfer-hook interface and its
tlv-account-resolution / type-length-value libraries (docs/positions.md, "Transfer-hook
mints"):

- the validation account is the PDA of the hook program with seeds
  ``["extra-account-metas", mint]``;
- its data is a TLV list: 8-byte type (an SPL discriminator), u32 little-endian length,
  value; an all-zero type ends the list. The entry for the hook's Execute instruction has
  type ``sha256("spl-transfer-hook-interface:execute")[:8]``;
- that entry's value is a list: u32 little-endian count, then ``count`` ExtraAccountMeta
  of 35 bytes each (the value may hold room for more): discriminator u8, address_config
  [32], is_signer u8, is_writable u8;
- discriminator 0: ``address_config`` is the account's address; 1: a PDA of the hook
  program; 128 + i: a PDA of the program at account index i; 2: an address read from
  instruction or account data. Seeds (packed in ``address_config``, a 0 byte ends them):
  1 Literal ``[len, bytes…]``, 2 InstructionData ``[index, length]``, 3 AccountKey
  ``[index]``, 4 AccountData ``[account_index, data_index, length]``. Address data: 1
  InstructionData ``[index]``, 2 AccountData ``[account_index, data_index]`` (32 bytes
  from there);
- indexes refer to the Execute instruction's accounts: 0 source, 1 mint, 2 destination,
  3 authority, 4 validation account, then the extra accounts in the order resolved;
  instruction data is Execute's: the discriminator above and the amount (u64 LE);
- a resolved account never signs, and is writable only if no earlier account of the
  list with the same address is read-only (the Execute accounts are all read-only);
- TransferChecked gets the resolved extra accounts, then the hook program and the
  validation account, both read-only.

Pure functions: account data comes in through ``fetch`` (address → bytes, or None when
the account does not exist).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Callable

from solders.instruction import AccountMeta
from solders.pubkey import Pubkey

EXECUTE_DISCRIMINATOR = hashlib.sha256(b"spl-transfer-hook-interface:execute").digest()[:8]
VALIDATION_SEED = b"extra-account-metas"
META_SIZE = 35
_TLV_HEADER = 12  # 8-byte type + u32 length
_EXTERNAL_PDA = 1 << 7

Fetch = Callable[[Pubkey], "bytes | None"]


class HookAccountsError(ValueError):
    """The validation account cannot be decoded or one of its accounts resolved."""


@dataclass(frozen=True)
class ExtraAccountMeta:
    discriminator: int
    address_config: bytes
    is_signer: bool
    is_writable: bool


def validation_address(mint: Pubkey, program: Pubkey) -> Pubkey:
    return Pubkey.find_program_address([VALIDATION_SEED, bytes(mint)], program)[0]


def execute_data(amount: int) -> bytes:
    return EXECUTE_DISCRIMINATOR + struct.pack("<Q", amount)


def _execute_entry(data: bytes) -> bytes:
    offset = 0
    while offset + _TLV_HEADER <= len(data):
        kind = data[offset:offset + 8]
        (length,) = struct.unpack_from("<I", data, offset + 8)
        if kind == bytes(8):
            break
        start = offset + _TLV_HEADER
        if start + length > len(data):
            raise HookAccountsError("A TLV entry of the validation account runs past its data.")
        if kind == EXECUTE_DISCRIMINATOR:
            return data[start:start + length]
        offset = start + length
    raise HookAccountsError("The validation account has no extra-account list for the Execute instruction.")


def decode_extra_account_metas(data: bytes) -> list[ExtraAccountMeta]:
    """The ExtraAccountMeta list of a validation account's Execute entry."""
    value = _execute_entry(bytes(data))
    if len(value) < 4:
        raise HookAccountsError("The extra-account list is shorter than its count.")
    (count,) = struct.unpack_from("<I", value, 0)
    items = value[4:]
    if len(items) % META_SIZE:
        raise HookAccountsError(f"The extra-account list is not a whole number of {META_SIZE}-byte entries.")
    if count > len(items) // META_SIZE:
        raise HookAccountsError(f"The extra-account list counts {count} entries but holds {len(items) // META_SIZE}.")
    metas = []
    for i in range(count):
        raw = items[i * META_SIZE:(i + 1) * META_SIZE]
        metas.append(ExtraAccountMeta(raw[0], raw[1:33], raw[33] != 0, raw[34] != 0))
    return metas


def decode_seeds(config: bytes) -> list[tuple]:
    """Seed configurations packed in an address_config: ("literal", bytes),
    ("instruction", index, length), ("key", index), ("data", account, offset, length)."""
    seeds: list[tuple] = []
    i = 0
    while i < len(config):
        kind = config[i]
        if kind == 0:
            break
        if kind == 1:
            if i + 2 > len(config) or i + 2 + config[i + 1] > len(config):
                raise HookAccountsError("A literal seed runs past its address_config.")
            length = config[i + 1]
            seeds.append(("literal", bytes(config[i + 2:i + 2 + length])))
            i += 2 + length
        elif kind == 2:
            if i + 3 > len(config):
                raise HookAccountsError("An instruction-data seed runs past its address_config.")
            seeds.append(("instruction", config[i + 1], config[i + 2]))
            i += 3
        elif kind == 3:
            if i + 2 > len(config):
                raise HookAccountsError("An account-key seed runs past its address_config.")
            seeds.append(("key", config[i + 1]))
            i += 2
        elif kind == 4:
            if i + 4 > len(config):
                raise HookAccountsError("An account-data seed runs past its address_config.")
            seeds.append(("data", config[i + 1], config[i + 2], config[i + 3]))
            i += 4
        else:
            raise HookAccountsError(f"Unknown seed type {kind}.")
    return seeds


class _Accounts:
    """The Execute instruction's accounts as resolution grows them, with their data
    fetched on first need."""

    def __init__(self, metas: list[AccountMeta], fetch: Fetch):
        self.metas = list(metas)
        self._fetch = fetch
        self._data: dict[Pubkey, bytes | None] = {}

    def key(self, index: int) -> Pubkey:
        if index >= len(self.metas):
            raise HookAccountsError(f"A seed names account index {index}, which is not resolved yet.")
        return self.metas[index].pubkey

    def data(self, index: int) -> bytes:
        key = self.key(index)
        if key not in self._data:
            self._data[key] = self._fetch(key)
        found = self._data[key]
        if found is None:
            raise HookAccountsError(f"A seed reads the data of account {key}, which does not exist.")
        return bytes(found)


def _slice(data: bytes, start: int, length: int, what: str) -> bytes:
    if start + length > len(data):
        raise HookAccountsError(f"A seed reads past the end of the {what}.")
    return data[start:start + length]


def _pda(seeds: list[tuple], program: Pubkey, accounts: _Accounts, instruction_data: bytes) -> Pubkey:
    parts: list[bytes] = []
    for seed in seeds:
        if seed[0] == "literal":
            parts.append(seed[1])
        elif seed[0] == "instruction":
            parts.append(_slice(instruction_data, seed[1], seed[2], "instruction data"))
        elif seed[0] == "key":
            parts.append(bytes(accounts.key(seed[1])))
        else:
            parts.append(_slice(accounts.data(seed[1]), seed[2], seed[3], "account data"))
    return Pubkey.find_program_address(parts, program)[0]


def _address(meta: ExtraAccountMeta, program: Pubkey, accounts: _Accounts, instruction_data: bytes) -> Pubkey:
    d = meta.discriminator
    if d == 0:
        return Pubkey.from_bytes(meta.address_config)
    if d == 1:
        return _pda(decode_seeds(meta.address_config), program, accounts, instruction_data)
    if d >= _EXTERNAL_PDA:
        return _pda(decode_seeds(meta.address_config), accounts.key(d - _EXTERNAL_PDA), accounts, instruction_data)
    if d == 2:
        kind = meta.address_config[0]
        if kind == 1:
            return Pubkey.from_bytes(_slice(instruction_data, meta.address_config[1], 32, "instruction data"))
        if kind == 2:
            return Pubkey.from_bytes(_slice(accounts.data(meta.address_config[1]), meta.address_config[2], 32, "account data"))
        raise HookAccountsError(f"Unknown address-data type {kind}.")
    raise HookAccountsError(f"Unknown extra-account type {d}.")


def resolve_extra_accounts(metas: list[ExtraAccountMeta], *, program: Pubkey, execute_accounts: list[AccountMeta], instruction_data: bytes, fetch: Fetch) -> list[AccountMeta]:
    """The accounts ``metas`` name, in order, given the Execute instruction's accounts."""
    accounts = _Accounts(execute_accounts, fetch)
    resolved = []
    for meta in metas:
        address = _address(meta, program, accounts, instruction_data)
        same = [m.is_writable for m in accounts.metas if m.pubkey == address]
        writable = meta.is_writable and (not same or any(same))
        account = AccountMeta(address, is_signer=False, is_writable=writable)
        accounts.metas.append(account)
        resolved.append(account)
    return resolved


def transfer_hook_accounts(*, program: Pubkey, mint: Pubkey, source: Pubkey, destination: Pubkey, authority: Pubkey, amount: int, fetch: Fetch) -> list[AccountMeta]:
    """What a TransferChecked of ``mint`` (whose transfer hook is ``program``) appends to
    its accounts: the extra accounts, the hook program, the validation account."""
    validation = validation_address(mint, program)
    data = fetch(validation)
    if data is None:
        raise HookAccountsError(f"The transfer hook program has no extra-account list for this mint (validation account {validation} does not exist).")
    execute_accounts = [AccountMeta(k, is_signer=False, is_writable=False) for k in (source, mint, destination, authority, validation)]
    extra = resolve_extra_accounts(decode_extra_account_metas(data), program=program, execute_accounts=execute_accounts, instruction_data=execute_data(amount), fetch=fetch)
    return [*extra, AccountMeta(program, is_signer=False, is_writable=False), AccountMeta(validation, is_signer=False, is_writable=False)]
