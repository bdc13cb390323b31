"""Token accounts as the network holds them (SPL Token and Token-2022 share the base
layout: mint 32, owner 32, amount u64, delegate COption<Pubkey> 36, state u8, is_native
COption<u64> 12, delegated_amount u64, close_authority COption<Pubkey> 36 = 165 bytes)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from solders.pubkey import Pubkey


@dataclass(frozen=True)
class TokenAccountState:
    mint: str
    owner: str
    amount: int
    delegate: str | None
    frozen: bool
    delegated_amount: int
    close_authority: str | None


def decode_token_account(data: bytes) -> TokenAccountState:
    if len(data) < 165:
        raise ValueError("not a token account")
    mint, owner = str(Pubkey.from_bytes(data[0:32])), str(Pubkey.from_bytes(data[32:64]))
    (amount,) = struct.unpack_from("<Q", data, 64)
    (has_delegate,) = struct.unpack_from("<I", data, 72)
    delegate = str(Pubkey.from_bytes(data[76:108])) if has_delegate else None
    state = data[108]
    (delegated_amount,) = struct.unpack_from("<Q", data, 121)
    (has_close,) = struct.unpack_from("<I", data, 129)
    close_authority = str(Pubkey.from_bytes(data[133:165])) if has_close else None
    return TokenAccountState(mint, owner, amount, delegate, state == 2, delegated_amount, close_authority)
