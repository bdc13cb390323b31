"""Mint account size for a set of extensions and metadata (the calculator).

Token-2022 sizes a mint with extensions as: 165 (base mint padded to a token account) +
1 (account type) + Σ (4-byte TLV header + value). Variable-length token metadata is
appended by the program itself (it reallocates on initialize/update), so the account is
*created* with the fixed part and *funded* for the full size.
"""

from __future__ import annotations

from .constants import ACCOUNT_SIZE, FIXED_SIZES, MINT_SIZE, TLV_HEADER, ExtensionType


def token_metadata_size(*, name: str = "", symbol: str = "", uri: str = "", additional: dict[str, str] | None = None) -> int:
    """Value size of the TokenMetadata TLV entry (borsh): authority, mint, strings, pairs."""
    size = 32 + 32 + (4 + len(name.encode())) + (4 + len(symbol.encode())) + (4 + len(uri.encode())) + 4
    for key, value in (additional or {}).items():
        size += 4 + len(key.encode()) + 4 + len(value.encode())
    return size


def mint_space(extensions: set[ExtensionType]) -> int:
    """Bytes to allocate at creation (fixed-size extensions only)."""
    fixed = [e for e in extensions if e != ExtensionType.TOKEN_METADATA]
    if not fixed and ExtensionType.TOKEN_METADATA not in extensions:
        return MINT_SIZE
    return ACCOUNT_SIZE + 1 + sum(TLV_HEADER + FIXED_SIZES[e] for e in fixed)


def mint_size(extensions: set[ExtensionType], metadata: dict | None = None) -> int:
    """Final size of the mint account, token metadata included."""
    size = mint_space(extensions)
    if ExtensionType.TOKEN_METADATA in extensions:
        size += TLV_HEADER + token_metadata_size(**(metadata or {}))
    return size
