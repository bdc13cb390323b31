"""Token-2022 extension rules of the financial instruments area, pure (no records, no
network): which extensions a Create body asks for, token metadata sizing, the Token
Extensions Calculator, and the checks of extension settings (docs/instruments.md,
"Extensions follow from the fields")."""

from __future__ import annotations

import base64
import math
import sys

from ledger_project.api.errors import LedgerError

from .models import TokenVersion
from .token2022.constants import API_EXTENSIONS, ExtensionType
from .token2022.sizes import mint_size

#: Fields that imply a Token-2022 extension (docs/instruments.md, "Extensions follow from the fields").
EXTENSION_FIELDS = {
    "permanentDelegateAuthority": "PERMANENT_DELEGATE", "closingAuthority": "MINT_CLOSE_AUTHORITY", "pausableAuthority": "PAUSABLE",
    "scaledUiAmountAuthority": "SCALED_UI_AMOUNT", "scaledUiAmountMultiplier": "SCALED_UI_AMOUNT",
    "transferHookAuthority": "TRANSFER_HOOK", "transferHookProgram": "TRANSFER_HOOK",
    "confidentialTransfer": "CONFIDENTIAL_TRANSFER", "confidentialTransferAuthority": "CONFIDENTIAL_TRANSFER",
    "confidentialMintBurn": "CONFIDENTIAL_MINT_BURN", "confidentialMintBurnAuthority": "CONFIDENTIAL_MINT_BURN",
}

#: the smallest multiplier Token-2022 takes: it refuses zero, negatives, infinities and
#: subnormal doubles (InvalidScale), so positive normal doubles only (the OpenAPI's minimum)
MIN_MULTIPLIER = sys.float_info.min


def multiplier_of(value: float, field: str) -> float:
    if not math.isfinite(value) or value < MIN_MULTIPLIER:
        raise LedgerError(f"scaledUiAmountMultiplier must be a positive normal number (at least {MIN_MULTIPLIER!r}).", field=field, code="OUT_OF_RANGE")
    return float(value)


def b64_of(value: str, size: int, field: str) -> bytes:
    try:
        raw = base64.b64decode(value, validate=True)
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != size:
        raise LedgerError(f"Must be {size} bytes, base64-encoded.", field=field, code="INVALID")
    return raw


def requested_extensions(data: dict, version: str, prefix: str = "itemData") -> list[str]:
    """The Token-2022 extensions a Create body asks for, in the calculator's spelling."""
    onchain = data.get("onchainData") or {}
    wants: dict[str, str] = {}
    for name, extension in EXTENSION_FIELDS.items():
        if data.get(name) is not None:
            wants.setdefault(extension, name)
    if data.get("defaultPositionState") is not None:
        wants.setdefault("DEFAULT_ACCOUNT_STATE", "defaultPositionState")
    if version == TokenVersion.SPL:
        if onchain.get("simpleCustomMetadata"):
            raise LedgerError("SPL mints carry no onchain metadata; use TOKEN_2022 for simpleCustomMetadata.", field=f"{prefix}.onchainData.simpleCustomMetadata", code="SPL_NO_EXTENSIONS")
        if wants:
            extension, name = next(iter(wants.items()))
            raise LedgerError(f"{name} needs the Token-2022 {extension} extension; SPL mints have no extensions (an SPL freeze authority freezes positions one by one).", field=f"{prefix}.{name}", code="SPL_NO_EXTENSIONS")
        return []
    if onchain.get("name") or onchain.get("symbol") or onchain.get("uri") or onchain.get("simpleCustomMetadata"):
        wants.setdefault("METADATA_POINTER", "onchainData")
        wants.setdefault("TOKEN_METADATA", "onchainData")
    if "CONFIDENTIAL_MINT_BURN" in wants and "CONFIDENTIAL_TRANSFER" not in wants:
        raise LedgerError("Confidential mint and burn requires confidentialTransfer.", field=f"{prefix}.confidentialMintBurn", code="EXTENSION_REQUIRES")
    return sorted(wants)


def metadata_of(onchain: dict) -> dict:
    """onchainData → the token metadata sizing/creation fields."""
    return {"name": onchain.get("name") or "", "symbol": onchain.get("symbol") or "", "uri": onchain.get("uri") or "",
            "additional": {k: v for k, v in (onchain.get("simpleCustomMetadata") or {}).items() if v is not None}}


def calculate(extensions: list[str], metadata: dict | None) -> int:
    """Token Extensions Calculator: the mint account size for these extensions and metadata
    (``metadata``: the calculator's {name, symbol, uri, simpleCustomMetadata})."""
    if "TOKEN_METADATA" in extensions and "METADATA_POINTER" not in extensions:
        raise LedgerError("TOKEN_METADATA requires METADATA_POINTER (pointing at the mint itself).", field="extensions", code="EXTENSION_REQUIRES")
    if "CONFIDENTIAL_MINT_BURN" in extensions and "CONFIDENTIAL_TRANSFER" not in extensions:
        raise LedgerError("CONFIDENTIAL_MINT_BURN requires CONFIDENTIAL_TRANSFER.", field="extensions", code="EXTENSION_REQUIRES")
    if metadata and "TOKEN_METADATA" not in extensions:
        raise LedgerError("metadata is stored by the TOKEN_METADATA extension; add it to extensions.", field="metadata", code="EXTENSION_REQUIRES")
    types = {API_EXTENSIONS[e] for e in extensions}
    return mint_size(types, metadata_of(metadata or {}) if ExtensionType.TOKEN_METADATA in types else None)
