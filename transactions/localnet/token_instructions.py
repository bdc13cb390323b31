"""SPL Token and Token-2022 instructions in the reference's jsonParsed shapes
(solana-transaction-status parse_token.rs and parse_token/extension/*.rs).

Both programs are ``"spl-token"`` to the reference. The data is decoded as
spl-token-2022's TokenInstruction::unpack reads it: a u8 tag, then the fields, with a
COption<Pubkey> as one tag byte (0, or 1 and 32 bytes) and trailing bytes ignored. If the
tag is no token instruction, the data is tried as a token-group, then a token-metadata
interface instruction (8-byte discriminators). solana-py's construct layouts cover only
tags 0..24 and want the fixed-length option form, so the fields are read here with struct.

Extension instructions parsed: transfer fee, mint close authority, default account state,
reallocate, memo transfer, non-transferable, interest-bearing, CPI guard, permanent
delegate, transfer hook, withdraw excess lamports, metadata/group/group-member pointers,
scaled UI amount, pausable, token metadata and token group. The confidential transfer,
confidential fee and confidential mint/burn ones (zero-knowledge proof data) and the
newest tags (45 and up, batch) stay partially decoded.
"""

from __future__ import annotations

import hashlib
import struct

from solders.pubkey import Pubkey

from .instructions import NotParsable, need, typed
from .parsing import _float_string
from .tokens import ui_amount

_STATES = {0: "uninitialized", 1: "initialized", 2: "frozen"}
# spl-token-2022 AuthorityType order → UiAuthorityType (camelCase).
AUTHORITY_TYPES = ("mintTokens", "freezeAccount", "accountOwner", "closeAccount", "transferFeeConfig", "withheldWithdraw", "closeMint", "interestRate",
                   "permanentDelegate", "confidentialTransferMint", "transferHookProgramId", "confidentialTransferFeeConfig", "metadataPointer",
                   "groupPointer", "groupMemberPointer", "scaledUiAmount", "pause", "permissionedBurn")
_ACCOUNT_AUTHORITIES = {"accountOwner", "closeAccount"}
# ExtensionType number → UiExtensionType.
EXTENSION_TYPES = ("uninitialized", "transferFeeConfig", "transferFeeAmount", "mintCloseAuthority", "confidentialTransferMint",
                   "confidentialTransferAccount", "defaultAccountState", "immutableOwner", "memoTransfer", "nonTransferable",
                   "interestBearingConfig", "cpiGuard", "permanentDelegate", "nonTransferableAccount", "transferHook", "transferHookAccount",
                   "confidentialTransferFeeConfig", "confidentialTransferFeeAmount", "metadataPointer", "tokenMetadata", "groupPointer",
                   "tokenGroup", "groupMemberPointer", "tokenGroupMember", "confidentialMintBurn", "scaledUiAmount", "pausable", "pausableAccount")


def _discriminator(name: str) -> bytes:
    return hashlib.sha256(name.encode()).digest()[:8]


def _pk(raw: bytes) -> str:
    if len(raw) != 32:
        raise NotParsable
    return str(Pubkey(bytes(raw)))


def _nonzero(raw: bytes) -> str | None:
    """OptionalNonZeroPubkey: all zeros is None."""
    return None if raw == bytes(32) else _pk(raw)


def _coption(data: bytes, offset: int) -> tuple[str | None, int]:
    """unpack_pubkey_option: tag 0 → None; tag 1 and 32 bytes → Some; else an error."""
    tag = data[offset]
    if tag == 0:
        return None, offset + 1
    if tag == 1 and len(data) >= offset + 33:
        return _pk(data[offset + 1:offset + 33]), offset + 33
    raise NotParsable


def _u64(data: bytes, offset: int) -> int:
    return struct.unpack_from("<Q", data, offset)[0]


def _signers(info: dict, last_nonsigner: int, accounts: list[str], owner_name: str, multisig_name: str) -> None:
    """parse_signers: one authority, or a multisig and the signers after it."""
    owner = accounts[last_nonsigner] if len(accounts) > last_nonsigner else None
    if len(accounts) > last_nonsigner + 1:
        if owner is not None:
            info[multisig_name] = owner
        info["signers"] = accounts[last_nonsigner + 1:]
    elif owner is not None:
        info[owner_name] = owner


def _with_signers(kind: str, info: dict, last_nonsigner: int, accounts: list[str], owner_name: str, multisig_name: str) -> dict:
    _signers(info, last_nonsigner, accounts, owner_name, multisig_name)
    return typed(kind, info)


def _extension_types(raw: bytes) -> list[str]:
    if len(raw) % 2:
        raise NotParsable
    out = []
    for (number,) in struct.iter_unpack("<H", raw):
        if number >= len(EXTENSION_TYPES):
            raise NotParsable
        out.append(EXTENSION_TYPES[number])
    return out


def parse_token(accounts: list[str], data: bytes) -> dict:
    if not accounts or not data:
        raise NotParsable
    tag = data[0]
    if tag in _BASE:
        return _BASE[tag](accounts, data)
    parsed = _group(accounts, data)
    if parsed is None:
        parsed = _metadata(accounts, data)
    if parsed is None:
        raise NotParsable
    return parsed


# --- the base instructions ------------------------------------------------------------------
def _initialize_mint(kind: str, with_rent: bool):
    def parse(accounts, data):
        need(accounts, 2 if with_rent else 1)
        decimals, authority = data[1], _pk(data[2:34])
        freeze, _ = _coption(data, 34)
        info = {"mint": accounts[0], "decimals": decimals, "mintAuthority": authority}
        if with_rent:
            info["rentSysvar"] = accounts[1]
        if freeze is not None:
            info["freezeAuthority"] = freeze
        return typed(kind, info)
    return parse


def _initialize_account(accounts, data):
    need(accounts, 4)
    return typed("initializeAccount", {"account": accounts[0], "mint": accounts[1], "owner": accounts[2], "rentSysvar": accounts[3]})


def _initialize_account2(accounts, data):
    need(accounts, 3)
    return typed("initializeAccount2", {"account": accounts[0], "mint": accounts[1], "owner": _pk(data[1:33]), "rentSysvar": accounts[2]})


def _initialize_account3(accounts, data):
    need(accounts, 2)
    return typed("initializeAccount3", {"account": accounts[0], "mint": accounts[1], "owner": _pk(data[1:33])})


def _initialize_multisig(accounts, data):
    need(accounts, 3)
    return typed("initializeMultisig", {"multisig": accounts[0], "rentSysvar": accounts[1], "signers": accounts[2:], "m": data[1]})


def _initialize_multisig2(accounts, data):
    need(accounts, 2)
    return typed("initializeMultisig2", {"multisig": accounts[0], "signers": accounts[1:], "m": data[1]})


def _amount(kind: str, first: str, second: str, owner_name: str, multisig_name: str):
    """Transfer, Approve, MintTo, Burn: two accounts, a u64 amount (a string), the authority."""
    def parse(accounts, data):
        amount = _u64(data, 1)
        need(accounts, 3)
        return _with_signers(kind, {first: accounts[0], second: accounts[1], "amount": str(amount)}, 2, accounts, owner_name, multisig_name)
    return parse


def _checked(kind: str, names: tuple[str, ...], owner_name: str, multisig_name: str):
    """The *Checked variants: amount and decimals as a UiTokenAmount `tokenAmount`."""
    def parse(accounts, data):
        amount, decimals = _u64(data, 1), data[9]
        need(accounts, len(names) + 1)
        info = dict(zip(names, accounts))
        info["tokenAmount"] = ui_amount(amount, decimals)
        return _with_signers(kind, info, len(names), accounts, owner_name, multisig_name)
    return parse


def _revoke(accounts, data):
    need(accounts, 2)
    return _with_signers("revoke", {"source": accounts[0]}, 1, accounts, "owner", "multisigOwner")


def _set_authority(accounts, data):
    need(accounts, 2)
    if data[1] >= len(AUTHORITY_TYPES):
        raise NotParsable
    kind = AUTHORITY_TYPES[data[1]]
    new_authority, _ = _coption(data, 2)
    owned = "account" if kind in _ACCOUNT_AUTHORITIES else "mint"
    return _with_signers("setAuthority", {owned: accounts[0], "authorityType": kind, "newAuthority": new_authority}, 1, accounts, "authority", "multisigAuthority")


def _two_accounts(kind: str, first: str, second: str, owner_name: str, multisig_name: str):
    def parse(accounts, data):
        need(accounts, 3)
        return _with_signers(kind, {first: accounts[0], second: accounts[1]}, 2, accounts, owner_name, multisig_name)
    return parse


def _one_account(kind: str, name: str):
    def parse(accounts, data):
        need(accounts, 1)
        return typed(kind, {name: accounts[0]})
    return parse


def _get_account_data_size(accounts, data):
    need(accounts, 1)
    info = {"mint": accounts[0]}
    types = _extension_types(data[1:])
    if types:
        info["extensionTypes"] = types
    return typed("getAccountDataSize", info)


def _amount_to_ui_amount(accounts, data):
    amount = _u64(data, 1)
    need(accounts, 1)
    return typed("amountToUiAmount", {"mint": accounts[0], "amount": str(amount)})


def _ui_amount_to_amount(accounts, data):
    text = data[1:].decode("utf-8")
    need(accounts, 1)
    return typed("uiAmountToAmount", {"mint": accounts[0], "uiAmount": text})


def _initialize_mint_close_authority(accounts, data):
    authority, _ = _coption(data, 1)
    need(accounts, 1)
    return typed("initializeMintCloseAuthority", {"mint": accounts[0], "newAuthority": authority})


def _reallocate(accounts, data):
    types = _extension_types(data[1:])
    need(accounts, 4)
    info = {"account": accounts[0], "payer": accounts[1], "systemProgram": accounts[2], "extensionTypes": types}
    return _with_signers("reallocate", info, 3, accounts, "owner", "multisigOwner")


def _create_native_mint(accounts, data):
    need(accounts, 3)
    return typed("createNativeMint", {"payer": accounts[0], "nativeMint": accounts[1], "systemProgram": accounts[2]})


def _initialize_permanent_delegate(accounts, data):
    delegate = _pk(data[1:33])
    need(accounts, 1)
    return typed("initializePermanentDelegate", {"mint": accounts[0], "delegate": delegate})


# --- extensions with sub-instructions -------------------------------------------------------
def _pod(data: bytes, size: int) -> bytes:
    """decode_instruction_data: the bytes after the two tags, exactly the struct's size."""
    body = data[2:]
    if len(body) != size:
        raise NotParsable
    return body


def _transfer_fee(accounts, data):
    sub = data[1]
    if sub == 0:
        config_authority, offset = _coption(data, 2)
        withdraw_authority, offset = _coption(data, offset)
        basis_points, maximum = struct.unpack_from("<HQ", data, offset)
        need(accounts, 1)
        info = {"mint": accounts[0], "transferFeeBasisPoints": basis_points, "maximumFee": maximum}
        if config_authority is not None:
            info["transferFeeConfigAuthority"] = config_authority
        if withdraw_authority is not None:
            info["withdrawWithheldAuthority"] = withdraw_authority
        return typed("initializeTransferFeeConfig", info)
    if sub == 1:
        amount, decimals, fee = struct.unpack_from("<QBQ", data, 2)
        need(accounts, 4)
        info = {"source": accounts[0], "mint": accounts[1], "destination": accounts[2], "tokenAmount": ui_amount(amount, decimals), "feeAmount": ui_amount(fee, decimals)}
        return _with_signers("transferCheckedWithFee", info, 3, accounts, "authority", "multisigAuthority")
    if sub == 2:
        need(accounts, 3)
        return _with_signers("withdrawWithheldTokensFromMint", {"mint": accounts[0], "feeRecipient": accounts[1]}, 2, accounts,
                             "withdrawWithheldAuthority", "multisigWithdrawWithheldAuthority")
    if sub == 3:
        count = data[2]
        need(accounts, 3 + count)
        first_source = len(accounts) - count
        info = {"mint": accounts[0], "feeRecipient": accounts[1], "sourceAccounts": accounts[first_source:]}
        return _with_signers("withdrawWithheldTokensFromAccounts", info, 2, accounts[:first_source], "withdrawWithheldAuthority", "multisigWithdrawWithheldAuthority")
    if sub == 4:
        need(accounts, 1)
        return typed("harvestWithheldTokensToMint", {"mint": accounts[0], "sourceAccounts": accounts[1:]})
    if sub == 5:
        basis_points, maximum = struct.unpack_from("<HQ", data, 2)
        need(accounts, 2)
        # "multisigtransferFeeConfigAuthority" (lower-case t) is the reference's spelling.
        return _with_signers("setTransferFee", {"mint": accounts[0], "transferFeeBasisPoints": basis_points, "maximumFee": maximum}, 1, accounts,
                             "transferFeeConfigAuthority", "multisigtransferFeeConfigAuthority")
    raise NotParsable


def _default_account_state(accounts, data):
    if len(data) != 3 or data[2] not in _STATES or data[1] > 1:
        raise NotParsable
    state = _STATES[data[2]]
    if data[1] == 0:
        need(accounts, 1)
        return typed("initializeDefaultAccountState", {"mint": accounts[0], "accountState": state})
    need(accounts, 2)
    return _with_signers("updateDefaultAccountState", {"mint": accounts[0], "accountState": state}, 1, accounts, "freezeAuthority", "multisigFreezeAuthority")


def _toggle(suffix: str):
    """Memo transfer and CPI guard: 0 enable, 1 disable, on an account by its owner."""
    def parse(accounts, data):
        need(accounts, 2)
        if len(data) < 2 or data[1] > 1:
            raise NotParsable
        verb = "enable" if data[1] == 0 else "disable"
        return _with_signers(f"{verb}{suffix}", {"account": accounts[0]}, 1, accounts, "owner", "multisigOwner")
    return parse


def _interest_bearing(accounts, data):
    if data[1] == 0:
        body = _pod(data, 34)
        need(accounts, 1)
        return typed("initializeInterestBearingConfig", {"mint": accounts[0], "rateAuthority": _nonzero(body[:32]), "rate": struct.unpack_from("<h", body, 32)[0]})
    if data[1] == 1:
        body = _pod(data, 2)
        need(accounts, 2)
        return _with_signers("updateInterestBearingConfigRate", {"mint": accounts[0], "newRate": struct.unpack("<h", body)[0]}, 1, accounts,
                             "rateAuthority", "multisigRateAuthority")
    raise NotParsable


def _pointer(name: str, address_key: str, field: str = "authority"):
    """Transfer hook and the metadata/group/member pointers: Initialize {authority,
    address} and Update {address}; absent (zero) keys are left out."""
    def parse(accounts, data):
        if data[1] == 0:
            body = _pod(data, 64)
            need(accounts, 1)
            info = {"mint": accounts[0]}
            authority, address = _nonzero(body[:32]), _nonzero(body[32:])
            if authority is not None:
                info[field] = authority
            if address is not None:
                info[address_key] = address
            return typed(f"initialize{name}", info)
        if data[1] == 1:
            body = _pod(data, 32)
            need(accounts, 2)
            info = {"mint": accounts[0]}
            address = _nonzero(body)
            if address is not None:
                info[address_key] = address
            return _with_signers(f"update{name}", info, 1, accounts, "authority", "multisigAuthority")
        raise NotParsable
    return parse


def _withdraw_excess_lamports(accounts, data):
    need(accounts, 3)
    return _with_signers("withdrawExcessLamports", {"source": accounts[0], "destination": accounts[1]}, 2, accounts, "authority", "multisigAuthority")


def _scaled_ui_amount(accounts, data):
    if data[1] == 0:
        body = _pod(data, 40)
        need(accounts, 1)
        return typed("initializeScaledUiAmountConfig", {"mint": accounts[0], "authority": _nonzero(body[:32]),
                                                        "multiplier": _float_string(struct.unpack_from("<d", body, 32)[0])})
    if data[1] == 1:
        body = _pod(data, 16)
        multiplier, timestamp = struct.unpack("<dq", body)
        need(accounts, 2)
        return _with_signers("updateMultiplier", {"mint": accounts[0], "newMultiplier": _float_string(multiplier), "newMultiplierTimestamp": timestamp}, 1, accounts,
                             "authority", "multisigAuthority")
    raise NotParsable


def _pausable(accounts, data):
    if data[1] == 0:
        body = _pod(data, 32)
        need(accounts, 1)
        return typed("initializePausableConfig", {"mint": accounts[0], "authority": _nonzero(body)})
    if data[1] in (1, 2):
        need(accounts, 2)
        return _with_signers("pause" if data[1] == 1 else "resume", {"mint": accounts[0]}, 1, accounts, "authority", "multisigAuthority")
    raise NotParsable


def _needs_sub(parse):
    """Extensions whose parser the reference calls only with a sub-instruction byte."""
    def guarded(accounts, data):
        if len(data) < 2:
            raise NotParsable
        return parse(accounts, data)
    return guarded


_BASE = {
    0: _initialize_mint("initializeMint", True),
    1: _initialize_account,
    2: _initialize_multisig,
    3: _amount("transfer", "source", "destination", "authority", "multisigAuthority"),
    4: _amount("approve", "source", "delegate", "owner", "multisigOwner"),
    5: _revoke,
    6: _set_authority,
    7: _amount("mintTo", "mint", "account", "mintAuthority", "multisigMintAuthority"),
    8: _amount("burn", "account", "mint", "authority", "multisigAuthority"),
    9: _two_accounts("closeAccount", "account", "destination", "owner", "multisigOwner"),
    10: _two_accounts("freezeAccount", "account", "mint", "freezeAuthority", "multisigFreezeAuthority"),
    11: _two_accounts("thawAccount", "account", "mint", "freezeAuthority", "multisigFreezeAuthority"),
    12: _checked("transferChecked", ("source", "mint", "destination"), "authority", "multisigAuthority"),
    13: _checked("approveChecked", ("source", "mint", "delegate"), "owner", "multisigOwner"),
    14: _checked("mintToChecked", ("mint", "account"), "mintAuthority", "multisigMintAuthority"),
    15: _checked("burnChecked", ("account", "mint"), "authority", "multisigAuthority"),
    16: _initialize_account2,
    17: _one_account("syncNative", "account"),
    18: _initialize_account3,
    19: _initialize_multisig2,
    20: _initialize_mint("initializeMint2", False),
    21: _get_account_data_size,
    22: _one_account("initializeImmutableOwner", "account"),
    23: _amount_to_ui_amount,
    24: _ui_amount_to_amount,
    25: _initialize_mint_close_authority,
    26: _needs_sub(_transfer_fee),
    28: _default_account_state,
    29: _reallocate,
    30: _toggle("RequiredMemoTransfers"),
    31: _create_native_mint,
    32: _one_account("initializeNonTransferableMint", "mint"),
    33: _needs_sub(_interest_bearing),
    34: _toggle("CpiGuard"),
    35: _initialize_permanent_delegate,
    36: _needs_sub(_pointer("TransferHook", "programId")),
    38: _withdraw_excess_lamports,
    39: _needs_sub(_pointer("MetadataPointer", "metadataAddress")),
    40: _needs_sub(_pointer("GroupPointer", "groupAddress")),
    41: _needs_sub(_pointer("GroupMemberPointer", "memberAddress")),
    43: _needs_sub(_scaled_ui_amount),
    44: _needs_sub(_pausable),
}


# --- the token-group and token-metadata interfaces ----------------------------------------------
_GROUP = {_discriminator(f"spl_token_group_interface:{name}"): name for name in ("initialize_token_group", "update_group_max_size", "update_authority", "initialize_member")}
_METADATA = {_discriminator(f"spl_token_metadata_interface:{name}"): name for name in ("initialize_account", "updating_field", "remove_key_ix", "update_the_authority", "emitter")}


def _group(accounts: list[str], data: bytes) -> dict | None:
    name = _GROUP.get(data[:8])
    if name is None:
        return None
    body = data[8:]
    if name == "initialize_token_group":
        if len(body) != 40:
            raise NotParsable
        need(accounts, 3)
        return typed("initializeTokenGroup", {"group": accounts[0], "maxSize": _u64(body, 32), "mint": accounts[1], "mintAuthority": accounts[2], "updateAuthority": _nonzero(body[:32])})
    if name == "update_group_max_size":
        if len(body) != 8:
            raise NotParsable
        need(accounts, 2)
        return typed("updateTokenGroupMaxSize", {"group": accounts[0], "maxSize": _u64(body, 0), "updateAuthority": accounts[1]})
    if name == "update_authority":
        if len(body) != 32:
            raise NotParsable
        need(accounts, 2)
        return typed("updateTokenGroupAuthority", {"group": accounts[0], "updateAuthority": accounts[1], "newAuthority": _nonzero(body)})
    if body:
        raise NotParsable
    need(accounts, 5)
    return typed("initializeTokenGroupMember", {"member": accounts[0], "memberMint": accounts[1], "memberMintAuthority": accounts[2], "group": accounts[3],
                                                "groupUpdateAuthority": accounts[4]})


class _Borsh:
    """Just enough borsh for the metadata interface; ``done()`` asserts every byte was read
    (try_from_slice)."""

    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise NotParsable
        self.at += n
        return self.data[self.at - n:self.at]

    def u8(self) -> int:
        return self.take(1)[0]

    def string(self) -> str:
        (length,) = struct.unpack("<I", self.take(4))
        return self.take(length).decode("utf-8")

    def option_u64(self) -> int | None:
        tag = self.u8()
        if tag > 1:
            raise NotParsable
        return struct.unpack("<Q", self.take(8))[0] if tag else None

    def done(self) -> None:
        if self.at != len(self.data):
            raise NotParsable


_FIELDS = ("name", "symbol", "uri")


def _metadata(accounts: list[str], data: bytes) -> dict | None:
    name = _METADATA.get(data[:8])
    if name is None:
        return None
    r = _Borsh(data[8:])
    if name == "initialize_account":
        info = {"name": r.string(), "symbol": r.string(), "uri": r.string()}
        r.done()
        need(accounts, 4)
        return typed("initializeTokenMetadata", {"metadata": accounts[0], "updateAuthority": accounts[1], "mint": accounts[2], "mintAuthority": accounts[3], **info})
    if name == "updating_field":
        variant = r.u8()
        if variant > 3:
            raise NotParsable
        field = _FIELDS[variant] if variant < 3 else r.string()
        value = r.string()
        r.done()
        need(accounts, 2)
        return typed("updateTokenMetadataField", {"metadata": accounts[0], "updateAuthority": accounts[1], "field": field, "value": value})
    if name == "remove_key_ix":
        idempotent = r.u8()
        if idempotent > 1:
            raise NotParsable
        key = r.string()
        r.done()
        need(accounts, 2)
        return typed("removeTokenMetadataKey", {"metadata": accounts[0], "updateAuthority": accounts[1], "key": key, "idempotent": bool(idempotent)})
    if name == "update_the_authority":
        new_authority = _nonzero(r.take(32))
        r.done()
        need(accounts, 2)
        return typed("updateTokenMetadataAuthority", {"metadata": accounts[0], "updateAuthority": accounts[1], "newAuthority": new_authority})
    start, end = r.option_u64(), r.option_u64()
    r.done()
    need(accounts, 1)
    info = {"metadata": accounts[0]}
    if start is not None:
        info["start"] = start
    if end is not None:
        info["end"] = end
    return typed("emitTokenMetadata", info)
