"""`jsonParsed` instructions in the reference's shapes (solana-transaction-status,
parse_instruction.rs and its parse_* modules).

An instruction of a program the reference parses comes out as
``{"program", "programId", "parsed": {"type", "info"}, "stackHeight"}`` (a memo's
``parsed`` is its text); anything else, and any instruction of those programs that does
not decode (unknown variant, too few accounts, bad data), in the partially decoded form
``{"programId", "accounts", "data" (base-58), "stackHeight"}``, as the reference falls back.

Programs parsed here: System, SPL Token and Token-2022 (token_instructions.py; both are
``"spl-token"`` to the reference), Associated Token Account, Memo (v1 and v3), Address
Lookup Table, BPF loader and BPFLoaderUpgradeable. Stake and vote instructions are left
partially decoded (this cluster has no stake and no votes). Compute Budget is not among the reference's parsable programs, so its
instructions stay partially decoded, as a validator leaves them.
"""

from __future__ import annotations

import base64
import struct
from typing import Callable

from solders import system_program as sp
from solders.instruction import AccountMeta, Instruction
from solders.pubkey import Pubkey

from ledger_project.base58 import b58encode

from .instruction_parts import NotParsable, need, typed
from .token_instructions import parse_token

SYSTEM = "11111111111111111111111111111111"
ASSOCIATED_TOKEN = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
MEMO_V1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo"
MEMO_V3 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"
LOOKUP_TABLE = "AddressLookupTab1e1111111111111111111111111"
BPF_LOADER = "BPFLoader2111111111111111111111111111111111"
BPF_UPGRADEABLE_LOADER = "BPFLoaderUpgradeab1e11111111111111111111111"
TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"



def parse_instruction(program_id: str, accounts: list[str], data: bytes, stack_height) -> dict:
    """One instruction, ``accounts`` already resolved to addresses, as the reference's
    UiInstruction::parse renders it."""
    entry = _PROGRAMS.get(program_id)
    if entry is not None:
        name, parser = entry
        try:
            parsed = parser(accounts, data)
        except (NotParsable, struct.error, IndexError, ValueError, UnicodeDecodeError):
            pass
        else:
            return {"program": name, "programId": program_id, "parsed": parsed, "stackHeight": stack_height}
    return {"programId": program_id, "accounts": accounts, "data": b58encode(data), "stackHeight": stack_height}


def _pk(raw: bytes) -> str:
    return str(Pubkey(bytes(raw)))


# --- System ---------------------------------------------------------------------------------
def _solders(decode, accounts: list[str], data: bytes) -> dict:
    """A solders.system_program decoder on the instruction rebuilt with its accounts. The
    account count was checked first: the decoders index accounts without checking (a Rust
    panic, not a Python error)."""
    ix = Instruction(Pubkey.from_string(SYSTEM), data, [AccountMeta(Pubkey.from_string(a), False, False) for a in accounts])
    try:
        return decode(ix)
    except Exception as exc:  # malformed data (bincode): the reference falls back to raw
        raise NotParsable from exc


def _system(accounts: list[str], data: bytes) -> dict:
    # SystemInstruction is bincode: a u32 variant, then its fields.
    if not accounts:
        raise NotParsable
    (variant,) = struct.unpack_from("<I", data)
    if variant == 0:
        need(accounts, 2)
        p = _solders(sp.decode_create_account, accounts, data)
        return typed("createAccount", {"source": accounts[0], "newAccount": accounts[1], "lamports": p["lamports"], "space": p["space"], "owner": str(p["owner"])})
    if variant == 1:
        need(accounts, 1)
        p = _solders(sp.decode_assign, accounts, data)
        return typed("assign", {"account": accounts[0], "owner": str(p["owner"])})
    if variant == 2:
        need(accounts, 2)
        p = _solders(sp.decode_transfer, accounts, data)
        return typed("transfer", {"source": accounts[0], "destination": accounts[1], "lamports": p["lamports"]})
    if variant == 3:
        need(accounts, 2)
        p = _solders(sp.decode_create_account_with_seed, accounts, data)
        return typed("createAccountWithSeed", {"source": accounts[0], "newAccount": accounts[1], "base": str(p["base"]), "seed": p["seed"],
                                                "lamports": p["lamports"], "space": p["space"], "owner": str(p["owner"])})
    if variant == 4:
        need(accounts, 3)
        return typed("advanceNonce", {"nonceAccount": accounts[0], "recentBlockhashesSysvar": accounts[1], "nonceAuthority": accounts[2]})
    if variant == 5:
        need(accounts, 5)
        p = _solders(sp.decode_withdraw_nonce_account, accounts, data)
        return typed("withdrawFromNonce", {"nonceAccount": accounts[0], "destination": accounts[1], "recentBlockhashesSysvar": accounts[2],
                                            "rentSysvar": accounts[3], "nonceAuthority": accounts[4], "lamports": p["lamports"]})
    if variant == 6:
        need(accounts, 3)
        p = _solders(sp.decode_initialize_nonce_account, accounts, data)
        return typed("initializeNonce", {"nonceAccount": accounts[0], "recentBlockhashesSysvar": accounts[1], "rentSysvar": accounts[2],
                                          "nonceAuthority": str(p["authority"])})
    if variant == 7:
        need(accounts, 2)
        p = _solders(sp.decode_authorize_nonce_account, accounts, data)
        return typed("authorizeNonce", {"nonceAccount": accounts[0], "nonceAuthority": accounts[1], "newAuthorized": str(p["new_authority"])})
    if variant == 8:
        need(accounts, 1)
        p = _solders(sp.decode_allocate, accounts, data)
        return typed("allocate", {"account": accounts[0], "space": p["space"]})
    if variant == 9:
        need(accounts, 2)
        p = _solders(sp.decode_allocate_with_seed, accounts, data)
        return typed("allocateWithSeed", {"account": accounts[0], "base": str(p["base"]), "seed": p["seed"], "space": p["space"], "owner": str(p["owner"])})
    if variant == 10:
        need(accounts, 2)
        p = _solders(sp.decode_assign_with_seed, accounts, data)
        return typed("assignWithSeed", {"account": accounts[0], "base": str(p["base"]), "seed": p["seed"], "owner": str(p["owner"])})
    if variant == 11:
        need(accounts, 3)
        p = _solders(sp.decode_transfer_with_seed, accounts, data)
        return typed("transferWithSeed", {"source": accounts[0], "sourceBase": accounts[1], "destination": accounts[2], "lamports": p["lamports"],
                                           "sourceSeed": p["from_seed"], "sourceOwner": str(p["from_owner"])})
    if variant == 12:
        need(accounts, 1)
        return typed("upgradeNonce", {"nonceAccount": accounts[0]})
    if variant == 13:  # CreateAccountAllowPrefund (no solders decoder): lamports, space, owner
        if len(data) < 52:
            raise NotParsable
        lamports, space = struct.unpack_from("<QQ", data, 4)
        owner = _pk(data[20:52])
        if lamports == 0:
            need(accounts, 1)
            return typed("createAccountAllowPrefund", {"newAccount": accounts[0], "space": space, "owner": owner})
        need(accounts, 2)
        return typed("createAccountAllowPrefund", {"newAccount": accounts[0], "source": accounts[1], "lamports": lamports, "space": space, "owner": owner})
    raise NotParsable


# --- Associated Token Account ------------------------------------------------------------------
_ATA_KINDS = {0: "create", 1: "createIdempotent"}


def _associated_token(accounts: list[str], data: bytes) -> dict:
    if not accounts:
        raise NotParsable
    # Borsh u8 variant; empty data is the original Create. try_from_slice: nothing may follow.
    if len(data) > 1:
        raise NotParsable
    variant = data[0] if data else 0
    if variant in _ATA_KINDS:
        need(accounts, 6)
        return typed(_ATA_KINDS[variant], {"source": accounts[0], "account": accounts[1], "wallet": accounts[2], "mint": accounts[3],
                                            "systemProgram": accounts[4], "tokenProgram": accounts[5]})
    if variant == 2:
        need(accounts, 7)
        return typed("recoverNested", {"nestedSource": accounts[0], "nestedMint": accounts[1], "destination": accounts[2], "nestedOwner": accounts[3],
                                        "ownerMint": accounts[4], "wallet": accounts[5], "tokenProgram": accounts[6]})
    raise NotParsable


# --- Memo ----------------------------------------------------------------------------------------
def _memo(accounts: list[str], data: bytes) -> str:
    return data.decode("utf-8")


# --- Address Lookup Table -------------------------------------------------------------------------
def _lookup_table(accounts: list[str], data: bytes) -> dict:
    (variant,) = struct.unpack_from("<I", data)
    if not accounts:
        raise NotParsable
    if variant == 0:
        recent_slot, bump = struct.unpack_from("<QB", data, 4)
        need(accounts, 4)
        return typed("createLookupTable", {"lookupTableAccount": accounts[0], "lookupTableAuthority": accounts[1], "payerAccount": accounts[2],
                                            "systemProgram": accounts[3], "recentSlot": recent_slot, "bumpSeed": bump})
    if variant == 1:
        need(accounts, 2)
        return typed("freezeLookupTable", {"lookupTableAccount": accounts[0], "lookupTableAuthority": accounts[1]})
    if variant == 2:
        (count,) = struct.unpack_from("<Q", data, 4)
        if len(data) < 12 + 32 * count:
            raise NotParsable
        need(accounts, 2)
        info = {"lookupTableAccount": accounts[0], "lookupTableAuthority": accounts[1], "newAddresses": [_pk(data[12 + 32 * i:44 + 32 * i]) for i in range(count)]}
        if len(accounts) >= 4:
            info["payerAccount"], info["systemProgram"] = accounts[2], accounts[3]
        return typed("extendLookupTable", info)
    if variant == 3:
        need(accounts, 2)
        return typed("deactivateLookupTable", {"lookupTableAccount": accounts[0], "lookupTableAuthority": accounts[1]})
    if variant == 4:
        need(accounts, 3)
        return typed("closeLookupTable", {"lookupTableAccount": accounts[0], "lookupTableAuthority": accounts[1], "recipient": accounts[2]})
    raise NotParsable


# --- BPF loaders --------------------------------------------------------------------------------
def _write_args(data: bytes) -> tuple[int, str]:
    offset, length = struct.unpack_from("<IQ", data, 4)
    if len(data) < 16 + length:
        raise NotParsable
    return offset, base64.b64encode(data[16:16 + length]).decode()


def _bpf_loader(accounts: list[str], data: bytes) -> dict:
    (variant,) = struct.unpack_from("<I", data)
    if not accounts:
        raise NotParsable
    if variant == 0:
        offset, raw = _write_args(data)
        return typed("write", {"offset": offset, "bytes": raw, "account": accounts[0]})
    if variant == 1:
        need(accounts, 2)
        return typed("finalize", {"account": accounts[0]})
    raise NotParsable


def _optional(accounts: list[str], index: int) -> str | None:
    return accounts[index] if len(accounts) > index else None


def _upgradeable_loader(accounts: list[str], data: bytes) -> dict:
    (variant,) = struct.unpack_from("<I", data)
    if not accounts:
        raise NotParsable
    if variant == 0:
        info = {"account": accounts[0]}
        if len(accounts) > 1:
            info["authority"] = accounts[1]
        return typed("initializeBuffer", info)
    if variant == 1:
        offset, raw = _write_args(data)
        need(accounts, 2)
        return typed("write", {"offset": offset, "bytes": raw, "account": accounts[0], "authority": accounts[1]})
    if variant == 2:
        (max_data_len,) = struct.unpack_from("<Q", data, 4)
        need(accounts, 8)
        names = ("payerAccount", "programDataAccount", "programAccount", "bufferAccount", "rentSysvar", "clockSysvar", "systemProgram", "authority")
        return typed("deployWithMaxDataLen", {"maxDataLen": max_data_len, **dict(zip(names, accounts))})
    if variant == 3:
        need(accounts, 7)
        names = ("programDataAccount", "programAccount", "bufferAccount", "spillAccount", "rentSysvar", "clockSysvar", "authority")
        return typed("upgrade", dict(zip(names, accounts)))
    if variant == 4:
        need(accounts, 2)
        return typed("setAuthority", {"account": accounts[0], "authority": accounts[1], "newAuthority": _optional(accounts, 2)})
    if variant == 5:
        need(accounts, 3)
        return typed("close", {"account": accounts[0], "recipient": accounts[1], "authority": accounts[2], "programAccount": _optional(accounts, 3)})
    if variant == 6:
        (additional,) = struct.unpack_from("<I", data, 4)
        need(accounts, 2)
        return typed("extendProgram", {"additionalBytes": additional, "programDataAccount": accounts[0], "programAccount": accounts[1],
                                        "systemProgram": _optional(accounts, 2), "payerAccount": _optional(accounts, 3)})
    if variant == 7:
        need(accounts, 3)
        return typed("setAuthorityChecked", {"account": accounts[0], "authority": accounts[1], "newAuthority": accounts[2]})
    raise NotParsable


# Program id → (the reference's ParsableProgram name in kebab case, parser).
_PROGRAMS: dict[str, tuple[str, Callable]] = {
    SYSTEM: ("system", _system),
    ASSOCIATED_TOKEN: ("spl-associated-token-account", _associated_token),
    MEMO_V1: ("spl-memo", _memo),
    MEMO_V3: ("spl-memo", _memo),
    LOOKUP_TABLE: ("address-lookup-table", _lookup_table),
    BPF_LOADER: ("bpf-loader", _bpf_loader),
    BPF_UPGRADEABLE_LOADER: ("bpf-upgradeable-loader", _upgradeable_loader),
    TOKEN: ("spl-token", parse_token),
    TOKEN_2022: ("spl-token", parse_token),
}
