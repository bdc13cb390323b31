"""Decode a Token-2022 mint account: the base mint and every extension's state.

Layout: 82-byte base mint (read by solders), zero padding to 165, one account-type byte (1 = mint), then
TLV entries (u16 type, u16 length, value) until the data ends or a zero type appears.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from solders.pubkey import Pubkey
from solders.token.state import Mint

from .constants import ACCOUNT_SIZE, ACCOUNT_TYPE_MINT, MINT_SIZE, TLV_HEADER, AccountState, ExtensionType


def _pk(raw: bytes) -> str | None:
    return None if raw == bytes(32) else str(Pubkey(raw))


def _borsh_str(data: bytes, offset: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<I", data, offset)
    start = offset + 4
    return data[start:start + length].decode(), start + length


@dataclass
class DecodedMint:
    mint_authority: str | None
    supply: int
    decimals: int
    is_initialized: bool
    freeze_authority: str | None
    extensions: dict[str, dict] = field(default_factory=dict)
    data_length: int = 0


def decode_token_metadata(value: bytes) -> dict:
    update_authority, mint = _pk(value[0:32]), str(Pubkey(value[32:64]))
    name, offset = _borsh_str(value, 64)
    symbol, offset = _borsh_str(value, offset)
    uri, offset = _borsh_str(value, offset)
    (count,) = struct.unpack_from("<I", value, offset)
    offset += 4
    additional = {}
    for _ in range(count):
        key, offset = _borsh_str(value, offset)
        val, offset = _borsh_str(value, offset)
        additional[key] = val
    return {"updateAuthority": update_authority, "mint": mint, "name": name, "symbol": symbol, "uri": uri, "additionalMetadata": additional}


_DECODERS = {
    ExtensionType.MINT_CLOSE_AUTHORITY: lambda v: {"closeAuthority": _pk(v[0:32])},
    ExtensionType.PERMANENT_DELEGATE: lambda v: {"delegate": _pk(v[0:32])},
    ExtensionType.DEFAULT_ACCOUNT_STATE: lambda v: {"state": AccountState(v[0]).name},
    ExtensionType.METADATA_POINTER: lambda v: {"authority": _pk(v[0:32]), "metadataAddress": _pk(v[32:64])},
    ExtensionType.TRANSFER_HOOK: lambda v: {"authority": _pk(v[0:32]), "programId": _pk(v[32:64])},
    ExtensionType.PAUSABLE: lambda v: {"authority": _pk(v[0:32]), "paused": bool(v[32])},
    ExtensionType.SCALED_UI_AMOUNT: lambda v: {
        "authority": _pk(v[0:32]),
        "multiplier": struct.unpack_from("<d", v, 32)[0],
        "newMultiplierEffectiveTimestamp": struct.unpack_from("<q", v, 40)[0],
        "newMultiplier": struct.unpack_from("<d", v, 48)[0],
    },
    ExtensionType.CONFIDENTIAL_TRANSFER_MINT: lambda v: {"authority": _pk(v[0:32]), "autoApproveNewAccounts": bool(v[32]), "auditorElgamalPubkey": v[33:65].hex() if v[33:65] != bytes(32) else None},
    ExtensionType.CONFIDENTIAL_MINT_BURN: lambda v: {"supplyElgamalPubkey": v[100:132].hex()},
    ExtensionType.TOKEN_METADATA: decode_token_metadata,
}


def decode_mint(data: bytes) -> DecodedMint:
    """The mint and its extensions; ValueError when the data is not an initialized mint. The
    base mint is SPL Token's own layout, read by solders (``solders.token.state.Mint``: the
    same for both programs); the extensions' TLV entries, which solders does not read, here."""
    data = bytes(data)
    if len(data) < MINT_SIZE:
        raise ValueError(f"not a mint: {len(data)} bytes")
    base = Mint.from_bytes(data[:MINT_SIZE])  # ValueError: not initialized, or not a mint
    mint = DecodedMint(
        mint_authority=str(base.mint_authority) if base.mint_authority is not None else None,
        supply=base.supply,
        decimals=base.decimals,
        is_initialized=base.is_initialized,
        freeze_authority=str(base.freeze_authority) if base.freeze_authority is not None else None,
        data_length=len(data),
    )
    if len(data) <= MINT_SIZE:
        return mint
    if len(data) <= ACCOUNT_SIZE or data[ACCOUNT_SIZE] != ACCOUNT_TYPE_MINT:
        raise ValueError("not a Token-2022 mint with extensions")
    offset = ACCOUNT_SIZE + 1
    while offset + TLV_HEADER <= len(data):
        ext_type, length = struct.unpack_from("<HH", data, offset)
        if ext_type == 0:
            break
        value = data[offset + TLV_HEADER: offset + TLV_HEADER + length]
        try:
            kind = ExtensionType(ext_type)
        except ValueError:
            kind = None
        name = kind.name if kind is not None else f"UNKNOWN_{ext_type}"
        decoder = _DECODERS.get(kind)
        mint.extensions[name] = decoder(value) if decoder else {"raw": value.hex()}
        offset += TLV_HEADER + length
    return mint
