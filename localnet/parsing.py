"""`jsonParsed` account data in the reference's shapes (solana-account-decoder).

The kinds the reference parses that exist on this node: durable nonces (System program),
SPL Token and Token-2022 accounts, mints and multisigs (Token-2022 extensions included),
address lookup tables, and the Clock, Rent and EpochSchedule sysvars. Stake, vote, config
and BPF-loader accounts do not occur here. Anything that does not parse falls back to
base64, as the reference falls back.
"""

from __future__ import annotations

import struct
from typing import Callable

from solders.hash import Hash
from solders.pubkey import Pubkey
from solders.token.state import Mint, TokenAccount

from . import tokens

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")
LOOKUP_TABLE_PROGRAM = Pubkey.from_string("AddressLookupTab1e1111111111111111111111111")
SYSVAR_PROGRAM = Pubkey.from_string("Sysvar1111111111111111111111111111111111111")
NATIVE_MINT = Pubkey.from_string("So11111111111111111111111111111111111111112")
SYSVAR_CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")
SYSVAR_RENT = Pubkey.from_string("SysvarRent111111111111111111111111111111111")
SYSVAR_EPOCH_SCHEDULE = Pubkey.from_string("SysvarEpochSchedu1e111111111111111111111111")
MULTISIG_SIZE = 355
LOOKUP_TABLE_META_SIZE = 56
_STATES = {0: "uninitialized", 1: "initialized", 2: "frozen"}

GetAccount = Callable[[Pubkey], object]


class NotParsable(Exception):
    pass


def parse_account(pubkey: Pubkey, acc, get_account: GetAccount) -> dict | None:
    """{"program", "parsed", "space"} for an account the reference parses, else None."""
    data = bytes(acc.data)
    try:
        if acc.owner == SYSTEM_PROGRAM:
            program, parsed = "nonce", _nonce(data)
        elif acc.owner in tokens.TOKEN_PROGRAMS:
            program, parsed = ("spl-token" if acc.owner == tokens.TOKEN_PROGRAM else "spl-token-2022"), _token(acc, data, get_account)
        elif acc.owner == LOOKUP_TABLE_PROGRAM:
            program, parsed = "address-lookup-table", _lookup_table(data)
        elif acc.owner == SYSVAR_PROGRAM:
            program, parsed = "sysvar", _sysvar(pubkey, data)
        else:
            return None
    except (NotParsable, struct.error, IndexError, ValueError, UnicodeDecodeError):
        return None
    return {"program": program, "parsed": parsed, "space": len(data)}


def _pk(raw: bytes) -> str:
    return str(Pubkey(bytes(raw)))


def _optional_pk(raw: bytes) -> str | None:
    """An OptionalNonZeroPubkey (Token-2022 extensions): all zeros is None."""
    return None if raw == bytes(32) else _pk(raw)


def _optional(key: Pubkey | None) -> str | None:
    return str(key) if key is not None else None


def _nonce(data: bytes) -> dict:
    # Versions (u32), State (u32: 1 initialized), authority, durable nonce, lamports/signature.
    # An uninitialized nonce does not parse (the reference refuses it: any zeroed system
    # account of 80 bytes would otherwise read as one).
    if len(data) != 80 or struct.unpack_from("<I", data, 4)[0] != 1:
        raise NotParsable
    return {"type": "initialized", "info": {
        "authority": _pk(data[8:40]),
        "blockhash": str(Hash(data[40:72])),
        "feeCalculator": {"lamportsPerSignature": str(struct.unpack_from("<Q", data, 72)[0])},
    }}


def _lookup_table(data: bytes) -> dict:
    if len(data) < LOOKUP_TABLE_META_SIZE:
        raise NotParsable
    kind = struct.unpack_from("<I", data, 0)[0]
    if kind == 0:
        return {"type": "uninitialized"}
    if kind != 1 or (len(data) - LOOKUP_TABLE_META_SIZE) % 32:
        raise NotParsable
    deactivation, extended = struct.unpack_from("<QQ", data, 4)
    info = {"deactivationSlot": str(deactivation), "lastExtendedSlot": str(extended), "lastExtendedSlotStartIndex": data[20]}
    if data[21]:
        info["authority"] = _pk(data[22:54])
    info["addresses"] = [_pk(data[i:i + 32]) for i in range(LOOKUP_TABLE_META_SIZE, len(data), 32)]
    return {"type": "lookupTable", "info": info}


def _sysvar(pubkey: Pubkey, data: bytes) -> dict:
    if pubkey == SYSVAR_CLOCK:
        slot, epoch_start, epoch, leader_epoch, unix = struct.unpack_from("<QqQQq", data)
        return {"type": "clock", "info": {"slot": slot, "epoch": epoch, "epochStartTimestamp": epoch_start, "leaderScheduleEpoch": leader_epoch, "unixTimestamp": unix}}
    if pubkey == SYSVAR_RENT:
        per_byte_year, threshold, burn = struct.unpack_from("<QdB", data)
        return {"type": "rent", "info": {"lamportsPerByteYear": str(per_byte_year), "exemptionThreshold": threshold, "burnPercent": burn}}
    if pubkey == SYSVAR_EPOCH_SCHEDULE:
        slots, offset, warmup, first_epoch, first_slot = struct.unpack_from("<QQ?QQ", data)
        return {"type": "epochSchedule", "info": {"slotsPerEpoch": slots, "leaderScheduleSlotOffset": offset, "warmup": warmup, "firstNormalEpoch": first_epoch, "firstNormalSlot": first_slot}}
    raise NotParsable


# --- SPL Token and Token-2022 ----------------------------------------------------------------
def mint_decimals(mint: Pubkey, get_account: GetAccount) -> int | None:
    """A mint's decimals (the native mint's without reading it), None when it is missing."""
    if mint == NATIVE_MINT:
        return 9
    acc = get_account(mint)
    if not tokens.is_mint(acc):
        return None
    return acc.data[44]


def _token(acc, data: bytes, get_account: GetAccount) -> dict:
    """The base account and mint are solders' (SPL Token's own unpacking, as the reference
    parses them): one that is not initialized is not parsable, and the answer falls back
    to base64 as the reference's does."""
    is_2022 = acc.owner == tokens.TOKEN_2022_PROGRAM
    if tokens.is_token_account(acc):
        try:
            base = TokenAccount.from_bytes(bytes(data[:tokens.ACCOUNT_SIZE]))
        except ValueError:
            raise NotParsable from None
        decimals = mint_decimals(base.mint, get_account)
        if decimals is None:  # the reference needs the mint's decimals, else no parse
            raise NotParsable
        info: dict = {"isNative": False, "mint": str(base.mint), "owner": str(base.owner), "state": _STATES[int(base.state)],
                      "tokenAmount": tokens.ui_amount(base.amount, decimals)}
        if base.delegate is not None:
            info["delegate"] = str(base.delegate)
            info["delegatedAmount"] = tokens.ui_amount(base.delegated_amount, decimals)
        if base.is_native is not None:
            info["isNative"] = True
            info["rentExemptReserve"] = tokens.ui_amount(base.is_native, decimals)
        if base.close_authority is not None:
            info["closeAuthority"] = str(base.close_authority)
        extensions = _extensions(data) if is_2022 else []
        if extensions:
            info["extensions"] = extensions
        return {"type": "account", "info": info}
    if tokens.is_mint(acc):
        try:
            base = Mint.from_bytes(bytes(data[:tokens.MINT_SIZE]))
        except ValueError:
            raise NotParsable from None
        info = {"mintAuthority": _optional(base.mint_authority), "supply": str(base.supply), "decimals": base.decimals, "isInitialized": base.is_initialized,
                "freezeAuthority": _optional(base.freeze_authority)}
        extensions = _extensions(data) if is_2022 else []
        if extensions:
            info["extensions"] = extensions
        return {"type": "mint", "info": info}
    if len(data) == MULTISIG_SIZE:
        signers = [_pk(data[3 + 32 * i:35 + 32 * i]) for i in range(11) if data[3 + 32 * i:35 + 32 * i] != bytes(32)]
        return {"type": "multisig", "info": {"numRequiredSigners": data[0], "numValidSigners": data[1], "isInitialized": bool(data[2]), "signers": signers}}
    raise NotParsable


def _borsh_str(data: bytes, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<I", data, offset)
    start = offset + 4
    if start + length > len(data):
        raise NotParsable
    return data[start:start + length].decode(), start + length


def _token_metadata(v: bytes) -> dict:
    name, offset = _borsh_str(v, 64)
    symbol, offset = _borsh_str(v, offset)
    uri, offset = _borsh_str(v, offset)
    (count,) = struct.unpack_from("<I", v, offset)
    offset += 4
    additional = []
    for _ in range(count):
        key, offset = _borsh_str(v, offset)
        value, offset = _borsh_str(v, offset)
        additional.append([key, value])
    return {"updateAuthority": _optional_pk(v[0:32]), "mint": _pk(v[32:64]), "name": name, "symbol": symbol, "uri": uri, "additionalMetadata": additional}


def _transfer_fee(v: bytes, offset: int) -> dict:
    epoch, maximum, basis_points = struct.unpack_from("<QQH", v, offset)
    return {"epoch": epoch, "maximumFee": maximum, "transferFeeBasisPoints": basis_points}


def _float_string(value: float) -> str:
    """An f64 as Rust's Display writes it: the shortest round-trip digits, no exponent and
    no trailing ".0" ("1", "1.5", "100000000000000000000")."""
    from decimal import Decimal

    text = format(Decimal(repr(float(value))), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


# ExtensionType number → (the reference's UiExtension name, decoder of its state; None for a
# unit variant). The confidential-transfer account, fee and mint-burn extensions (5, 16, 17,
# 24: ElGamal ciphertexts) are listed as "unparseableExtension".
_EXTENSIONS: dict[int, tuple[str, Callable[[bytes], dict] | None]] = {
    1: ("transferFeeConfig", lambda v: {"transferFeeConfigAuthority": _optional_pk(v[0:32]), "withdrawWithheldAuthority": _optional_pk(v[32:64]),
                                        "withheldAmount": struct.unpack_from("<Q", v, 64)[0], "olderTransferFee": _transfer_fee(v, 72), "newerTransferFee": _transfer_fee(v, 90)}),
    2: ("transferFeeAmount", lambda v: {"withheldAmount": struct.unpack_from("<Q", v, 0)[0]}),
    3: ("mintCloseAuthority", lambda v: {"closeAuthority": _optional_pk(v[0:32])}),
    4: ("confidentialTransferMint", lambda v: {"authority": _optional_pk(v[0:32]), "autoApproveNewAccounts": bool(v[32]), "auditorElgamalPubkey": None if v[33:65] == bytes(32) else _b64(v[33:65])}),
    6: ("defaultAccountState", lambda v: {"accountState": _STATES[v[0]]}),
    7: ("immutableOwner", None),
    8: ("memoTransfer", lambda v: {"requireIncomingTransferMemos": bool(v[0])}),
    9: ("nonTransferable", None),
    10: ("interestBearingConfig", lambda v: dict(zip(("rateAuthority", "initializationTimestamp", "preUpdateAverageRate", "lastUpdateTimestamp", "currentRate"),
                                                   (_optional_pk(v[0:32]), *struct.unpack_from("<qhqh", v, 32))))),
    11: ("cpiGuard", lambda v: {"lockCpi": bool(v[0])}),
    12: ("permanentDelegate", lambda v: {"delegate": _optional_pk(v[0:32])}),
    13: ("nonTransferableAccount", None),
    14: ("transferHook", lambda v: {"authority": _optional_pk(v[0:32]), "programId": _optional_pk(v[32:64])}),
    15: ("transferHookAccount", lambda v: {"transferring": bool(v[0])}),
    18: ("metadataPointer", lambda v: {"authority": _optional_pk(v[0:32]), "metadataAddress": _optional_pk(v[32:64])}),
    19: ("tokenMetadata", _token_metadata),
    20: ("groupPointer", lambda v: {"authority": _optional_pk(v[0:32]), "groupAddress": _optional_pk(v[32:64])}),
    21: ("tokenGroup", lambda v: {"updateAuthority": _optional_pk(v[0:32]), "mint": _pk(v[32:64]), "size": struct.unpack_from("<Q", v, 64)[0], "maxSize": struct.unpack_from("<Q", v, 72)[0]}),
    22: ("groupMemberPointer", lambda v: {"authority": _optional_pk(v[0:32]), "memberAddress": _optional_pk(v[32:64])}),
    23: ("tokenGroupMember", lambda v: {"mint": _pk(v[0:32]), "group": _pk(v[32:64]), "memberNumber": struct.unpack_from("<Q", v, 64)[0]}),
    25: ("scaledUiAmountConfig", lambda v: {"authority": _optional_pk(v[0:32]), "multiplier": _float_string(struct.unpack_from("<d", v, 32)[0]),
                                            "newMultiplierEffectiveTimestamp": struct.unpack_from("<q", v, 40)[0], "newMultiplier": _float_string(struct.unpack_from("<d", v, 48)[0])}),
    26: ("pausableConfig", lambda v: {"authority": _optional_pk(v[0:32]), "paused": bool(v[32])}),
    27: ("pausableAccount", None),
}


def _extensions(data: bytes) -> list[dict]:
    """Token-2022 TLV entries after the 165-byte base and the account-type byte."""
    out: list[dict] = []
    offset = 166
    while offset + 4 <= len(data):
        kind, length = struct.unpack_from("<HH", data, offset)
        value = data[offset + 4:offset + 4 + length]
        offset += 4 + length
        if kind == 0:
            break  # Uninitialized: the zero padding after the last entry
        name, decode = _EXTENSIONS.get(kind, ("unparseableExtension", None))
        if decode is None:
            out.append({"extension": name})
            continue
        try:
            out.append({"extension": name, "state": decode(value)})
        except (struct.error, IndexError, KeyError, ValueError, UnicodeDecodeError, NotParsable):
            out.append({"extension": "unparseableExtension"})
    return out
