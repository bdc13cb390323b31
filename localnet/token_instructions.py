"""SPL Token and Token-2022 instructions in the reference's jsonParsed shapes
(solana-transaction-status parse_token.rs and parse_token/extension/*.rs).

Both programs are ``"spl-token"`` to the reference. The data is decoded as
spl-token-2022's TokenInstruction::unpack reads it: a u8 tag, then the fields, with a
COption<Pubkey> as one tag byte (0, or 1 and 32 bytes) and trailing bytes ignored. If the
tag is no token instruction, the data is tried as a token-group, then a token-metadata
interface instruction (8-byte discriminators). solana-py's construct layouts cover only
tags 0..24 and want the fixed-length option form, so the fields are read here with struct.

Extension instructions parsed (those with sub-instructions in token_extensions.py):
transfer fee, mint close authority, default account state, reallocate, memo transfer,
non-transferable, interest-bearing, CPI guard, permanent delegate, transfer hook, withdraw
excess lamports, metadata/group/group-member pointers, scaled UI amount, pausable, token
metadata and token group, and the confidential transfer and confidential mint/burn mint
initializations. The other confidential transfer, confidential fee and confidential
mint/burn instructions (zero-knowledge proof data) and the newest tags (45 and up, batch)
stay partially decoded.
"""

from __future__ import annotations

import struct

from .instruction_parts import NotParsable, need, typed
from .token_extensions import (
    confidential_mint_burn,
    confidential_transfer,
    coption,
    default_account_state,
    group,
    interest_bearing,
    metadata,
    needs_sub,
    pausable,
    pk,
    pointer,
    scaled_ui_amount,
    toggle,
    transfer_fee,
    u64,
    with_signers,
)
from .tokens import ui_amount

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
    parsed = group(accounts, data)
    if parsed is None:
        parsed = metadata(accounts, data)
    if parsed is None:
        raise NotParsable
    return parsed


# --- the base instructions ------------------------------------------------------------------
def _initialize_mint(kind: str, with_rent: bool):
    def parse(accounts, data):
        need(accounts, 2 if with_rent else 1)
        decimals, authority = data[1], pk(data[2:34])
        freeze, _ = coption(data, 34)
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
    return typed("initializeAccount2", {"account": accounts[0], "mint": accounts[1], "owner": pk(data[1:33]), "rentSysvar": accounts[2]})


def _initialize_account3(accounts, data):
    need(accounts, 2)
    return typed("initializeAccount3", {"account": accounts[0], "mint": accounts[1], "owner": pk(data[1:33])})


def _initialize_multisig(accounts, data):
    need(accounts, 3)
    return typed("initializeMultisig", {"multisig": accounts[0], "rentSysvar": accounts[1], "signers": accounts[2:], "m": data[1]})


def _initialize_multisig2(accounts, data):
    need(accounts, 2)
    return typed("initializeMultisig2", {"multisig": accounts[0], "signers": accounts[1:], "m": data[1]})


def _amount(kind: str, first: str, second: str, owner_name: str, multisig_name: str):
    """Transfer, Approve, MintTo, Burn: two accounts, a u64 amount (a string), the authority."""
    def parse(accounts, data):
        amount = u64(data, 1)
        need(accounts, 3)
        return with_signers(kind, {first: accounts[0], second: accounts[1], "amount": str(amount)}, 2, accounts, owner_name, multisig_name)
    return parse


def _checked(kind: str, names: tuple[str, ...], owner_name: str, multisig_name: str):
    """The *Checked variants: amount and decimals as a UiTokenAmount `tokenAmount`."""
    def parse(accounts, data):
        amount, decimals = u64(data, 1), data[9]
        need(accounts, len(names) + 1)
        info = dict(zip(names, accounts))
        info["tokenAmount"] = ui_amount(amount, decimals)
        return with_signers(kind, info, len(names), accounts, owner_name, multisig_name)
    return parse


def _revoke(accounts, data):
    need(accounts, 2)
    return with_signers("revoke", {"source": accounts[0]}, 1, accounts, "owner", "multisigOwner")


def _set_authority(accounts, data):
    need(accounts, 2)
    if data[1] >= len(AUTHORITY_TYPES):
        raise NotParsable
    kind = AUTHORITY_TYPES[data[1]]
    new_authority, _ = coption(data, 2)
    owned = "account" if kind in _ACCOUNT_AUTHORITIES else "mint"
    return with_signers("setAuthority", {owned: accounts[0], "authorityType": kind, "newAuthority": new_authority}, 1, accounts, "authority", "multisigAuthority")


def _two_accounts(kind: str, first: str, second: str, owner_name: str, multisig_name: str):
    def parse(accounts, data):
        need(accounts, 3)
        return with_signers(kind, {first: accounts[0], second: accounts[1]}, 2, accounts, owner_name, multisig_name)
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
    amount = u64(data, 1)
    need(accounts, 1)
    return typed("amountToUiAmount", {"mint": accounts[0], "amount": str(amount)})


def _ui_amount_to_amount(accounts, data):
    text = data[1:].decode("utf-8")
    need(accounts, 1)
    return typed("uiAmountToAmount", {"mint": accounts[0], "uiAmount": text})


def _initialize_mint_close_authority(accounts, data):
    authority, _ = coption(data, 1)
    need(accounts, 1)
    return typed("initializeMintCloseAuthority", {"mint": accounts[0], "newAuthority": authority})


def _reallocate(accounts, data):
    types = _extension_types(data[1:])
    need(accounts, 4)
    info = {"account": accounts[0], "payer": accounts[1], "systemProgram": accounts[2], "extensionTypes": types}
    return with_signers("reallocate", info, 3, accounts, "owner", "multisigOwner")


def _create_native_mint(accounts, data):
    need(accounts, 3)
    return typed("createNativeMint", {"payer": accounts[0], "nativeMint": accounts[1], "systemProgram": accounts[2]})


def _initialize_permanent_delegate(accounts, data):
    delegate = pk(data[1:33])
    need(accounts, 1)
    return typed("initializePermanentDelegate", {"mint": accounts[0], "delegate": delegate})


def _withdraw_excess_lamports(accounts, data):
    need(accounts, 3)
    return with_signers("withdrawExcessLamports", {"source": accounts[0], "destination": accounts[1]}, 2, accounts, "authority", "multisigAuthority")


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
    26: needs_sub(transfer_fee),
    27: needs_sub(confidential_transfer),
    28: default_account_state,
    29: _reallocate,
    30: toggle("RequiredMemoTransfers"),
    31: _create_native_mint,
    32: _one_account("initializeNonTransferableMint", "mint"),
    33: needs_sub(interest_bearing),
    34: toggle("CpiGuard"),
    35: _initialize_permanent_delegate,
    36: needs_sub(pointer("TransferHook", "programId")),
    38: _withdraw_excess_lamports,
    39: needs_sub(pointer("MetadataPointer", "metadataAddress")),
    40: needs_sub(pointer("GroupPointer", "groupAddress")),
    41: needs_sub(pointer("GroupMemberPointer", "memberAddress")),
    42: needs_sub(confidential_mint_burn),
    43: needs_sub(scaled_ui_amount),
    44: needs_sub(pausable),
}
